//! The Node reader of the engine's tables files (Cargo feature `host-tables`; see
//! `engine/src/bpe/host.rs`): each `<enc>.tables` is read with Node's `fs` straight into linear memory.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Where the tables files are, relative to the directory of the Node glue
/// (`CONTEXT_KEEPER_TABLES_DIR` at build time; scripts/build.mjs sets it per entry).
const TABLES_DIR: &str = match option_env!("CONTEXT_KEEPER_TABLES_DIR") {
    Some(dir) => dir,
    None => ".",
};

/// Makes [`read`] the engine's way to read its tables.
pub(super) fn register() {
    crate::bpe::set_table_reader(read);
}

/// The bytes of `<name>.tables`, which this build's is `len` bytes long, read now and kept
/// (leaked) for the life of the instance.
// NOTE: the length comes from the build, so no stat call.
fn read(name: &str, len: usize) -> Result<&'static [u8], String> {
    let Some(mut path) = GLUE_DIR.with(JsValue::as_string) else {
        return Err(not_node());
    };
    // NOTE: pushed, not format!ted: this runs on a first count, and V8 compiles whatever
    // it calls then.
    path.push('/');
    if TABLES_DIR != "." {
        path.push_str(TABLES_DIR);
        path.push('/');
    }
    path.push_str(name);
    path.push_str(".tables");
    let fd = open_sync(&path, "r").map_err(|e| failed(&path, &e))?;
    let mut bytes = vec![0u8; len];
    // NOTE: a view of linear memory made after the allocation (which may grow memory), so
    // the file is read straight into `bytes`, with no copy in between.
    let view = super::walk::view_of(&mut bytes);
    let mut filled = 0;
    let mut result = Ok(());
    while filled < len {
        match read_sync(
            fd,
            &view,
            filled as f64,
            (len - filled) as f64,
            filled as f64,
        ) {
            Ok(n) if n >= 1.0 => filled += n as usize,
            Ok(_) => {
                result = Err(short(&path, filled, len));
                break;
            }
            Err(e) => {
                result = Err(failed(&path, &e));
                break;
            }
        }
    }
    // A failure to close leaks a descriptor; it cannot make the bytes read wrong.
    let _ = close_sync(fd);
    result.map(|()| &*Box::leak(bytes.into_boxed_slice()))
}

#[cold]
fn not_node() -> String {
    "this build reads its tables with Node's fs, and is not running in Node".into()
}

#[cold]
fn failed(path: &str, error: &JsValue) -> String {
    let why = error
        .dyn_ref::<js_sys::Error>()
        .map_or_else(|| format!("{error:?}"), |e| String::from(e.message()));
    format!("cannot read {path}: {why}")
}

#[cold]
fn short(path: &str, filled: usize, len: usize) -> String {
    format!("{path} ended after {filled} of the {len} bytes this build's tables have")
}

#[wasm_bindgen]
extern "C" {
    /// The directory of the Node glue (a CommonJS module), which the tables are found from.
    #[wasm_bindgen(thread_local_v2, js_name = __dirname)]
    static GLUE_DIR: JsValue;
}

#[wasm_bindgen(module = "fs")]
extern "C" {
    #[wasm_bindgen(js_name = openSync, catch)]
    fn open_sync(path: &str, flags: &str) -> Result<f64, JsValue>;

    #[wasm_bindgen(js_name = readSync, catch)]
    fn read_sync(
        fd: f64,
        buffer: &js_sys::Uint8Array,
        offset: f64,
        length: f64,
        position: f64,
    ) -> Result<f64, JsValue>;

    #[wasm_bindgen(js_name = closeSync, catch)]
    fn close_sync(fd: f64) -> Result<(), JsValue>;
}
