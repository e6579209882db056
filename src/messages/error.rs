//! Errors for input that is not a conversation in the expected shape.

use std::fmt;

use serde_json::{Map, Value};

use super::model::Role;

/// Input that is not a conversation of the expected shape.
///
/// The message names the place, as a path from the top of the input, and what was wrong:
/// `messages[12].content[3].tool_use_id: expected a string, found a number`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct ParseError {
    /// Where the problem is: `messages[12].content[3].tool_use_id`, `system[0].text`, or
    /// `messages` for the list itself.
    pub path: String,
    /// What is wrong there.
    pub kind: ParseErrorKind,
}

/// What is wrong at a [`ParseError`]'s path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// The text is not JSON (or nests deeper than 128 levels).
    #[error("invalid JSON: {0}")]
    Json(String),
    /// A value of the wrong JSON type, or a required field that is missing.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the field must hold: `a string`, `an object`...
        expected: &'static str,
        /// What it holds: `a number`, `null`, `nothing` when it is missing.
        found: &'static str,
    },
    /// A message with no `content` but a `parts` array: an AI SDK `UIMessage` (what `useChat`
    /// holds), which only the AI SDK format reads.
    #[error(
        "expected {expected}, found none but `parts` (an AI SDK UIMessage): read it with \
         format \"aisdk\", or convert it with convertToModelMessages first"
    )]
    UiMessage {
        /// What `content` must hold in the format asked for.
        expected: &'static str,
    },
    /// A `role` this format does not have.
    #[error("unknown role {role:?}; expected {expected}")]
    UnknownRole {
        /// The role found.
        role: String,
        /// The roles the format accepts.
        expected: &'static str,
    },
}

impl ParseError {
    pub(crate) fn expected(
        path: impl Into<String>,
        expected: &'static str,
        found: Option<&Value>,
    ) -> Self {
        ParseError {
            path: path.into(),
            kind: ParseErrorKind::Expected {
                expected,
                found: found.map_or("nothing", type_name),
            },
        }
    }

    /// A field holding something other than `expected`, described as `found` (for what a
    /// JSON type name does not say: `an object without \`messages\``).
    pub(crate) fn expected_found(
        path: impl Into<String>,
        expected: &'static str,
        found: &'static str,
    ) -> Self {
        ParseError {
            path: path.into(),
            kind: ParseErrorKind::Expected { expected, found },
        }
    }

    /// A message of a format with `content` that has none, but AI SDK UIMessage `parts`.
    pub(crate) fn ui_message(expected: &'static str) -> Self {
        ParseError {
            path: ".content".to_owned(),
            kind: ParseErrorKind::UiMessage { expected },
        }
    }

    pub(crate) fn json(err: &serde_json::Error) -> Self {
        ParseError {
            path: "messages".to_owned(),
            kind: ParseErrorKind::Json(err.to_string()),
        }
    }

    /// Puts `prefix` in front of the path: errors are built where they are found, with a path
    /// relative to that place, and each caller on the way out adds its own segment.
    pub(crate) fn under(mut self, prefix: impl fmt::Display) -> Self {
        self.path.insert_str(0, &prefix.to_string());
        self
    }
}

/// The JSON type of a value, with its article, for error messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A required string field.
pub(crate) fn req_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, ParseError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        other => Err(ParseError::expected(format!(".{key}"), "a string", other)),
    }
}

/// The `role` field, one of `accepted`; `expected` names them for the error.
pub(crate) fn req_role(
    obj: &Map<String, Value>,
    accepted: &[Role],
    expected: &'static str,
) -> Result<Role, ParseError> {
    let name = req_str(obj, "role")?;
    accepted
        .iter()
        .copied()
        .find(|role| role.name() == name)
        .ok_or_else(|| ParseError {
            path: ".role".to_owned(),
            kind: ParseErrorKind::UnknownRole {
                role: name.to_owned(),
                expected,
            },
        })
}

/// An optional string field; `null` counts as absent.
pub(crate) fn opt_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, ParseError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        other => Err(ParseError::expected(format!(".{key}"), "a string", other)),
    }
}

/// An optional boolean field; `null` counts as absent.
pub(crate) fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, ParseError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        other => Err(ParseError::expected(format!(".{key}"), "a boolean", other)),
    }
}

/// An optional object field; `null` counts as absent.
pub(crate) fn opt_obj<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, ParseError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        other => Err(ParseError::expected(format!(".{key}"), "an object", other)),
    }
}

/// Takes `value` as an object, or names what it is instead.
pub(crate) fn into_obj(value: Value) -> Result<Map<String, Value>, ParseError> {
    match value {
        Value::Object(o) => Ok(o),
        other => Err(ParseError::expected("", "an object", Some(&other))),
    }
}

/// The value as an object, or an error at an empty relative path.
pub(crate) fn as_obj(value: &Value) -> Result<&Map<String, Value>, ParseError> {
    match value {
        Value::Object(o) => Ok(o),
        other => Err(ParseError::expected(
            String::new(),
            "an object",
            Some(other),
        )),
    }
}
