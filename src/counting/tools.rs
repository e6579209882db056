//! The tokens of tool definitions sent with a request.
//!
//! For OpenAI models this follows the approximation in OpenAI's cookbook ("How to count
//! tokens with tiktoken", `num_tokens_for_tools`): per function 7 tokens (10 with
//! cl100k_base), its `name:description`, 3 to open the properties and for each property 3 plus
//! `name:type:description` and its enum values (3 each, less 3 per enum), then 12 to close.
//! Other providers do not publish theirs: the definitions' JSON text is counted. Either way the
//! count is an estimate, so a count with tools is never `exact`.

use serde_json::Value;

use super::tally::Tokenizer;
use crate::count::{CountError, Encoding};
use crate::model::Provider;

/// One tool definition, in whichever shape it came: OpenAI Chat (`{type: "function",
/// function: {...}}`), OpenAI Responses (flat), Anthropic (`input_schema`), or an AI SDK entry
/// (`name -> {description, inputSchema}`).
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Option<&'a Value>,
}

fn tool<'a>(name: Option<&'a str>, def: &'a Value) -> Tool<'a> {
    let def = def.get("function").unwrap_or(def);
    let str_of = |key: &str| def.get(key).and_then(Value::as_str);
    Tool {
        name: name.or_else(|| str_of("name")).unwrap_or(""),
        description: str_of("description").unwrap_or(""),
        parameters: ["parameters", "input_schema", "inputSchema"]
            .iter()
            .find_map(|key| def.get(key)),
    }
}

fn tools_of(tools: &Value) -> Vec<Tool<'_>> {
    match tools {
        Value::Array(list) => list.iter().map(|def| tool(None, def)).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(name, def)| tool(Some(name), def))
            .collect(),
        _ => Vec::new(),
    }
}

/// The tokens `tools` add to a request for a model of `provider`.
pub(crate) fn tool_tokens(
    tools: &Value,
    provider: Provider,
    tok: &mut Tokenizer,
) -> Result<u64, CountError> {
    let list = tools_of(tools);
    if list.is_empty() {
        return Ok(0);
    }
    if provider != Provider::OpenAi {
        return tok.json(tools);
    }
    let func_init = match tok.encoding {
        Encoding::Cl100kBase => 10,
        Encoding::O200kBase => 7,
    };
    let mut total: u64 = 12;
    for tool in list {
        total += func_init;
        let description = tool
            .description
            .strip_suffix('.')
            .unwrap_or(tool.description);
        total += tok.count(&format!("{}:{}", tool.name, description))?;
        let properties = tool
            .parameters
            .and_then(|p| p.get("properties"))
            .and_then(Value::as_object);
        let Some(properties) = properties.filter(|p| !p.is_empty()) else {
            continue;
        };
        total += 3;
        for (key, property) in properties {
            total += 3;
            if let Some(Value::Array(values)) = property.get("enum") {
                total = total.saturating_sub(3);
                for value in values {
                    total += 3 + tok.json(value)?;
                }
            }
            let ty = match property.get("type") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let description = property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let description = description.strip_suffix('.').unwrap_or(description);
            total += tok.count(&format!("{key}:{ty}:{description}"))?;
        }
    }
    Ok(total)
}
