//! Tables read from the host at run time (Cargo feature `host-tables`), for Node: an
//! encoding's `<enc>.tables` file (see `layout.rs`) is read, on the first use of the encoding,
//! straight into linear memory, where it stays for the life of the instance.
//!
//! Why: tables built into the binary pass through memory three times before the first count
//! (read as part of the `.wasm`, copied by the compiler, copied into linear memory at
//! instantiation), whether or not the encoding is ever used. Read from a file they pass once,
//! and only when used. Browsers and workerd keep the built-in tables: their loading is
//! asynchronous, and counting is not.

/// Where the tables files are, relative to the directory of the Node glue
/// (`CONTEXT_KEEPER_TABLES_DIR` at build time; scripts/build.mjs sets it per entry).
#[cfg(target_arch = "wasm32")]
const TABLES_DIR: &str = match option_env!("CONTEXT_KEEPER_TABLES_DIR") {
    Some(dir) => dir,
    None => ".",
};

/// The bytes of `<name>.tables`, which this build's is `len` bytes long, read now and kept
/// (leaked) for the life of the instance.
// NOTE: the length comes from the build, so no stat call; a file of another length is
// refused here (shorter) or by `Source::parse` (longer, or another build's).
#[cfg(target_arch = "wasm32")]
pub(crate) fn read(name: &str, len: usize) -> Result<&'static [u8], String> {
    use node::{close_sync, open_sync, read_sync, GLUE_DIR};
    use wasm_bindgen::JsCast;

    let Some(mut path) = GLUE_DIR.with(wasm_bindgen::JsValue::as_string) else {
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
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    let view = js_sys::Uint8Array::new_with_byte_offset_and_length(
        &memory.buffer(),
        bytes.as_mut_ptr() as usize as u32,
        len as u32,
    );
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

#[cfg(target_arch = "wasm32")]
#[cold]
fn not_node() -> String {
    "this build reads its tables with Node's fs, and is not running in Node".into()
}

#[cfg(target_arch = "wasm32")]
#[cold]
fn failed(path: &str, error: &wasm_bindgen::JsValue) -> String {
    use wasm_bindgen::JsCast;
    let why = error
        .dyn_ref::<js_sys::Error>()
        .map_or_else(|| format!("{error:?}"), |e| String::from(e.message()));
    format!("cannot read {path}: {why}")
}

#[cfg(target_arch = "wasm32")]
#[cold]
fn short(path: &str, filled: usize, len: usize) -> String {
    format!("{path} ended after {filled} of the {len} bytes this build's tables have")
}

/// Outside wasm (the host tests of the `host-tables` path): the file `build.rs` wrote.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn read(name: &str, len: usize) -> Result<&'static [u8], String> {
    let path = format!("{}/{name}.tables", env!("OUT_DIR"));
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    if bytes.len() < len {
        return Err(format!("{path} is {} of {len} bytes", bytes.len()));
    }
    Ok(Box::leak(bytes.into_boxed_slice()))
}

#[cfg(target_arch = "wasm32")]
mod node {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        /// The directory of the Node glue (a CommonJS module), which the tables are found
        /// from.
        #[wasm_bindgen(thread_local_v2, js_name = __dirname)]
        pub(super) static GLUE_DIR: JsValue;
    }

    #[wasm_bindgen(module = "fs")]
    extern "C" {
        #[wasm_bindgen(js_name = openSync, catch)]
        pub(super) fn open_sync(path: &str, flags: &str) -> Result<f64, JsValue>;

        #[wasm_bindgen(js_name = readSync, catch)]
        pub(super) fn read_sync(
            fd: f64,
            buffer: &js_sys::Uint8Array,
            offset: f64,
            length: f64,
            position: f64,
        ) -> Result<f64, JsValue>;

        #[wasm_bindgen(js_name = closeSync, catch)]
        pub(super) fn close_sync(fd: f64) -> Result<(), JsValue>;
    }
}
