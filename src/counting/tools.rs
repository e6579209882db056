//! The tokens of tool definitions sent with a request, and of the system prompt a provider
//! adds for them.
//!
//! Definitions come as a list (OpenAI Chat `{type: "function", function: {...}}`, OpenAI
//! Responses' flat `{type: "function", name, ...}`, Anthropic's `{name, description,
//! input_schema}`) or as the AI SDK's map from name to `tool({description, inputSchema})` (v4:
//! `parameters`). A schema is counted as the JSON Schema the provider receives: a plain JSON
//! Schema as it is; the AI SDK's `jsonSchema()` (and `zodSchema()`) wrapper by the `jsonSchema`
//! it holds; a Zod schema by the JSON Schema estimated from its JSON ([`zod`](super::zod)),
//! never by Zod's internals. (The JS bindings first ask a Zod 4 schema for its own JSON Schema,
//! `schema.toJSONSchema()`, when it has that method.)
//!
//! For OpenAI models the count follows the approximation in OpenAI's cookbook ("How to count
//! tokens with tiktoken", `num_tokens_for_tools`): per function 7 tokens (10 with
//! cl100k_base), its `name:description`, 3 to open the properties and for each property 3 plus
//! `name:type:description` and its enum values (3 each, less 3 per enum), then 12 to close.
//! Other providers do not publish theirs: the definitions' JSON text is counted (AI SDK entries
//! as the `{name, description, input_schema}` the provider receives).
//!
//! Anthropic adds a system prompt of its own to every request with tools
//! ([`anthropic_tool_prompt`]): its published size depends on the model and on `tool_choice`.
//!
//! Either way the count is an estimate, so a count with tools is never `exact`.

use serde_json::{json, Map, Value};

use super::tally::Tokenizer;
use super::zod::{self, OPAQUE_OBJECT_TOKENS};
use crate::encoding::{CountError, Encoding};
use crate::model::{normalize, Provider};

/// How a request lets the model use its tools. It decides the size of the system prompt
/// Anthropic adds for them ([`anthropic_tool_prompt`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model may call a tool or not: `auto` (the default) or `none`.
    #[default]
    Auto,
    /// The model must call a tool: Anthropic's `any` or `tool`, OpenAI's and the AI SDK's
    /// `required` or a named tool.
    Any,
}

/// A tool choice that is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BadChoice {
    /// Not a string or an object with a string `type`.
    WrongType,
    /// A name no format uses.
    UnknownName(String),
}

/// The tool choice names, for error messages.
pub(crate) const TOOL_CHOICE_NAMES: &str = "auto, none, any, tool, required";

impl ToolChoice {
    fn from_name(name: &str) -> Option<ToolChoice> {
        match name {
            "auto" | "none" => Some(ToolChoice::Auto),
            // NOTE: OpenAI names a forced function `{type: "function"}` (`custom` for custom
            // tools), the AI SDK `{type: "tool"}`, Anthropic `{type: "tool"}` or `"any"`.
            "any" | "tool" | "required" | "function" | "custom" => Some(ToolChoice::Any),
            _ => None,
        }
    }

    /// Reads a tool choice in any format's shape: a name (`"auto"`, `"required"`...), or an
    /// object with a `type` (Anthropic `{type: "any"}`, AI SDK `{type: "tool", toolName}`,
    /// OpenAI `{type: "function", function}` and `{type: "allowed_tools", mode}`).
    pub(crate) fn read(value: &Value) -> Result<ToolChoice, BadChoice> {
        let name = match value {
            Value::String(name) => name.as_str(),
            Value::Object(obj) => match obj.get("type") {
                Some(Value::String(ty)) if ty == "allowed_tools" => {
                    // NOTE: OpenAI's `{type: "allowed_tools", mode, tools}`, in Chat under
                    // `allowed_tools`.
                    let mode = (obj.get("mode"))
                        .or_else(|| obj.get("allowed_tools").and_then(|a| a.get("mode")));
                    return Ok(match mode.and_then(Value::as_str) {
                        Some("required") => ToolChoice::Any,
                        _ => ToolChoice::Auto,
                    });
                }
                Some(Value::String(ty)) => ty.as_str(),
                _ => return Err(BadChoice::WrongType),
            },
            _ => return Err(BadChoice::WrongType),
        };
        ToolChoice::from_name(name).ok_or_else(|| BadChoice::UnknownName(name.to_owned()))
    }
}

/// Anthropic's published size of the tool use system prompt ("Tool use system prompt token
/// count" on its pricing page), by model name prefix, most specific first: tokens with
/// `tool_choice` auto or none, then with any or tool. Claude models newer than the table
/// (Claude 4 and later) take the last row, as every Claude 4 model has so far.
const ANTHROPIC_TOOL_PROMPT: &[(&str, u64, u64)] = &[
    ("claude-3-5-sonnet-20240620", 294, 261),
    ("claude-3-5-sonnet", 346, 313),
    ("claude-3-5-haiku", 264, 340),
    ("claude-3-7-sonnet", 346, 313),
    ("claude-3-opus", 530, 281),
    ("claude-3-sonnet", 159, 235),
    ("claude-3-haiku", 264, 340),
    ("claude", 346, 313),
];

/// The tokens of the system prompt Anthropic adds to a request with tools for `model` (a
/// Claude model name, as the API, Bedrock or Vertex spell it), with `choice`.
///
/// ```
/// use context_keeper::counting::{anthropic_tool_prompt, ToolChoice};
/// assert_eq!(anthropic_tool_prompt("claude-sonnet-4-5", ToolChoice::Auto), 346);
/// assert_eq!(anthropic_tool_prompt("claude-3-opus-20240229", ToolChoice::Any), 281);
/// assert_eq!(anthropic_tool_prompt("anthropic.claude-3-5-sonnet-20240620-v1:0", ToolChoice::Auto), 294);
/// ```
pub fn anthropic_tool_prompt(model: &str, choice: ToolChoice) -> u64 {
    // NOTE: `normalize` drops Bedrock's prefixes (`us.anthropic.claude-...`); Vertex writes
    // the date after an `@` (`claude-3-5-sonnet@20240620`), the table after a `-`.
    let name = normalize(model).replace('@', "-");
    let row = ANTHROPIC_TOOL_PROMPT
        .iter()
        .find(|(prefix, ..)| name.starts_with(prefix));
    let &(_, auto, any) = row.unwrap_or(&("claude", 346, 313));
    match choice {
        ToolChoice::Auto => auto,
        ToolChoice::Any => any,
    }
}

/// A tool definition that is not one: where (relative to the list: `[2]`, `["weather"]`,
/// `[0].function`), what it must be, and what it is.
#[derive(Debug)]
pub(crate) struct BadTool<'a> {
    pub path: String,
    pub expected: &'static str,
    pub found: Option<&'a Value>,
}

/// A tool's input schema, as the provider will receive it.
#[derive(Debug)]
enum Schema<'a> {
    /// No schema.
    None,
    /// A JSON Schema, as it was given.
    Json(&'a Value),
    /// A JSON Schema inside the AI SDK's `jsonSchema()` wrapper.
    Wrapped(&'a Value),
    /// Estimated from a Zod schema; `opaque` objects hid their properties.
    Estimated { schema: Value, opaque: u64 },
}

impl Schema<'_> {
    fn value(&self) -> Option<&Value> {
        match self {
            Schema::None => None,
            Schema::Json(v) | Schema::Wrapped(v) => Some(v),
            Schema::Estimated { schema, .. } => Some(schema),
        }
    }

    fn opaque(&self) -> u64 {
        match self {
            Schema::Estimated { opaque, .. } => *opaque,
            _ => 0,
        }
    }
}

/// One tool definition, in whichever shape it came.
#[derive(Debug)]
pub(crate) struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    /// The key the schema was under (`parameters`, `input_schema`, `inputSchema`).
    schema_key: Option<&'static str>,
    schema: Schema<'a>,
    /// The definition (OpenAI Chat: its `function` object).
    def: &'a Map<String, Value>,
    /// Whether it came from the AI SDK's map (then `name` is its key).
    keyed: bool,
    /// OpenAI Chat's wrapper, `{type: "function", function: def}`.
    wrapper: Option<&'a Map<String, Value>>,
}

/// Where a definition holds its input schema: OpenAI, Anthropic, the AI SDK; the first present
/// one is read.
pub const SCHEMA_KEYS: [&str; 3] = ["parameters", "input_schema", "inputSchema"];

fn schema_of(value: &Value) -> Schema<'_> {
    match value {
        Value::Object(obj) => match obj.get("jsonSchema") {
            Some(inner @ Value::Object(_)) => Schema::Wrapped(inner),
            _ if zod::is_zod(value) => {
                let (schema, opaque) = zod::estimate(value);
                Schema::Estimated { schema, opaque }
            }
            // NOTE: another Standard Schema library (Valibot, ArkType) shows nothing usable.
            _ if obj.contains_key("~standard") => Schema::Estimated {
                schema: json!({"type": "object"}),
                opaque: 1,
            },
            _ => Schema::Json(value),
        },
        _ => Schema::None,
    }
}

fn read_tool<'a>(key: Option<&'a str>, value: &'a Value) -> Result<Tool<'a>, BadTool<'a>> {
    let wrong = |path: &str, expected, found| BadTool {
        path: path.to_owned(),
        expected,
        found,
    };
    let Value::Object(outer) = value else {
        return Err(wrong("", "a tool definition object", Some(value)));
    };
    let (def, wrapper) = match outer.get("function") {
        None | Some(Value::Null) => (outer, None),
        Some(Value::Object(def)) => (def, Some(outer)),
        other => return Err(wrong(".function", "an object", other)),
    };
    let at = if wrapper.is_some() { ".function" } else { "" };
    let text = |field: &str| -> Result<Option<&'a str>, BadTool<'a>> {
        match def.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            other => Err(wrong(&format!("{at}.{field}"), "a string", other)),
        }
    };
    let name = text("name")?;
    let description = text("description")?;
    let mut schema_key = None;
    let mut schema = Schema::None;
    for k in SCHEMA_KEYS {
        match def.get(k) {
            None | Some(Value::Null) => continue,
            Some(v @ Value::Object(_)) => {
                schema_key = Some(k);
                schema = schema_of(v);
                break;
            }
            other => return Err(wrong(&format!("{at}.{k}"), "a JSON Schema object", other)),
        }
    }
    Ok(Tool {
        name: key.or(name).unwrap_or(""),
        description: description.unwrap_or(""),
        schema_key,
        schema,
        def,
        keyed: key.is_some(),
        wrapper,
    })
}

/// Reads every tool definition of `tools` (a list, or the AI SDK's map from name to
/// definition); an entry that is not a definition object is an error naming it.
pub(crate) fn read_tools(tools: &Value) -> Result<Vec<Tool<'_>>, BadTool<'_>> {
    match tools {
        Value::Array(list) => (list.iter().enumerate())
            .map(|(i, def)| read_tool(None, def).map_err(|e| e.under(&format!("[{i}]"))))
            .collect(),
        Value::Object(map) => (map.iter())
            .map(|(name, def)| {
                read_tool(Some(name), def).map_err(|e| e.under(&format!("[{name:?}]")))
            })
            .collect(),
        other => Err(BadTool {
            path: String::new(),
            expected: "an array or an object",
            found: Some(other),
        }),
    }
}

impl BadTool<'_> {
    fn under(mut self, prefix: &str) -> Self {
        self.path.insert_str(0, prefix);
        self
    }
}

/// The tokens the definitions `list` (read from `tools`) add to a request for a model of
/// `provider` named `model`, with `choice`: the definitions, and for Anthropic the tool use
/// system prompt.
pub(crate) fn tool_tokens(
    tools: &Value,
    list: &[Tool<'_>],
    provider: Provider,
    model: Option<&str>,
    choice: ToolChoice,
    tok: &mut Tokenizer,
) -> Result<u64, CountError> {
    if list.is_empty() {
        return Ok(0);
    }
    let opaque: u64 = list.iter().map(|t| t.schema.opaque()).sum();
    let mut total = opaque.saturating_mul(OPAQUE_OBJECT_TOKENS);
    total += match provider {
        Provider::OpenAi => cookbook_tokens(list, tok)?,
        _ if tools.is_array() && !list.iter().any(Tool::rewritten) => tok.json(tools)?,
        _ => tok.json(&Value::Array(
            list.iter().map(|t| sent_form(t, provider)).collect(),
        ))?,
    };
    if provider == Provider::Anthropic {
        total += anthropic_tool_prompt(model.unwrap_or("claude"), choice);
    }
    Ok(total)
}

impl Tool<'_> {
    /// Whether the provider receives this definition in another shape than it was given.
    fn rewritten(&self) -> bool {
        self.keyed || matches!(self.schema, Schema::Wrapped(_) | Schema::Estimated { .. })
    }
}

/// The definition as the provider receives it: an AI SDK entry as `{name, description,
/// input_schema}` (`parameters` for providers other than Anthropic), a wrapped or Zod schema
/// replaced by its JSON Schema.
fn sent_form(tool: &Tool<'_>, provider: Provider) -> Value {
    let ty = tool.def.get("type").and_then(Value::as_str);
    if tool.keyed && !matches!(ty, Some("provider-defined" | "provider")) {
        let mut out = Map::new();
        out.insert("name".to_owned(), json!(tool.name));
        if !tool.description.is_empty() {
            out.insert("description".to_owned(), json!(tool.description));
        }
        let key = match provider {
            Provider::Anthropic => "input_schema",
            _ => "parameters",
        };
        if let Some(schema) = tool.schema.value() {
            out.insert(key.to_owned(), schema.clone());
        }
        return Value::Object(out);
    }
    let mut def = tool.def.clone();
    if let (Some(key), Some(schema)) = (tool.schema_key, tool.schema.value()) {
        def.insert(key.to_owned(), schema.clone());
    }
    match tool.wrapper {
        Some(wrapper) => {
            let mut wrapper = wrapper.clone();
            wrapper.insert("function".to_owned(), Value::Object(def));
            Value::Object(wrapper)
        }
        None => Value::Object(def),
    }
}

/// OpenAI's cookbook approximation.
fn cookbook_tokens(tools: &[Tool<'_>], tok: &mut Tokenizer) -> Result<u64, CountError> {
    let func_init = match tok.encoding {
        Encoding::Cl100kBase => 10,
        Encoding::O200kBase => 7,
    };
    let mut total: u64 = 12;
    for tool in tools {
        total += func_init;
        let description = tool
            .description
            .strip_suffix('.')
            .unwrap_or(tool.description);
        total += tok.count(&format!("{}:{}", tool.name, description))?;
        let properties = (tool.schema.value())
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
