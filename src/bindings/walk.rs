//! Reads JS values as the JSON that `JSON.stringify` would make of them, by walking the object
//! graph: no JSON text is written or parsed on the way in.
//!
//! Why a walk: `JSON.stringify` of a 2 MB conversation alone costs about a fifth of counting
//! its tokens, and parsing the text costs as much again; the walk reads every string once, into
//! the `Value` it builds, and can skip whole messages that [`Snapshot`] shows unchanged.
//!
//! How strings cross: the keys and short strings are pushed onto one JS array as the walk meets
//! them and copied into wasm memory at the end as one string ([`Walker::finish`]); each long
//! string is copied on its own by `TextEncoder.encodeInto` ([`encode`]); [`read_skimmed`] and
//! [`read_item_skimmed`] copy only the start of long texts, for checks that look at no more.
//! A message list is read one message at a time, by the one list reader (`bindings/list.rs`).
//!
//! What it reads is what the provider receives, because the SDKs send `JSON.stringify(body)`:
//! a property holding `undefined`, a function or a symbol is absent (`null` in an array); an
//! object's `toJSON()` result stands for it (a `Date` is its ISO string); a non-finite number
//! is `null`; a lone UTF-16 surrogate reads as U+FFFD. A `BigInt`, a cycle or nesting deeper
//! than [`MAX_DEPTH`] is an error naming the place, never a stack overflow inside wasm.
//! Not followed: boxed primitives (`new String("x")` reads as an object of its indices), which
//! no SDK puts in a message.

use js_sys::{Array, JsString, Object, Reflect, Uint8Array};
use serde_json::{Map, Number, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// How deep a value may nest: serde_json's limit for JSON text, so both readings agree.
pub const MAX_DEPTH: usize = 128;

/// From this depth on, each object is looked for among its ancestors, so that a cycle is
/// reported as one rather than as nesting too deep. Shallower objects skip the search.
const CYCLE_CHECK_DEPTH: usize = 32;

/// Why a value cannot be read as JSON, and where.
#[derive(Debug)]
pub struct WalkError {
    /// The path's segments, innermost first (`.content`, `[3]`).
    segments: Vec<String>,
    pub reason: String,
}

/// Paths longer than this many segments are shortened in the middle.
const MAX_SEGMENTS: usize = 12;

impl WalkError {
    fn new(reason: impl Into<String>) -> WalkError {
        WalkError {
            segments: Vec::new(),
            reason: reason.into(),
        }
    }

    /// The place, relative to the value walked: `[0].content[3].data`; a path deeper than
    /// [`MAX_SEGMENTS`] keeps its outer and inner ends around `…`.
    pub fn path(&self) -> String {
        let outer = self.segments.iter().rev();
        if self.segments.len() <= MAX_SEGMENTS {
            return outer.map(String::as_str).collect();
        }
        let head: String = outer.take(MAX_SEGMENTS - 2).map(String::as_str).collect();
        let tail = self.segments.iter().take(2).rev().map(String::as_str);
        format!("{head}…{}", tail.collect::<String>())
    }

    fn under_key(mut self, key: &str) -> WalkError {
        let plain = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
            && !key.starts_with(|c: char| c.is_ascii_digit());
        self.segments.push(if plain {
            format!(".{key}")
        } else {
            format!("[{}]", Value::String(key.to_owned()))
        });
        self
    }

    fn under_index(mut self, index: u32) -> WalkError {
        self.segments.push(format!("[{index}]"));
        self
    }
}

thread_local! {
    static TO_JSON: JsValue = JsValue::from_str("toJSON");
    /// The marks of [`Snapshot`]s: one object per (kind, size), made when first needed.
    static MARKS: std::cell::RefCell<Vec<[Option<JsValue>; 2]>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Objects and arrays of more entries than this are not snapshotted (their message is read
/// afresh each time), which bounds the marks kept.
const MAX_MARKED: u32 = 256;

/// The mark of an object (`array` false) or array of `size` entries in a [`Snapshot`]: an
/// object of ours, `{ a: array, n: size }`, which no key or leaf can be `Object.is` to; `None`
/// past [`MAX_MARKED`].
fn mark(array: bool, size: u32) -> Option<JsValue> {
    if size >= MAX_MARKED {
        return None;
    }
    MARKS.with(|marks| {
        let mut marks = marks.borrow_mut();
        if marks.len() <= size as usize {
            marks.resize(size as usize + 1, [None, None]);
        }
        let slot = marks.get_mut(size as usize)?.get_mut(usize::from(array))?;
        Some(
            slot.get_or_insert_with(|| {
                // NOTE: what it marks, for the JS check of snapshots (pkg-template/memo.js).
                let mark = Object::new();
                let _ = Reflect::set(&mark, &"a".into(), &JsValue::from_bool(array));
                let _ = Reflect::set(&mark, &"n".into(), &JsValue::from(size));
                mark.into()
            })
            .clone(),
        )
    })
}

/// Reads `value` as JSON. `skip` names a top-level key to leave out (the `messages` of a
/// request object, read separately). Returns `None` for what `JSON.stringify` writes nothing
/// for (`undefined`, a function, a symbol).
pub fn read(value: &JsValue, skip: Option<&str>) -> Result<Option<Value>, WalkError> {
    Walker::new(false, None).read(value, skip)
}

/// Reads an options bag as [`read`] does, except that `NaN` and the infinities are an error
/// naming their place: `JSON.stringify` writes them as `null`, which an optional field reads as
/// "not given", so `limitTokens: NaN` silently meant the default.
pub fn read_options(value: &JsValue) -> Result<Option<Value>, WalkError> {
    let mut walker = Walker::new(false, None);
    walker.finite = true;
    walker.read(value, None)
}

/// Reads `value`, item `index` of an array, as [`read`] does: as `JSON.stringify` reads it
/// there (a `toJSON` method is called with the index). Error paths start at the item.
pub fn read_item(value: &JsValue, index: u32) -> Result<Option<Value>, WalkError> {
    Walker::new(false, None).read_item(value, index)
}

/// Whether `JSON.stringify` would read `value` through a `toJSON` method rather than its own
/// properties (true too when looking for one threw).
pub fn reads_through_to_json(value: &JsValue) -> bool {
    value.is_object() && has_to_json(value) != Some(false)
}

/// Which long strings a read may cut short, for a reader that looks at only their start.
#[derive(Clone, Copy)]
pub struct Skim {
    /// Whether a string held by the field of this name may be cut.
    pub field: fn(&str) -> bool,
    /// How many UTF-16 units of a cut string are kept.
    pub units: u32,
}

/// Reads `value` as [`read`] does, except that a string of more than [`LONG_STRING`] UTF-16
/// units held by a field that `skim` names reads as its first `skim.units` units, unless those
/// are all whitespace (then it reads whole). Everything else, errors included, is as [`read`]:
/// only the copying of the rest of those strings is saved.
pub fn read_skimmed(value: &JsValue, skim: Skim) -> Result<Option<Value>, WalkError> {
    Walker::new(false, Some(skim)).read(value, None)
}

/// Reads `value`, item `index` of an array, as [`read_item`] does, with long strings skimmed
/// as [`read_skimmed`] does.
pub fn read_item_skimmed(
    value: &JsValue,
    index: u32,
    skim: Skim,
) -> Result<Option<Value>, WalkError> {
    Walker::new(false, Some(skim)).read_item(value, index)
}

/// Reads `value`, item `index` of an array, as [`read_item`] does and records a [`Snapshot`] of
/// it, unless something in it (a `toJSON` method) makes its JSON depend on more than its
/// properties.
pub fn read_item_with_snapshot(
    value: &JsValue,
    index: u32,
) -> Result<(Option<Value>, Option<Snapshot>), WalkError> {
    let mut walker = Walker::new(true, None);
    if !walker.value(value, Key::Index(index), None)? {
        return Ok((None, walker.snapshot.map(Snapshot)));
    }
    let snapshot = walker.snapshot.take();
    Ok((Some(walker.finish()?), snapshot.map(Snapshot)))
}

/// What a value's JSON reading was made of, in walk order: a leaf is itself; an object is its
/// mark ([`mark`], telling its size), then each key (the string `Object.keys` gave) followed by
/// its value; an array is its mark, then its items. [`Snapshot::matches`] tells whether the
/// value still reads the same, with `Object.is` on each part, so an unchanged string costs a
/// pointer compare. The first slot holds the id the snapshot is kept under.
pub struct Snapshot(Array);

impl Snapshot {
    /// The JS array holding the snapshot (to keep it in a `WeakMap`), with `id` in front.
    pub fn into_js(self, id: u64) -> Array {
        self.0.unshift(&JsValue::from_f64(id as f64));
        self.0
    }

    /// A snapshot kept by [`Snapshot::into_js`], and its id.
    pub fn from_js(array: Array) -> Option<(u64, Snapshot)> {
        let id = array.get(0).as_f64()?;
        Some((id as u64, Snapshot(array)))
    }

    /// Whether `value` would read as the same JSON as when the snapshot was taken. False when
    /// unsure (a getter throws, a `toJSON` appeared).
    pub fn matches(&self, value: &JsValue) -> bool {
        let mut at = 1;
        let first = self.next(&mut at);
        self.same(value, &first, 0, &mut at) && at == self.0.length()
    }

    fn next(&self, at: &mut u32) -> JsValue {
        let value = self.0.get(*at);
        *at += 1;
        value
    }

    /// Whether `value` reads as the part of the snapshot that starts with `first`.
    fn same(&self, value: &JsValue, first: &JsValue, depth: usize, at: &mut u32) -> bool {
        if Object::is(value, first) {
            // NOTE: a snapshot holds no object of the caller's, only leaves and our marks.
            return true;
        }
        if !value.is_object() || depth >= MAX_DEPTH || has_to_json(value) != Some(false) {
            return false;
        }
        if Array::is_array(value) {
            let array: &Array = value.unchecked_ref();
            let size = array.length();
            if !mark(true, size).is_some_and(|m| Object::is(&m, first)) {
                return false;
            }
            return (0..size).all(|i| {
                let expected = self.next(at);
                self.same(&array.get(i), &expected, depth + 1, at)
            });
        }
        let keys = Object::keys(value.unchecked_ref::<Object>());
        let size = keys.length();
        if !mark(false, size).is_some_and(|m| Object::is(&m, first)) {
            return false;
        }
        (0..size).all(|i| {
            let key = keys.get(i);
            if !Object::is(&key, &self.next(at)) {
                return false;
            }
            let Ok(item) = Reflect::get(value, &key) else {
                return false;
            };
            let expected = self.next(at);
            self.same(&item, &expected, depth + 1, at)
        })
    }
}

/// Whether `value` has a callable `toJSON`; `None` when looking threw.
fn has_to_json(value: &JsValue) -> Option<bool> {
    let method = TO_JSON.with(|name| Reflect::get(value, name)).ok()?;
    Some(method.is_function())
}

/// The key a value is read under: for `toJSON(key)`, and written before the value in an object.
#[derive(Clone, Copy)]
enum Key<'a> {
    Top,
    /// An object's key, as `Object.keys` listed it (a string).
    Name(&'a JsValue),
    Index(u32),
}

impl Key<'_> {
    fn to_js(self) -> JsValue {
        match self {
            Key::Top => JsValue::from_str(""),
            Key::Name(name) => name.clone(),
            Key::Index(i) => JsValue::from_str(&i.to_string()),
        }
    }
}

/// An object's key as UTF-8.
fn name(key: &JsValue) -> String {
    // NOTE: Object.keys lists strings only.
    string(key.unchecked_ref())
}

/// One step of a read, in walk order; [`Walker::finish`] builds the `Value` from them.
enum Node {
    /// `null`, a boolean or a number.
    Leaf(Value),
    /// The next string of the batch ([`Walker::batch`]).
    Batched,
    /// A string read on its own: a long one, or the start of one ([`read_skimmed`]).
    Owned(String),
    /// An array of this many items, which follow.
    Array(u32),
    /// An object of this many entries, which follow: each a `Batched` key, then its value.
    Object(u32),
}

struct Walker {
    /// The objects being read, outermost first, searched for cycles past [`CYCLE_CHECK_DEPTH`].
    ancestors: Vec<JsValue>,
    /// The snapshot being recorded; dropped when the value turns out not to be snapshottable.
    snapshot: Option<Array>,
    /// The long strings that may be cut short ([`read_skimmed`]).
    skim: Option<Skim>,
    /// What was read so far.
    nodes: Vec<Node>,
    /// The keys and short strings, in walk order, copied into wasm memory all at once at the
    /// end, and the length of each in UTF-16 units.
    // NOTE: copying strings one at a time cost a quarter of the read: a call into JS and back
    // for each, and wasm-bindgen's glue for each (views of the memory made anew, an allocation
    // asked of wasm). A push onto a JS array is the cheapest crossing there is.
    batch: Array,
    lengths: Vec<u32>,
    /// Whether a number that is not finite is an error ([`read_options`]) rather than `null`.
    finite: bool,
}

impl Walker {
    fn new(snapshot: bool, skim: Option<Skim>) -> Walker {
        Walker {
            ancestors: Vec::new(),
            snapshot: snapshot.then(Array::new),
            skim,
            nodes: Vec::new(),
            batch: Array::new(),
            lengths: Vec::new(),
            finite: false,
        }
    }

    /// Reads `value`, item `index` of an array ([`read_item`]).
    fn read_item(mut self, value: &JsValue, index: u32) -> Result<Option<Value>, WalkError> {
        if !self.value(value, Key::Index(index), None)? {
            return Ok(None);
        }
        self.finish().map(Some)
    }

    /// Reads `value` (`skip` as in [`read`]): `None` where `JSON.stringify` writes nothing.
    fn read(mut self, value: &JsValue, skip: Option<&str>) -> Result<Option<Value>, WalkError> {
        if !self.value(value, Key::Top, skip)? {
            return Ok(None);
        }
        self.finish().map(Some)
    }

    fn record(&mut self, value: &JsValue) {
        if let Some(snapshot) = &self.snapshot {
            snapshot.push(value);
        }
    }

    /// Records the start of an object or array of `size` entries (an object's keys are
    /// recorded each before its value).
    fn record_mark(&mut self, array: bool, size: u32) {
        if self.snapshot.is_none() {
            return;
        }
        match mark(array, size) {
            Some(mark) => self.record(&mark),
            // NOTE: too big to mark: not snapshotted.
            None => self.snapshot = None,
        }
    }

    /// Adds a short string to the batch.
    fn batch(&mut self, text: &JsValue, length: u32) {
        self.batch.push(text);
        self.lengths.push(length);
        self.nodes.push(Node::Batched);
    }

    /// Writes `key`, when it is an object's, before the value read under it.
    fn begin(&mut self, key: Key<'_>) {
        if let Key::Name(key) = key {
            let length = key.unchecked_ref::<JsString>().length();
            self.batch(key, length);
        }
    }

    /// How many UTF-16 units of a long string under `key` to keep; `None`: all of it.
    fn cut(&self, key: Key<'_>) -> Option<u32> {
        match (self.skim, key) {
            (Some(skim), Key::Name(key)) if (skim.field)(&name(key)) => Some(skim.units),
            _ => None,
        }
    }

    /// JSON.stringify's SerializeJSONProperty: `key` is what `toJSON` is called with. False
    /// when the value writes nothing (and nothing was written for it).
    fn value(
        &mut self,
        value: &JsValue,
        key: Key<'_>,
        skip: Option<&str>,
    ) -> Result<bool, WalkError> {
        if !value.is_object() {
            self.record(value);
            return self.leaf(value, key);
        }
        let depth = self.ancestors.len();
        if depth >= CYCLE_CHECK_DEPTH && self.ancestors.iter().any(|a| Object::is(a, value)) {
            return Err(WalkError::new("it is circular (an object contains itself)"));
        }
        if depth >= MAX_DEPTH {
            return Err(WalkError::new(format!(
                "it nests deeper than {MAX_DEPTH} levels"
            )));
        }
        let method = TO_JSON
            .with(|name| Reflect::get(value, name))
            .map_err(|err| WalkError::new(error_message(&err)))?;
        if let Some(method) = method.dyn_ref::<js_sys::Function>() {
            // NOTE: the value's JSON depends on the method, not on its properties: no snapshot.
            self.snapshot = None;
            let replaced = method
                .call1(value, &key.to_js())
                .map_err(|err| WalkError::new(error_message(&err)))?;
            if replaced.is_object() {
                // NOTE: JSON.stringify does not call toJSON again on what toJSON returned.
                return self.object(&replaced, key, None);
            }
            return self.leaf(&replaced, key);
        }
        self.object(value, key, skip)
    }

    fn object(
        &mut self,
        value: &JsValue,
        key: Key<'_>,
        skip: Option<&str>,
    ) -> Result<bool, WalkError> {
        self.begin(key);
        self.ancestors.push(value.clone());
        let read = if Array::is_array(value) {
            self.array(value.unchecked_ref())
        } else {
            self.map(value, skip)
        };
        self.ancestors.pop();
        read.map(|()| true)
    }

    fn array(&mut self, array: &Array) -> Result<(), WalkError> {
        let len = array.length();
        self.record_mark(true, len);
        self.nodes.push(Node::Array(len));
        for i in 0..len {
            let written = self
                .value(&array.get(i), Key::Index(i), None)
                .map_err(|e| e.under_index(i))?;
            if !written {
                self.nodes.push(Node::Leaf(Value::Null));
            }
        }
        Ok(())
    }

    fn map(&mut self, value: &JsValue, skip: Option<&str>) -> Result<(), WalkError> {
        let keys = Object::keys(value.unchecked_ref::<Object>());
        let len = keys.length();
        self.record_mark(false, len);
        let at = self.nodes.len();
        self.nodes.push(Node::Object(0));
        let mut entries = 0;
        for i in 0..len {
            let key = keys.get(i);
            if skip.is_some_and(|skip| name(&key) == skip) {
                continue;
            }
            let item = Reflect::get(value, &key)
                .map_err(|err| WalkError::new(error_message(&err)).under_key(&name(&key)))?;
            self.record(&key);
            let written = self
                .value(&item, Key::Name(&key), None)
                .map_err(|e| e.under_key(&name(&key)))?;
            entries += u32::from(written);
        }
        if let Some(node) = self.nodes.get_mut(at) {
            *node = Node::Object(entries);
        }
        Ok(())
    }

    /// A primitive as JSON (false for what has none); a long string cut short where `key` is
    /// skimmed ([`read_skimmed`]).
    fn leaf(&mut self, value: &JsValue, key: Key<'_>) -> Result<bool, WalkError> {
        if let Some(text) = value.dyn_ref::<JsString>() {
            let length = text.length();
            if length <= LONG_STRING {
                self.begin(key);
                self.batch(value, length);
                return Ok(true);
            }
            let text = match self.cut(key) {
                Some(units) => skimmed(text, units),
                None => encode(text),
            };
            self.begin(key);
            self.nodes.push(Node::Owned(text));
            return Ok(true);
        }
        let leaf = if let Some(n) = value.as_f64() {
            if self.finite && !n.is_finite() {
                let found = if n.is_nan() {
                    "NaN"
                } else if n > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                return Err(WalkError::new(format!(
                    "expected a finite number, found {found}"
                )));
            }
            number(n)
        } else if let Some(flag) = value.as_bool() {
            Value::Bool(flag)
        } else if value.is_null() {
            Value::Null
        } else if value.is_bigint() {
            return Err(WalkError::new("a BigInt has no JSON form"));
        } else {
            return Ok(false);
        };
        self.begin(key);
        self.nodes.push(Node::Leaf(leaf));
        Ok(true)
    }

    /// The value read: the batched strings copied at once, then put in place.
    fn finish(self) -> Result<Value, WalkError> {
        let strings = strings(&self.batch, &self.lengths);
        let mut strings = strings.into_iter();
        let mut nodes = self.nodes.into_iter();
        // NOTE: cannot fail: the nodes are as the walk wrote them, the strings as many as it
        // batched.
        build(&mut nodes, &mut strings).ok_or_else(|| WalkError::new("it could not be read"))
    }
}

/// The value the next nodes make. Recurses as deep as the value nests, at most [`MAX_DEPTH`].
fn build(
    nodes: &mut std::vec::IntoIter<Node>,
    strings: &mut std::vec::IntoIter<String>,
) -> Option<Value> {
    Some(match nodes.next()? {
        Node::Leaf(leaf) => leaf,
        Node::Batched => Value::String(strings.next()?),
        Node::Owned(text) => Value::String(text),
        Node::Array(len) => {
            let mut items = Vec::with_capacity(len as usize);
            for _ in 0..len {
                items.push(build(nodes, strings)?);
            }
            Value::Array(items)
        }
        Node::Object(len) => {
            let mut map = Map::with_capacity(len as usize);
            for _ in 0..len {
                let Node::Batched = nodes.next()? else {
                    return None;
                };
                let key = strings.next()?;
                map.insert(key, build(nodes, strings)?);
            }
            Value::Object(map)
        }
    })
}

/// The strings of `batch` as UTF-8, `lengths` giving each one's UTF-16 length: copied into
/// wasm memory as one string, joined by NULs (so that no two halves of a surrogate pair meet
/// across strings), then cut apart.
fn strings(batch: &Array, lengths: &[u32]) -> Vec<String> {
    if lengths.is_empty() {
        return Vec::new();
    }
    let joined = string(&batch.join("\0"));
    if let Some(strings) = split(&joined, lengths) {
        return strings;
    }
    // NOTE: cannot happen (the lengths are the strings'); read them one at a time then.
    batch.iter().map(|text| name(&text)).collect()
}

/// `joined` cut into strings of `lengths` UTF-16 units, with one NUL between each two.
fn split(joined: &str, lengths: &[u32]) -> Option<Vec<String>> {
    let mut out = Vec::with_capacity(lengths.len());
    let mut rest = joined;
    for (i, &length) in lengths.iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix('\0')?;
        }
        let end = utf8_len(rest, length as usize)?;
        out.push(rest.get(..end)?.to_owned());
        rest = rest.get(end..)?;
    }
    rest.is_empty().then_some(out)
}

/// How many bytes of `text` its first `units` UTF-16 units take.
fn utf8_len(text: &str, units: usize) -> Option<usize> {
    if text.as_bytes().get(..units).is_some_and(<[u8]>::is_ascii) {
        return Some(units);
    }
    let mut seen = 0;
    for (at, c) in text.char_indices() {
        if seen == units {
            return Some(at);
        }
        seen += c.len_utf16();
    }
    (seen == units).then_some(text.len())
}

/// Strings longer than this (in UTF-16 units) are copied by [`encode`].
const LONG_STRING: u32 = 256;

#[wasm_bindgen]
extern "C" {
    /// The platform's `TextEncoder` (browsers, Node, workerd).
    type TextEncoder;

    #[wasm_bindgen(constructor)]
    fn new() -> TextEncoder;

    #[wasm_bindgen(method, js_name = encodeInto)]
    fn encode_into(this: &TextEncoder, source: &JsString, destination: &Uint8Array) -> Encoded;

    /// What `encodeInto` did: UTF-16 units read, bytes written.
    type Encoded;

    #[wasm_bindgen(method, getter)]
    fn read(this: &Encoded) -> u32;

    #[wasm_bindgen(method, getter)]
    fn written(this: &Encoded) -> u32;
}

thread_local! {
    static ENCODER: TextEncoder = TextEncoder::new();
    /// The buffer [`with_str`] encodes long strings into, reused from call to call.
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A buffer [`with_str`] grew beyond this is freed after the call rather than kept.
const KEPT_BUFFER: usize = 1 << 20;

/// Calls `f` with a JS string as UTF-8 (a lone surrogate as U+FFFD), without allocating for
/// a long string: it is encoded into a buffer kept for the next call.
pub fn with_str<R>(text: &JsString, f: impl FnOnce(&str) -> R) -> R {
    with_utf8(text, |bytes| match std::str::from_utf8(bytes) {
        Ok(utf8) => f(utf8),
        Err(_) => f(&encode(text)),
    })
}

/// [`with_str`] without the UTF-8 check, for `f` that reads bytes and gives an answer for any
/// bytes: what `encodeInto` writes is valid UTF-8 by its specification, and checking it again
/// costs a pass over the text, a fifth of the time of an estimate.
pub fn with_utf8<R>(text: &JsString, f: impl FnOnce(&[u8]) -> R) -> R {
    let len = text.length() as usize;
    if len <= LONG_STRING as usize {
        return f(short_string(text).as_bytes());
    }
    let Ok(mut buffer) = BUFFER.with(|b| b.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)))
    else {
        return f(encode(text).as_bytes());
    };
    // NOTE: 3 bytes per UTF-16 unit is the most UTF-8 can need; zeroed only when it grows.
    if buffer.len() < 3 * len {
        buffer.resize(3 * len, 0);
    }
    let (_, written) = encode_into(text, &mut buffer);
    let result = f(buffer.get(..written).unwrap_or_default());
    if buffer.len() <= KEPT_BUFFER {
        BUFFER.with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                *b = buffer;
            }
        });
    }
    result
}

/// A JS string as UTF-8; a lone surrogate becomes U+FFFD.
fn string(text: &JsString) -> String {
    if text.length() <= LONG_STRING {
        return short_string(text);
    }
    encode(text)
}

/// A long JS string as UTF-8, cut to its first `units` UTF-16 units unless those are all
/// whitespace.
fn skimmed(text: &JsString, units: u32) -> String {
    let head = short_string(&text.slice(0, units.min(LONG_STRING)));
    if head.trim().is_empty() {
        return encode(text);
    }
    head
}

/// The buffer the strings read one at a time (a key named in an error, the start of a skimmed
/// text) are encoded into, with a JS view of it kept from call to call.
// NOTE: wasm-bindgen's own string copy asks wasm to allocate, and on every string makes its
// views of the memory anew (Node 20 has no `ArrayBuffer.prototype.detached`, so each check
// reads `memory.buffer`). `encodeInto` into a view made once costs a call and a getter.
struct Scratch {
    bytes: Box<[u8]>,
    view: Uint8Array,
    /// The memory's size (in pages) when the view was made: growing the memory detaches it.
    pages: usize,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Option<Scratch>> = const { std::cell::RefCell::new(None) };
}

/// A JS string of at most [`LONG_STRING`] UTF-16 units as UTF-8; a lone surrogate becomes
/// U+FFFD.
fn short_string(text: &JsString) -> String {
    let read = SCRATCH.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        let mut scratch = match slot.take() {
            Some(scratch) if scratch.pages == memory_pages() => scratch,
            old => {
                // NOTE: 3 bytes per UTF-16 unit is the most UTF-8 can need.
                let mut bytes = old.map_or_else(
                    || vec![0u8; 3 * LONG_STRING as usize].into_boxed_slice(),
                    |old| old.bytes,
                );
                // NOTE: read after the allocation above, which may have grown the memory.
                let pages = memory_pages();
                let view = view_of(&mut bytes);
                Scratch { bytes, view, pages }
            }
        };
        // NOTE: nothing in wasm runs while JS writes into `bytes`.
        let written = ENCODER.with(|encoder| encoder.encode_into(text, &scratch.view).written());
        let bytes = &mut scratch.bytes;
        let read = bytes
            .get(..written as usize)
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(str::to_owned);
        *slot = Some(scratch);
        read
    });
    read.unwrap_or_else(|| text.as_string().unwrap_or_default())
}

/// The size of the wasm memory, in 64 KiB pages.
fn memory_pages() -> usize {
    core::arch::wasm32::memory_size::<0>()
}

/// A JS view of `bytes`, valid until the memory grows.
pub(super) fn view_of(bytes: &mut [u8]) -> Uint8Array {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    let at = bytes.as_mut_ptr() as usize as u32;
    Uint8Array::new_with_byte_offset_and_length(&memory.buffer(), at, bytes.len() as u32)
}

/// A long JS string as UTF-8, through `TextEncoder.encodeInto` straight into wasm memory.
// NOTE: wasm-bindgen's own string copy walks the string in JS one character at a time until
// the first non-ASCII one; on a 2 MB conversation that was half the time of reading it.
fn encode(text: &JsString) -> String {
    let len = text.length();
    // NOTE: one byte per unit fits ASCII; a second pass, when needed, makes room for the worst
    // case of what is left (3 bytes a unit), so it always finishes.
    let mut bytes = vec![0u8; len as usize];
    let (read, mut written) = encode_into(text, &mut bytes);
    if read < len {
        bytes.resize(written + 3 * (len - read) as usize, 0);
        let rest = text.slice(read, len);
        written += encode_into(&rest, bytes.get_mut(written..).unwrap_or_default()).1;
    }
    bytes.truncate(written);
    // NOTE: encodeInto writes whole characters only, so this is valid UTF-8; the check stays.
    String::from_utf8(bytes)
        .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
}

/// Encodes as much of `text` as fits into `into`: (UTF-16 units read, bytes written).
fn encode_into(text: &JsString, into: &mut [u8]) -> (u32, usize) {
    // NOTE: the view is made after the buffer was allocated (a growth of the memory would
    // detach an older one), and nothing else runs while JS writes into `into`.
    let view = view_of(into);
    let done = ENCODER.with(|encoder| encoder.encode_into(text, &view));
    (done.read(), done.written() as usize)
}

/// A JS number as JSON text would carry it: integers within 64 bits as integers (what
/// serde_json makes of `JSON.stringify`'s digits), other finite numbers as floats, and
/// `NaN` and the infinities as `null`.
fn number(n: f64) -> Value {
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    if !n.is_finite() {
        return Value::Null;
    }
    if n.fract() == 0.0 {
        // NOTE: the casts are exact: n is a whole number inside the target's range.
        if (0.0..TWO_64).contains(&n) {
            return Value::Number(Number::from(n as u64));
        }
        if (-TWO_64 / 2.0..0.0).contains(&n) {
            return Value::Number(Number::from(n as i64));
        }
    }
    Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// The message of a thrown value (an `Error`'s message, or the value as a string).
pub(crate) fn error_message(err: &JsValue) -> String {
    match err.dyn_ref::<js_sys::Error>() {
        Some(err) => err.message().into(),
        None => err.as_string().unwrap_or_else(|| "an exception".to_owned()),
    }
}
