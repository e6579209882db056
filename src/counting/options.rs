//! Options of a count, read from JSON (as JS hands them over), and the caller's model entries.

use serde_json::{Map, Value};

use super::tools::{BadChoice, ToolChoice, TOOL_CHOICE_NAMES};
use crate::encoding::{Encoding, UnknownEncoding};
use crate::messages::Format;
use crate::model::{
    image_rule, matches_prefix, model_info, normalize, Framing, ImageRule, ModelInfo, Provider,
};

/// Options of [`count_messages_str`](super::count_messages_str) and friends. From JS:
/// `{ model?, encoding?, format?, tools?, toolChoice?, models? }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CountMessagesOptions {
    /// The model the request is for; else the request object's own `model` field.
    pub model: Option<String>,
    /// The encoding to count with; wins over the model's (and then the count is not `exact`
    /// for that model unless it is the model's own).
    pub encoding: Option<Encoding>,
    /// The message format; detected when absent.
    pub format: Option<Format>,
    /// Tool definitions sent with the request; else the request object's own `tools`.
    pub tools: Option<Value>,
    /// How the request lets the model use its tools; else the request object's own
    /// `tool_choice` (or `toolChoice`), else auto.
    pub tool_choice: Option<ToolChoice>,
    /// The caller's registry entries, merged over the built-in ones.
    pub models: ModelOverrides,
}

/// Fields a caller sets on a model entry; every field is optional and merged over the built-in
/// entry the name matches (or over the conservative default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelOverride {
    /// Who serves the model (sets the image rule unless `images` is given too).
    pub provider: Option<Provider>,
    /// Context window in tokens.
    pub context_window: Option<u32>,
    /// Most tokens of one reply.
    pub max_output: Option<u32>,
    /// The encoding counts are made with.
    pub encoding: Option<Encoding>,
    /// Whether `encoding` is the model's own tokenizer.
    pub exact: Option<bool>,
    /// Tokens per message.
    pub per_message: Option<u32>,
    /// Extra tokens per `name`.
    pub per_name: Option<u32>,
    /// Tokens priming the reply.
    pub reply_priming: Option<u32>,
    /// How images are charged.
    pub images: Option<ImageRule>,
    /// Whether the thinking of earlier turns stays in the context.
    pub earlier_thinking: Option<bool>,
}

/// The caller's entries, keyed by normalized name (lower case, no provider path).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelOverrides(pub Vec<(String, ModelOverride)>);

impl ModelOverrides {
    /// Adds or replaces the entry for `name`.
    pub fn insert(&mut self, name: &str, entry: ModelOverride) {
        let name = normalize(name);
        self.0.retain(|(known, _)| *known != name);
        self.0.push((name, entry));
    }
}

/// Every model the registry holds, then every name the caller's entries add, each as
/// [`model_info_with`] gives it (so the caller's figures win). A caller's entry for a name
/// the registry lists changes that model in place; one for a new name (or a more specific
/// one, such as a dated release) is listed under the caller's name.
pub fn models_with(overrides: &ModelOverrides) -> Vec<ModelInfo> {
    let mut list: Vec<ModelInfo> = crate::model::models()
        .map(|m| model_info_with(&m.name, overrides))
        .collect();
    for (name, _) in &overrides.0 {
        if list.iter().any(|m| m.name == *name) {
            continue;
        }
        let mut info = model_info_with(name, overrides);
        info.name.clone_from(name);
        list.push(info);
    }
    list
}

/// What the registry, with the caller's entries merged over it, knows of `model`.
///
/// A caller's entry matches like a built-in one (exactly, or as the longest prefix at a word
/// boundary), and applies when it is at least as specific as the built-in match: an entry for
/// `gpt-4` changes `gpt-4-0613` but not `gpt-4-turbo`, which has its own built-in entry. A
/// model known only from the caller's entries is `known: true`, and `exact` only if the entry
/// says so. An entry that sets `contextWindow` or `maxOutput` clears `source` and `checked`:
/// the figures are then the caller's, not the page's.
///
/// ```
/// use context_keeper::counting::{model_info_with, ModelOverride, ModelOverrides};
/// let mut models = ModelOverrides::default();
/// models.insert("my-llm", ModelOverride { context_window: Some(32_000), ..Default::default() });
/// let info = model_info_with("my-llm-v2", &models);
/// assert_eq!((info.name.as_str(), info.context_window, info.known, info.exact), ("my-llm", 32_000, true, false));
/// ```
pub fn model_info_with(model: &str, overrides: &ModelOverrides) -> ModelInfo {
    let mut info = model_info(model);
    let name = normalize(model);
    let found = (overrides.0.iter())
        .filter(|(key, _)| matches_prefix(&name, key))
        .max_by_key(|(key, _)| key.len())
        .filter(|(key, _)| !info.known || key.len() >= info.name.len());
    let Some((key, entry)) = found else {
        return info;
    };
    let own_encoding = entry.encoding.is_none_or(|e| e == info.encoding);
    info.exact = entry
        .exact
        .unwrap_or(info.known && info.exact && own_encoding);
    if !info.known {
        info.name = key.clone();
        info.known = true;
    }
    if let Some(provider) = entry.provider {
        info.provider = provider;
        info.images = image_rule(provider);
    }
    if entry.context_window.is_some() || entry.max_output.is_some() {
        // NOTE: the registry's page no longer states the figures given.
        info.source = None;
        info.checked = None;
    }
    info.context_window = entry.context_window.unwrap_or(info.context_window);
    info.max_output = entry.max_output.unwrap_or(info.max_output);
    info.encoding = entry.encoding.unwrap_or(info.encoding);
    info.framing = Framing {
        per_message: entry.per_message.unwrap_or(info.framing.per_message),
        per_name: entry.per_name.unwrap_or(info.framing.per_name),
        reply_priming: entry.reply_priming.unwrap_or(info.framing.reply_priming),
    };
    info.images = entry.images.unwrap_or(info.images);
    info.earlier_thinking = entry.earlier_thinking.unwrap_or(info.earlier_thinking);
    info
}

/// An option that is not what it must be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// A value of the wrong type.
    #[error("{path}: expected {expected}, found {found}")]
    WrongType {
        /// Where: `options.models["x"].contextWindow`.
        path: String,
        /// What it must hold.
        expected: &'static str,
        /// What it holds.
        found: &'static str,
    },
    /// A number of the right type outside the values allowed.
    #[error("{path}: expected {expected}, found {found}")]
    OutOfRange {
        /// Where: `usage.inputTokens`.
        path: String,
        /// What it must hold.
        expected: &'static str,
        /// The value given.
        found: String,
    },
    /// A name that is not one of the known ones.
    #[error("{path}: unknown {what} {name:?}; known: {known}")]
    UnknownName {
        /// Where.
        path: String,
        /// What kind of name: `encoding`, `format`, `provider`.
        what: &'static str,
        /// The name given.
        name: String,
        /// The names accepted.
        known: String,
    },
}

impl OptionsError {
    /// Whether the value has the right type but is not one allowed (an unknown name, a number
    /// out of range), rather than the wrong type.
    pub fn is_range_error(&self) -> bool {
        matches!(
            self,
            OptionsError::UnknownName { .. } | OptionsError::OutOfRange { .. }
        )
    }
}

fn type_name(value: Option<&Value>) -> &'static str {
    match value {
        None => "nothing",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "a boolean",
        Some(Value::Number(_)) => "a number",
        Some(Value::String(_)) => "a string",
        Some(Value::Array(_)) => "an array",
        Some(Value::Object(_)) => "an object",
    }
}

pub(crate) fn wrong(
    path: impl Into<String>,
    expected: &'static str,
    found: Option<&Value>,
) -> OptionsError {
    OptionsError::WrongType {
        path: path.into(),
        expected,
        found: type_name(found),
    }
}

/// A field, with `null` read as absent.
fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn string<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, OptionsError> {
    match field(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        other => Err(wrong(format!("{path}.{key}"), "a string", other)),
    }
}

fn count(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u32>, OptionsError> {
    match field(obj, key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| wrong(format!("{path}.{key}"), "a whole number of tokens", Some(v))),
    }
}

/// A caller's image rule, its errors naming the field: `options.models["x"].images.perTile`.
fn read_image_rule(value: &Value, path: &str) -> Result<ImageRule, OptionsError> {
    ImageRule::from_json(value).map_err(|err| {
        let found = match err.field {
            "" => Some(value),
            field => value.get(field),
        };
        let path = match err.field {
            "" => path.to_owned(),
            field => format!("{path}.{field}"),
        };
        match (err.out_of_range, found) {
            (true, Some(found)) => OptionsError::OutOfRange {
                path,
                expected: err.expected,
                found: found.to_string(),
            },
            _ => wrong(path, err.expected, found),
        }
    })
}

pub(crate) fn encoding(name: &str, path: &str) -> Result<Encoding, OptionsError> {
    name.parse()
        .map_err(|UnknownEncoding { name }| OptionsError::UnknownName {
            path: path.to_owned(),
            what: "encoding",
            name,
            known: Encoding::ALL.map(Encoding::name).join(", "),
        })
}

impl CountMessagesOptions {
    /// Reads `{ model?, encoding?, format?, tools?, toolChoice?, models? }`; `null` (or
    /// nothing) is the defaults. Errors name the field: `options.models["x"].contextWindow:
    /// expected ...`.
    pub fn from_value(value: &Value) -> Result<CountMessagesOptions, OptionsError> {
        let obj = match value {
            Value::Null => return Ok(CountMessagesOptions::default()),
            Value::Object(obj) => obj,
            other => return Err(wrong("options", "an object", Some(other))),
        };
        let path = "options";
        let format = match string(obj, "format", path)? {
            None => None,
            Some(name) => {
                Some(
                    Format::from_name(name).ok_or_else(|| OptionsError::UnknownName {
                        path: "options.format".to_owned(),
                        what: "format",
                        name: name.to_owned(),
                        known: Format::ALL.map(Format::name).join(", "),
                    })?,
                )
            }
        };
        let tools = match field(obj, "tools") {
            None => None,
            Some(v @ (Value::Array(_) | Value::Object(_))) => Some(v.clone()),
            other => return Err(wrong("options.tools", "an array or an object", other)),
        };
        let tool_choice = match field(obj, "toolChoice") {
            None => None,
            Some(v) => Some(ToolChoice::read(v).map_err(|bad| match bad {
                BadChoice::WrongType => {
                    wrong("options.toolChoice", "a string or an object", Some(v))
                }
                BadChoice::UnknownName(name) => OptionsError::UnknownName {
                    path: "options.toolChoice".to_owned(),
                    what: "tool choice",
                    name,
                    known: TOOL_CHOICE_NAMES.to_owned(),
                },
            })?),
        };
        Ok(CountMessagesOptions {
            model: string(obj, "model", path)?.map(str::to_owned),
            encoding: string(obj, "encoding", path)?
                .map(|name| encoding(name, "options.encoding"))
                .transpose()?,
            format,
            tools,
            tool_choice,
            models: read_models(obj)?,
        })
    }
}

/// Reads `options.models`: `{ "name": { provider?, contextWindow?, maxOutput?, encoding?,
/// exact?, framing?: { perMessage?, perName?, replyPriming? }, images? } }`.
pub(crate) fn read_models(options: &Map<String, Value>) -> Result<ModelOverrides, OptionsError> {
    let mut out = ModelOverrides::default();
    let models = match field(options, "models") {
        None => return Ok(out),
        Some(Value::Object(models)) => models,
        other => return Err(wrong("options.models", "an object", other)),
    };
    for (name, entry) in models {
        let path = format!("options.models[{name:?}]");
        let Value::Object(entry) = entry else {
            return Err(wrong(path, "an object", Some(entry)));
        };
        let provider = match string(entry, "provider", &path)? {
            None => None,
            Some(p) => Some(
                serde_json::from_value::<Provider>(Value::String(p.to_owned())).map_err(|_| {
                    OptionsError::UnknownName {
                        path: format!("{path}.provider"),
                        what: "provider",
                        name: p.to_owned(),
                        known:
                            "openai, anthropic, google, meta, alibaba, mistral, deepseek, unknown"
                                .to_owned(),
                    }
                })?,
            ),
        };
        let exact = match field(entry, "exact") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            other => return Err(wrong(format!("{path}.exact"), "a boolean", other)),
        };
        let earlier_thinking = match field(entry, "earlierThinking") {
            None => None,
            Some(Value::Bool(b)) => Some(*b),
            other => return Err(wrong(format!("{path}.earlierThinking"), "a boolean", other)),
        };
        let (mut per_message, mut per_name, mut reply_priming) = (None, None, None);
        match field(entry, "framing") {
            None => {}
            Some(Value::Object(framing)) => {
                let fpath = format!("{path}.framing");
                per_message = count(framing, "perMessage", &fpath)?;
                per_name = count(framing, "perName", &fpath)?;
                reply_priming = count(framing, "replyPriming", &fpath)?;
            }
            other => return Err(wrong(format!("{path}.framing"), "an object", other)),
        }
        let images = match field(entry, "images") {
            None => None,
            Some(v) => Some(read_image_rule(v, &format!("{path}.images"))?),
        };
        let entry = ModelOverride {
            provider,
            context_window: count(entry, "contextWindow", &path)?,
            max_output: count(entry, "maxOutput", &path)?,
            encoding: string(entry, "encoding", &path)?
                .map(|e| encoding(e, &format!("{path}.encoding")))
                .transpose()?,
            exact,
            per_message,
            per_name,
            reply_priming,
            images,
            earlier_thinking,
        };
        out.insert(name, entry);
    }
    Ok(out)
}
