//! A message's `content` read into parts, the same way for every format (each gives its reader
//! of one item).

use serde_json::Value;

use super::error::ParseError;
use super::format::Format;
use super::model::{Form, Part, PartInfo, Slot};

/// Reads a message's `content` (already taken out of it) into parts.
pub(crate) fn parse_content(
    format: Format,
    content: Option<Value>,
    item: fn(&Value) -> Result<PartInfo, ParseError>,
) -> Result<(Form, Vec<Part>), ParseError> {
    match content {
        None => Ok((Form::Absent, Vec::new())),
        Some(Value::Null) => Ok((Form::Null, Vec::new())),
        Some(Value::String(s)) => Ok((Form::String, vec![Part::content_string(format, s)])),
        Some(Value::Array(items)) => {
            let mut parts = Vec::with_capacity(items.len());
            for (j, value) in items.into_iter().enumerate() {
                let info = item(&value).map_err(|e| e.under(format_args!(".content[{j}]")))?;
                parts.push(Part::from_info(format, Slot::Item, info, value));
            }
            Ok((Form::Array, parts))
        }
        Some(other) => Err(ParseError::expected(
            ".content",
            "a string or an array",
            Some(&other),
        )),
    }
}
