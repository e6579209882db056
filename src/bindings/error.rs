//! Errors as they cross into JavaScript: each becomes an `Error` object of a fitting class
//! (`TypeError` for a wrong type, `RangeError` for an unknown name), never a bare string.

use wasm_bindgen::JsValue;

use crate::count::CountError;
use crate::model::ResolveError;

/// A JS argument of the wrong shape.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentError {
    /// The field holds a value of another type.
    #[error("{field}: expected {expected}, got {got}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        got: String,
    },
    /// Reading the field threw (a getter that throws, a revoked proxy).
    #[error("{field}: could not be read")]
    Unreadable { field: &'static str },
}

impl From<ArgumentError> for JsValue {
    fn from(err: ArgumentError) -> Self {
        js_sys::TypeError::new(&err.to_string()).into()
    }
}

/// Why `countTokens` failed.
#[derive(Debug, thiserror::Error)]
pub enum CountTokensError {
    #[error(transparent)]
    Argument(#[from] ArgumentError),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Count(#[from] CountError),
}

impl From<CountTokensError> for JsValue {
    fn from(err: CountTokensError) -> Self {
        match err {
            CountTokensError::Argument(err) => err.into(),
            CountTokensError::Resolve(err) => js_sys::RangeError::new(&err.to_string()).into(),
            CountTokensError::Count(err) => js_sys::Error::new(&err.to_string()).into(),
        }
    }
}
