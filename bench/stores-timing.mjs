// One store's timings, self-contained (no imports) so the same function runs in Node, in a
// page (passed as source) and inside workerd (bundled by wrangler): save and load of a large
// value and of a 2 MB one, each repeated; then 1,000 values of 1 KiB saved and loaded one
// after another, and read back with one loadRange. Every load is checked against what was
// saved, so a fast wrong store cannot post a number. Returns raw milliseconds per repetition.
export async function timeStore(store, { largeBytes = 50 * 1024 * 1024, largeReps = 5, mediumReps = 9, small = 1000 } = {}) {
  const now = () => globalThis.performance?.now() ?? Date.now();
  const fill = (length, seed) => {
    const out = new Uint8Array(length);
    let x = seed * 2654435761 >>> 0 || 1;
    for (let i = 0; i < length; i += 4096) { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; out[i] = x; }
    return out;
  };
  const same = (a, b) => {
    if (!(a instanceof Uint8Array) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i += 4096) if (a[i] !== b[i]) return false;
    return a[a.length - 1] === b[b.length - 1];
  };
  const roundTrips = async (bytes, reps, name) => {
    const save = [];
    const load = [];
    for (let r = 0; r < reps; r++) {
      const value = fill(bytes, r + 1);
      let t = now();
      await store.save(["bench", name], value);
      save.push(now() - t);
      t = now();
      const back = await store.load(["bench", name]);
      load.push(now() - t);
      if (!same(back, value)) throw new Error(`${name}: the value loaded is not the value saved`);
    }
    await store.remove(["bench", name]);
    return { bytes, save, load };
  };
  const large = await roundTrips(largeBytes, largeReps, "large");
  const medium = await roundTrips(2 * 1024 * 1024, mediumReps, "medium");
  const value = fill(1024, 7);
  let t = now();
  for (let i = 0; i < small; i++) await store.save(["bench", "small", String(i)], value);
  const smallSave = now() - t;
  t = now();
  for (let i = 0; i < small; i++) if (!same(await store.load(["bench", "small", String(i)]), value)) throw new Error("small: wrong value");
  const smallLoad = now() - t;
  t = now();
  const range = await store.loadRange(["bench", "small"]);
  const smallRange = now() - t;
  if (range.length !== small) throw new Error(`loadRange returned ${range.length} of ${small}`);
  await store.removeRange(["bench"]);
  return { large, medium, small: { count: small, saveMs: smallSave, loadMs: smallLoad, loadRangeMs: smallRange } };
}
