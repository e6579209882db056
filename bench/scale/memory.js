// Imported before the package by bench/scale/worker.js: wraps WebAssembly.Instance so the
// Worker can read the linear memory of every wasm instance the package creates (the package
// does not export its memory). Wasm memory never shrinks: its byte length is the high-water
// mark of the isolate's wasm heap.
export const instances = [];
const Instance = WebAssembly.Instance;
WebAssembly.Instance = function (module, imports) {
  const instance = new Instance(module, imports);
  instances.push(instance);
  return instance;
};
WebAssembly.Instance.prototype = Instance.prototype;

/** Bytes of linear memory of every instance created so far. */
export const wasmBytes = () => instances.reduce((sum, i) => sum + (i.exports.memory?.buffer.byteLength ?? 0), 0);
