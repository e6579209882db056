//! Tables read from the host at run time (Cargo feature `host-tables`): an encoding's
//! `<enc>.tables` file (see `layout.rs`), read on the first use of the encoding and kept for
//! the life of the program.
//!
//! Why: tables built into a wasm binary pass through memory three times before the first count
//! (read as part of the `.wasm`, copied by the compiler, copied into linear memory at
//! instantiation), whether or not the encoding is ever used. Read from a file they pass once,
//! and only when used. The package's Node build reads them this way; browsers and workerd keep
//! the built-in tables (their loading is asynchronous, and counting is not).
//!
//! The core reads no files itself in wasm: the bindings register a [`Reader`] (Node's `fs`,
//! `src/bindings/tables.rs`). Without one, the files `build.rs` wrote are read with `std::fs`,
//! which is what the host tests of this path use.

use std::sync::OnceLock;

/// Reads `<name>.tables`, which is `len` bytes long in this build, and keeps its bytes for the
/// life of the program. A file of another length is refused here (shorter) or by
/// `Source::parse` (longer, or another build's).
pub type Reader = fn(name: &str, len: usize) -> Result<&'static [u8], String>;

static READER: OnceLock<Reader> = OnceLock::new();

/// Makes `reader` the way tables are read from now on; the first reader registered stays.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub fn set_reader(reader: Reader) {
    let _ = READER.set(reader);
}

/// The bytes of `<name>.tables`, through the registered [`Reader`], else from the directory
/// `build.rs` wrote it to.
pub(crate) fn read(name: &str, len: usize) -> Result<&'static [u8], String> {
    if let Some(reader) = READER.get() {
        return reader(name, len);
    }
    let path = format!("{}/{name}.tables", env!("OUT_DIR"));
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    if bytes.len() < len {
        return Err(format!("{path} is {} of {len} bytes", bytes.len()));
    }
    Ok(Box::leak(bytes.into_boxed_slice()))
}
