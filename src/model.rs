//! The model registry: what a model name means for counting and budgeting.
//!
//! A name matches an entry exactly, or else the longest entry that is a prefix of it at a word
//! boundary (`gpt-4o-mini-2024-07-18` is `gpt-4o-mini`; `gpt-40` is nothing). Matching ignores
//! ASCII case and a leading provider path such as `openai/` or `anthropic/`. Models whose
//! tokenizer is not public (Claude, Gemini, and open models with their own vocabularies) count
//! with the closest encoding and say so with `exact: false`. An unknown model gets a
//! conservative default, flagged `known: false`; the caller can override every field.

use serde::{Deserialize, Serialize};

use crate::count::{Encoding, UnknownEncoding};

/// Who serves (or made) a model; it decides the message framing and the image rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// OpenAI: GPT and o-series.
    OpenAi,
    /// Anthropic: Claude.
    Anthropic,
    /// Google: Gemini.
    Google,
    /// Meta: Llama.
    Meta,
    /// Alibaba: Qwen.
    Alibaba,
    /// Mistral AI.
    Mistral,
    /// DeepSeek.
    DeepSeek,
    /// A model the registry does not know.
    Unknown,
}

/// Tokens a chat format spends around the content, per OpenAI's published accounting
/// (3 per message, 1 more when a message has a `name`, 3 to prime the reply). Other providers
/// do not publish theirs; the same numbers serve as an estimate there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Framing {
    /// Tokens around every message (role markers, separators).
    pub per_message: u32,
    /// Extra tokens for a message that carries a `name`.
    pub per_name: u32,
    /// Tokens that prime the assistant's reply, once per request.
    pub reply_priming: u32,
}

impl Framing {
    const CHAT: Framing = Framing {
        per_message: 3,
        per_name: 1,
        reply_priming: 3,
    };
}

/// How a provider charges an image in tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "camelCase")]
pub enum ImageRule {
    /// OpenAI's tiles: fit in 2048x2048, shortest side to 768, then `base` plus `per_tile` for
    /// every 512x512 tile (`base` alone at low detail).
    #[serde(rename_all = "camelCase")]
    Tiles {
        /// Tokens every image costs.
        base: u32,
        /// Tokens per 512x512 tile at high detail.
        per_tile: u32,
    },
    /// Anthropic's area rule: width x height / `divisor` after fitting the long side in
    /// `max_side` pixels.
    #[serde(rename_all = "camelCase")]
    Area {
        /// Pixels per token.
        divisor: u32,
        /// Longest side the provider keeps before it downscales.
        max_side: u32,
    },
    /// A flat price per image (Gemini charges 258 tokens for an image up to 384x384 and tiles
    /// beyond; the flat price of a typical tile is the documented default here).
    #[serde(rename_all = "camelCase")]
    Flat {
        /// Tokens per image.
        tokens: u32,
    },
}

/// Everything the registry knows of a model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// The registry entry that matched (the asked-for name when none did).
    pub name: String,
    /// Who serves the model.
    pub provider: Provider,
    /// The context window in tokens: input and output together.
    pub context_window: u32,
    /// The most tokens one reply may have.
    pub max_output: u32,
    /// The encoding counts are made with.
    pub encoding: Encoding,
    /// Whether `encoding` is the model's own tokenizer (false: the closest public one).
    pub exact: bool,
    /// Tokens spent around the content.
    pub framing: Framing,
    /// How images are charged.
    pub images: ImageRule,
    /// False when the name matched no entry and these are conservative defaults.
    pub known: bool,
}

/// One entry of the built-in table: name (or prefix), provider, window, max output, encoding
/// and whether that encoding is the model's own.
type Entry = (&'static str, Provider, u32, u32, Encoding, bool);

use Encoding::{Cl100kBase as CL100K, O200kBase as O200K};
use Provider::{Alibaba, Anthropic, DeepSeek, Google, Meta, Mistral, OpenAi};

/// The built-in registry, from the providers' published model pages. Longest prefix wins, so a
/// specific entry (`gpt-4o-mini`) may sit beside a general one (`gpt-4o`).
const MODELS: &[Entry] = &[
    // OpenAI. Every model since GPT-4o counts with o200k_base.
    ("gpt-5", OpenAi, 400_000, 128_000, O200K, true),
    ("gpt-5-chat", OpenAi, 128_000, 16_384, O200K, true),
    ("gpt-4.1", OpenAi, 1_047_576, 32_768, O200K, true),
    ("gpt-4.5", OpenAi, 128_000, 16_384, O200K, true),
    ("gpt-4o", OpenAi, 128_000, 16_384, O200K, true),
    ("gpt-4o-2024-05-13", OpenAi, 128_000, 4_096, O200K, true),
    ("chatgpt-4o", OpenAi, 128_000, 16_384, O200K, true),
    ("o1", OpenAi, 200_000, 100_000, O200K, true),
    ("o1-mini", OpenAi, 128_000, 65_536, O200K, true),
    ("o1-preview", OpenAi, 128_000, 32_768, O200K, true),
    ("o3", OpenAi, 200_000, 100_000, O200K, true),
    ("o4-mini", OpenAi, 200_000, 100_000, O200K, true),
    ("codex-mini", OpenAi, 200_000, 100_000, O200K, true),
    ("gpt-oss", OpenAi, 131_072, 131_072, O200K, true),
    ("gpt-4", OpenAi, 8_192, 8_192, CL100K, true),
    ("gpt-4-32k", OpenAi, 32_768, 32_768, CL100K, true),
    ("gpt-4-turbo", OpenAi, 128_000, 4_096, CL100K, true),
    ("gpt-4-1106", OpenAi, 128_000, 4_096, CL100K, true),
    ("gpt-4-0125", OpenAi, 128_000, 4_096, CL100K, true),
    ("gpt-3.5-turbo", OpenAi, 16_385, 4_096, CL100K, true),
    ("gpt-35-turbo", OpenAi, 16_385, 4_096, CL100K, true),
    ("text-embedding-3", OpenAi, 8_191, 0, CL100K, true),
    ("text-embedding-ada-002", OpenAi, 8_191, 0, CL100K, true),
    // Anthropic: no public tokenizer for Claude 3 and later.
    ("claude", Anthropic, 200_000, 4_096, O200K, false),
    ("claude-3-5-sonnet", Anthropic, 200_000, 8_192, O200K, false),
    ("claude-3-5-haiku", Anthropic, 200_000, 8_192, O200K, false),
    (
        "claude-3-7-sonnet",
        Anthropic,
        200_000,
        64_000,
        O200K,
        false,
    ),
    ("claude-sonnet-4", Anthropic, 200_000, 64_000, O200K, false),
    ("claude-opus-4", Anthropic, 200_000, 32_000, O200K, false),
    ("claude-opus-4-5", Anthropic, 200_000, 64_000, O200K, false),
    ("claude-haiku-4", Anthropic, 200_000, 64_000, O200K, false),
    // Google.
    ("gemini", Google, 1_048_576, 8_192, O200K, false),
    ("gemini-1.5-pro", Google, 2_097_152, 8_192, O200K, false),
    ("gemini-2.5", Google, 1_048_576, 65_536, O200K, false),
    ("gemini-3", Google, 1_048_576, 65_536, O200K, false),
    // Open models, counted with the public encoding closest to their own vocabulary.
    ("llama-3", Meta, 8_192, 8_192, CL100K, false),
    ("llama-3.1", Meta, 131_072, 8_192, CL100K, false),
    ("llama-3.2", Meta, 131_072, 8_192, CL100K, false),
    ("llama-3.3", Meta, 131_072, 8_192, CL100K, false),
    ("llama-4", Meta, 1_048_576, 8_192, O200K, false),
    ("llama-4-scout", Meta, 10_485_760, 8_192, O200K, false),
    ("qwen", Alibaba, 32_768, 8_192, CL100K, false),
    ("qwen2.5", Alibaba, 131_072, 8_192, CL100K, false),
    ("qwen3", Alibaba, 131_072, 32_768, CL100K, false),
    ("mistral", Mistral, 32_768, 8_192, O200K, false),
    ("mistral-large", Mistral, 131_072, 8_192, O200K, false),
    ("mistral-medium", Mistral, 131_072, 8_192, O200K, false),
    ("mistral-small", Mistral, 131_072, 8_192, O200K, false),
    ("codestral", Mistral, 262_144, 8_192, O200K, false),
    ("deepseek", DeepSeek, 131_072, 8_192, CL100K, false),
    (
        "deepseek-reasoner",
        DeepSeek,
        131_072,
        65_536,
        CL100K,
        false,
    ),
];

/// The window and output assumed for a model the registry does not know: small enough that a
/// conversation fitted to it fits every current model.
const UNKNOWN_WINDOW: u32 = 8_192;
const UNKNOWN_MAX_OUTPUT: u32 = 4_096;

/// Provider path prefixes that matching ignores (`openai/gpt-4o`, as routers name models).
const PROVIDER_PATHS: &[&str] = &[
    "openai/",
    "anthropic/",
    "google/",
    "meta-llama/",
    "meta/",
    "qwen/",
    "mistralai/",
    "deepseek/",
    "models/",
];

pub(crate) fn image_rule(provider: Provider) -> ImageRule {
    match provider {
        Provider::Anthropic => ImageRule::Area {
            divisor: 750,
            max_side: 1568,
        },
        Provider::Google => ImageRule::Flat { tokens: 258 },
        _ => ImageRule::Tiles {
            base: 85,
            per_tile: 170,
        },
    }
}

fn info(entry: &Entry) -> ModelInfo {
    let &(name, provider, context_window, max_output, encoding, exact) = entry;
    ModelInfo {
        name: name.to_owned(),
        provider,
        context_window,
        max_output,
        encoding,
        exact,
        framing: Framing::CHAT,
        images: image_rule(provider),
        known: true,
    }
}

/// The name as matching sees it: trimmed, lower case, without a provider path.
pub(crate) fn normalize(model: &str) -> String {
    let name = model.trim().to_ascii_lowercase();
    match PROVIDER_PATHS
        .iter()
        .find_map(|path| name.strip_prefix(path))
    {
        Some(rest) => rest.to_owned(),
        None => name,
    }
}

/// Whether `known` is `name` or a prefix of it that ends at a word boundary (both normalized).
pub(crate) fn matches_prefix(name: &str, known: &str) -> bool {
    name.strip_prefix(known).is_some_and(|rest| {
        rest.chars()
            .next()
            .is_none_or(|c| !c.is_ascii_alphanumeric())
    })
}

/// The registry entry a model name matches, if any.
fn lookup(model: &str) -> Option<&'static Entry> {
    let name = normalize(model);
    MODELS
        .iter()
        .filter(|(known, ..)| matches_prefix(&name, known))
        .max_by_key(|(known, ..)| known.len())
}

/// What the registry knows of `model`; an unknown model gets conservative defaults and
/// `known: false`.
///
/// ```
/// use context_keeper::model::{model_info, Provider};
/// let info = model_info("gpt-4o-mini-2024-07-18");
/// assert_eq!((info.name.as_str(), info.context_window, info.exact), ("gpt-4o", 128_000, true));
/// let claude = model_info("claude-sonnet-4-5-20250929");
/// assert_eq!((claude.provider, claude.exact), (Provider::Anthropic, false));
/// assert!(!model_info("my-finetune").known);
/// ```
pub fn model_info(model: &str) -> ModelInfo {
    lookup(model).map(info).unwrap_or_else(|| ModelInfo {
        name: model.to_owned(),
        provider: Provider::Unknown,
        context_window: UNKNOWN_WINDOW,
        max_output: UNKNOWN_MAX_OUTPUT,
        encoding: Encoding::O200kBase,
        exact: false,
        framing: Framing::CHAT,
        images: ImageRule::Tiles {
            base: 85,
            per_tile: 170,
        },
        known: false,
    })
}

/// A model name that matches no known entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown model {name:?}; known models (and their prefixes): {known}", known = known_models())]
pub struct UnknownModel {
    /// The name that was asked for.
    pub name: String,
}

fn known_models() -> String {
    MODELS
        .iter()
        .map(|(name, ..)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an encoding could not be chosen.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The encoding name is not known.
    #[error(transparent)]
    Encoding(#[from] UnknownEncoding),
    /// The model name is not known.
    #[error(transparent)]
    Model(#[from] UnknownModel),
}

/// The encoding `model` counts with, if the model is known.
///
/// ```
/// use context_keeper::{encoding_for_model, Encoding};
/// assert_eq!(encoding_for_model("gpt-4o-mini"), Some(Encoding::O200kBase));
/// assert_eq!(encoding_for_model("GPT-4-0613"), Some(Encoding::Cl100kBase));
/// assert_eq!(encoding_for_model("gpt-40"), None);
/// ```
pub fn encoding_for_model(model: &str) -> Option<Encoding> {
    lookup(model).map(|&(_, _, _, _, encoding, _)| encoding)
}

/// Chooses the encoding for a count: an explicit `encoding` wins over the `model`'s, and with
/// neither the default is o200k_base (the encoding of every current OpenAI model).
pub fn resolve_encoding(
    encoding: Option<&str>,
    model: Option<&str>,
) -> Result<Encoding, ResolveError> {
    if let Some(name) = encoding {
        return Ok(name.parse()?);
    }
    match model {
        Some(name) => encoding_for_model(name).ok_or_else(|| {
            UnknownModel {
                name: name.to_owned(),
            }
            .into()
        }),
        None => Ok(Encoding::O200kBase),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_at_a_boundary() {
        assert_eq!(
            encoding_for_model("gpt-4.1-nano"),
            Some(Encoding::O200kBase)
        );
        assert_eq!(
            encoding_for_model("gpt-4-turbo"),
            Some(Encoding::Cl100kBase)
        );
        assert_eq!(encoding_for_model("gpt-4"), Some(Encoding::Cl100kBase));
        assert_eq!(
            encoding_for_model("openai/gpt-5-mini"),
            Some(Encoding::O200kBase)
        );
        assert_eq!(encoding_for_model("o3-mini"), Some(Encoding::O200kBase));
        assert_eq!(encoding_for_model("o30"), None);
        assert_eq!(encoding_for_model("gpt-40"), None);
        assert_eq!(encoding_for_model(""), None);
        assert_eq!(model_info("gpt-4o-mini").name, "gpt-4o");
        assert_eq!(model_info("gpt-4o-2024-05-13").max_output, 4_096);
        assert_eq!(model_info("gpt-4-32k-0613").context_window, 32_768);
        assert_eq!(model_info("claude-opus-4-1-20250805").name, "claude-opus-4");
        assert_eq!(model_info("claude-opus-4-5").max_output, 64_000);
        assert_eq!(
            model_info("meta-llama/Llama-3.3-70B-Instruct").name,
            "llama-3.3"
        );
    }

    #[test]
    fn every_entry_is_found_by_its_own_name() {
        for entry in MODELS {
            let found = model_info(entry.0);
            assert_eq!(found.name, entry.0);
            assert!(found.known && found.context_window > 0);
            assert!(found.max_output <= found.context_window, "{}", entry.0);
        }
    }

    #[test]
    fn unknown_models_get_a_flagged_conservative_default() {
        let info = model_info("my-finetune-v2");
        assert!(!info.known && !info.exact);
        assert_eq!(info.provider, Provider::Unknown);
        assert!(MODELS
            .iter()
            .all(|e| e.2 >= info.context_window || e.2 == 8_191));
    }

    #[test]
    fn explicit_encoding_wins_and_errors_name_the_input() {
        assert_eq!(
            resolve_encoding(Some("cl100k_base"), Some("gpt-4o")),
            Ok(Encoding::Cl100kBase)
        );
        assert_eq!(resolve_encoding(None, None), Ok(Encoding::O200kBase));
        let err = resolve_encoding(Some("p50k"), None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"p50k\"") && err.contains("o200k_base, cl100k_base"),
            "{err}"
        );
        let err = resolve_encoding(None, Some("llama-9"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"llama-9\"") && err.contains("gpt-4o"),
            "{err}"
        );
    }
}
