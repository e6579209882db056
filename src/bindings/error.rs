//! Errors as they cross into JavaScript: each becomes an `Error` object of a fitting class
//! (`TypeError` for a wrong type, `RangeError` for an unknown name), never a bare string.

use wasm_bindgen::JsValue;

use super::walk::WalkError;
use crate::encoding::CountError;
use crate::messages::{Format, ParseError};
use crate::model::ResolveError;

/// A JS argument of the wrong shape.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentError {
    /// The field holds a value of another type.
    #[error("{field}: expected {expected}, found {got}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        got: &'static str,
    },
    /// Reading the field threw (a getter that throws, a revoked proxy).
    #[error("{field}: could not be read")]
    Unreadable { field: &'static str },
    /// The value has no JSON form: a cycle, a BigInt, nesting deeper than 128 levels, a
    /// getter or `toJSON` that throws. `path` is the place: `messages[3].content[0].data`.
    #[error("{path}: cannot be read as JSON: {reason}")]
    NotJson { path: String, reason: String },
}

impl ArgumentError {
    /// A [`WalkError`] inside the argument `field`.
    pub fn not_json(field: &str, err: WalkError) -> ArgumentError {
        ArgumentError::NotJson {
            path: format!("{field}{}", err.path()),
            reason: err.reason,
        }
    }
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

/// Why `detectFormat`, `validateMessages` or `repairMessages` failed.
#[derive(Debug, thiserror::Error)]
pub enum MessagesError {
    #[error(transparent)]
    Argument(#[from] ArgumentError),
    /// The input is not a conversation of its format; the message names index and field.
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("options.format: unknown format {name:?}; known formats: {known}", known = known_formats())]
    UnknownFormat { name: String },
    /// A defect of ours, not of the input.
    #[error("internal error: {0}")]
    Internal(String),
}

fn known_formats() -> String {
    Format::ALL.map(Format::name).join(", ")
}

impl From<MessagesError> for JsValue {
    fn from(err: MessagesError) -> Self {
        match err {
            MessagesError::Argument(err) => err.into(),
            MessagesError::Parse(_) => js_sys::TypeError::new(&err.to_string()).into(),
            MessagesError::UnknownFormat { .. } => js_sys::RangeError::new(&err.to_string()).into(),
            MessagesError::Internal(_) => js_sys::Error::new(&err.to_string()).into(),
        }
    }
}

/// Why a function of the context layer failed: one JS class for all of them
/// (`ContextKeeperError`, with `kind` and `path`), made by [`super::context`].
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// A messages argument is not a conversation; `path` names index and field.
    #[error("{path}: {reason}")]
    Messages { path: String, reason: String },
    /// An option is wrong; `path` names it (`options.limitTokens`).
    #[error("{path}: {reason}")]
    Options { path: String, reason: String },
    /// Stored content could not be read back.
    #[error(transparent)]
    Recovery(#[from] crate::context::recovery::RecoveryError),
    /// A defect of ours, not of the input.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ContextError {
    pub fn messages(path: impl Into<String>, reason: String) -> ContextError {
        ContextError::Messages {
            path: path.into(),
            reason,
        }
    }

    pub fn options(path: impl Into<String>, reason: String) -> ContextError {
        ContextError::Options {
            path: path.into(),
            reason,
        }
    }

    pub fn internal(reason: String) -> ContextError {
        ContextError::Internal(reason)
    }

    /// The error's `kind` in JS.
    pub fn kind(&self) -> &'static str {
        use crate::context::recovery::RecoveryError;
        match self {
            ContextError::Messages { .. } => "messages",
            ContextError::Options { .. } => "options",
            ContextError::Recovery(RecoveryError::NotFound(_)) => "notFound",
            ContextError::Recovery(RecoveryError::Corrupt { .. }) => "corrupt",
            ContextError::Recovery(RecoveryError::Pattern(_)) => "pattern",
            ContextError::Internal(_) => "internal",
        }
    }

    /// The place at fault, when there is one.
    pub fn path(&self) -> Option<&str> {
        match self {
            ContextError::Messages { path, .. } | ContextError::Options { path, .. } => Some(path),
            _ => None,
        }
    }
}

impl From<ParseError> for ContextError {
    fn from(err: ParseError) -> Self {
        ContextError::Messages {
            path: err.path.clone(),
            reason: err.kind.to_string(),
        }
    }
}
