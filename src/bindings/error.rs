//! Errors as they cross into JavaScript. Every export throws one class, the package's
//! `ContextKeeperError` (pkg-template/errors.js), with `kind` (what failed: "messages",
//! "options", "encoding", ...) and `path` (where: `messages[3].content[1].tool_use_id`,
//! `options.model`), never a bare string. Each error enum here says its kind and path
//! ([`Thrown`]); [`to_js_error`] makes the object.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use super::walk::WalkError;
use crate::counting::{CountMessagesError, OptionsError};
use crate::encoding::CountError;
use crate::messages::{Format, ParseError};
use crate::model::ResolveError;

thread_local! {
    /// The package's `ContextKeeperError` class, registered by every entry module as soon as
    /// its wasm instance is ready ([`register_error_class`]); errors are made with it so they
    /// are `instanceof` it.
    static ERROR_CLASS: RefCell<Option<js_sys::Function>> = const { RefCell::new(None) };
}

/// Registers the class every export's errors are made with.
#[wasm_bindgen(js_name = __ckRegisterErrorClass, skip_typescript)]
pub fn register_error_class(class: js_sys::Function) {
    ERROR_CLASS.with(|slot| *slot.borrow_mut() = Some(class));
}

/// An error as JS sees it: its `kind` and `path`; its message is its `Display`.
pub trait Thrown: std::fmt::Display {
    /// The error's `kind` in JS (one of `ErrorKind` in pkg-template/errors.d.ts).
    fn kind(&self) -> &'static str;
    /// The place at fault, when there is one: `messages[3].content`, `options.model`.
    fn path(&self) -> Option<String>;
}

/// `err` as a JS value: an instance of the registered class, or (before an entry registered
/// it, as in the wasm tests) an `Error` with the same `name`, `kind` and `path`.
pub fn to_js_error(err: &dyn Thrown) -> JsValue {
    let text = err.to_string();
    let kind = JsValue::from_str(err.kind());
    let path = err.path().map_or(JsValue::NULL, |p| JsValue::from_str(&p));
    let message = JsValue::from_str(&text);
    let options = js_sys::Object::new();
    // NOTE: setting a property of a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(&options, &"kind".into(), &kind);
    let _ = js_sys::Reflect::set(&options, &"path".into(), &path);
    let made = ERROR_CLASS.with(|slot| {
        let class = slot.borrow().clone()?;
        js_sys::Reflect::construct(&class, &js_sys::Array::of2(&message, &options)).ok()
    });
    if let Some(made) = made {
        return made;
    }
    let error = js_sys::Error::new(&text);
    error.set_name("ContextKeeperError");
    let _ = js_sys::Reflect::set(&error, &"kind".into(), &kind);
    let _ = js_sys::Reflect::set(&error, &"path".into(), &path);
    error.into()
}

/// The kind of a fault at `path`: "messages" inside a conversation argument (`messages`,
/// `usage.messages`), else "options" (an option, or another argument: `text`, `limit`).
fn kind_at(path: &str) -> &'static str {
    let inside = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    if inside("messages") || inside("usage.messages") {
        "messages"
    } else {
        "options"
    }
}

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

impl ArgumentError {
    /// The argument or field at fault.
    fn place(&self) -> &str {
        match self {
            ArgumentError::WrongType { field, .. } | ArgumentError::Unreadable { field } => field,
            ArgumentError::NotJson { path, .. } => path,
        }
    }
}

impl Thrown for ArgumentError {
    fn kind(&self) -> &'static str {
        kind_at(self.place())
    }

    fn path(&self) -> Option<String> {
        Some(self.place().to_owned())
    }
}

impl From<ArgumentError> for JsValue {
    fn from(err: ArgumentError) -> Self {
        to_js_error(&err)
    }
}

impl Thrown for ParseError {
    /// Always "messages": a parse error is in the conversation argument, the request object
    /// around its list included (`model`, `tools[2]`).
    fn kind(&self) -> &'static str {
        "messages"
    }

    fn path(&self) -> Option<String> {
        Some(self.path.clone())
    }
}

impl Thrown for ResolveError {
    fn kind(&self) -> &'static str {
        match self {
            ResolveError::Encoding(_) => "encoding",
            ResolveError::Model(_) => "model",
        }
    }

    fn path(&self) -> Option<String> {
        Some(
            match self {
                ResolveError::Encoding(_) => "options.encoding",
                ResolveError::Model(_) => "options.model",
            }
            .to_owned(),
        )
    }
}

impl Thrown for CountError {
    /// "encoding" for an encoding this build left out; "internal" for tables that failed.
    fn kind(&self) -> &'static str {
        match self {
            CountError::NotBuilt { .. } => "encoding",
            _ => "internal",
        }
    }

    fn path(&self) -> Option<String> {
        None
    }
}

impl Thrown for OptionsError {
    /// "encoding" for an unknown encoding name, else "options".
    fn kind(&self) -> &'static str {
        match self {
            OptionsError::UnknownName {
                what: "encoding", ..
            } => "encoding",
            _ => "options",
        }
    }

    fn path(&self) -> Option<String> {
        let (OptionsError::WrongType { path, .. }
        | OptionsError::OutOfRange { path, .. }
        | OptionsError::UnknownName { path, .. }) = self;
        Some(path.clone())
    }
}

impl Thrown for CountMessagesError {
    fn kind(&self) -> &'static str {
        match self {
            CountMessagesError::Options(err) => err.kind(),
            CountMessagesError::Parse(err) => err.kind(),
            CountMessagesError::Count(err) => err.kind(),
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            CountMessagesError::Options(err) => err.path(),
            CountMessagesError::Parse(err) => Thrown::path(err),
            CountMessagesError::Count(err) => err.path(),
        }
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

impl Thrown for CountTokensError {
    fn kind(&self) -> &'static str {
        match self {
            CountTokensError::Argument(err) => err.kind(),
            CountTokensError::Resolve(err) => err.kind(),
            CountTokensError::Count(err) => err.kind(),
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            CountTokensError::Argument(err) => err.path(),
            CountTokensError::Resolve(err) => err.path(),
            CountTokensError::Count(err) => err.path(),
        }
    }
}

impl From<CountTokensError> for JsValue {
    fn from(err: CountTokensError) -> Self {
        to_js_error(&err)
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

impl Thrown for MessagesError {
    fn kind(&self) -> &'static str {
        match self {
            MessagesError::Argument(err) => err.kind(),
            MessagesError::Parse(err) => err.kind(),
            MessagesError::UnknownFormat { .. } => "options",
            MessagesError::Internal(_) => "internal",
        }
    }

    fn path(&self) -> Option<String> {
        match self {
            MessagesError::Argument(err) => err.path(),
            MessagesError::Parse(err) => Thrown::path(err),
            MessagesError::UnknownFormat { .. } => Some("options.format".to_owned()),
            MessagesError::Internal(_) => None,
        }
    }
}

impl From<MessagesError> for JsValue {
    fn from(err: MessagesError) -> Self {
        to_js_error(&err)
    }
}

/// Why a function of the context layer failed.
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
}

impl Thrown for ContextError {
    fn kind(&self) -> &'static str {
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

    fn path(&self) -> Option<String> {
        match self {
            ContextError::Messages { path, .. } | ContextError::Options { path, .. } => {
                Some(path.clone())
            }
            _ => None,
        }
    }
}

impl From<ContextError> for JsValue {
    fn from(err: ContextError) -> Self {
        to_js_error(&err)
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
