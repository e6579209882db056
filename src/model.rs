//! The model registry: what a model name means for counting and budgeting.
//!
//! A name matches an entry exactly, or else the longest entry that is a prefix of it at a word
//! boundary (`gpt-4o-2024-08-06` is `gpt-4o`; `gpt-40` is nothing). Matching ignores ASCII
//! case, a leading path (`openai/`, `@cf/meta/`), and the prefixes and spellings of hosts and
//! routers (see `normalize`). Each entry carries its model's image rule. Models whose
//! tokenizer is not public (Claude, Gemini, and open models with their own vocabularies) count
//! with the closest encoding and say so with `exact: false`. An unknown model gets a
//! conservative default, flagged `known: false`; the caller can override every field.

use serde::{Deserialize, Serialize};

use crate::encoding::{Encoding, UnknownEncoding};

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
    /// OpenAI's tiles (GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and 5.1, o1, o3): fit in 2048x2048,
    /// shortest side to 768, then `base` plus `per_tile` for every 512x512 tile (`base` alone
    /// at low detail).
    #[serde(rename_all = "camelCase")]
    Tiles {
        /// Tokens every image costs.
        base: u32,
        /// Tokens per 512x512 tile at high detail.
        per_tile: u32,
    },
    /// Square patches: fit the long side in `max_side` (when set), shrink until at most
    /// `max_patches` patches of `size` x `size` pixels cover the image, then charge the patches
    /// times `multiplier`. Anthropic's rule for Claude (28-pixel patches) and OpenAI's for its
    /// small models (32-pixel patches, gpt-4.1-mini and nano, o4-mini, gpt-5-mini and nano)
    /// and GPT-5.2 on. The `detail` setting does not change it.
    #[serde(rename_all = "camelCase")]
    Patches {
        /// The side of a patch in pixels.
        size: u32,
        /// The most patches an image is given; a larger image is scaled down to fit.
        max_patches: u32,
        /// The longest side kept before the patch budget applies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_side: Option<u32>,
        /// Tokens per patch.
        #[serde(default)]
        multiplier: Multiplier,
    },
    /// Gemini 1.5 and 2.x: an image within 384x384 is one tile; a larger one is cut into
    /// square crops of its shortest side / 1.5 (kept within 256..=768 pixels), each charged
    /// `per_tile`.
    #[serde(rename_all = "camelCase")]
    Crops {
        /// Tokens per crop (Google: 258).
        per_tile: u32,
    },
    /// Anthropic's older area rule: width x height / `divisor` after fitting the long side in
    /// `max_side`, at most about 1,600 tokens. Kept for callers' entries; the registry now
    /// uses [`ImageRule::Patches`], which Anthropic documents.
    #[serde(rename_all = "camelCase")]
    Area {
        /// Pixels per token.
        divisor: u32,
        /// Longest side the provider keeps before it downscales.
        max_side: u32,
    },
    /// A flat price per image, whatever its size (Gemini 3 at its default media resolution).
    #[serde(rename_all = "camelCase")]
    Flat {
        /// Tokens per image.
        tokens: u32,
    },
}

/// Tokens per image patch, in hundredths (JS sees the number: `1.62`), so rules stay exact,
/// comparable and hashable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Multiplier(pub u32);

impl Multiplier {
    /// One token per patch.
    pub const ONE: Multiplier = Multiplier(100);

    /// `patches` times the multiplier, rounded up.
    pub fn apply(self, patches: u64) -> u64 {
        (patches * u64::from(self.0)).div_ceil(100)
    }
}

impl Default for Multiplier {
    fn default() -> Self {
        Multiplier::ONE
    }
}

impl Serialize for Multiplier {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(f64::from(self.0) / 100.0)
    }
}

impl<'de> Deserialize<'de> for Multiplier {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(deserializer)?;
        let hundredths = (value * 100.0).round();
        if !(0.0..=1_000_000.0).contains(&hundredths) {
            return Err(serde::de::Error::custom(
                "a multiplier between 0 and 10000 tokens per patch",
            ));
        }
        // NOTE: in range, so the cast is exact.
        Ok(Multiplier(hundredths as u32))
    }
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

/// One entry of the built-in table.
struct Entry {
    /// The name, or the prefix of a family's names (normalized: lower case, no path).
    name: &'static str,
    provider: Provider,
    context_window: u32,
    max_output: u32,
    encoding: Encoding,
    /// Whether `encoding` is the model's own tokenizer.
    exact: bool,
    images: ImageRule,
}

use Encoding::{Cl100kBase as CL100K, O200kBase as O200K};
use Provider::{Alibaba, Anthropic, DeepSeek, Google, Meta, Mistral, OpenAi};

/// OpenAI's tile prices, per model family (OpenAI's "Images and vision" guide).
const fn tiles(base: u32, per_tile: u32) -> ImageRule {
    ImageRule::Tiles { base, per_tile }
}
const GPT_4O_TILES: ImageRule = tiles(85, 170);
const GPT_5_TILES: ImageRule = tiles(70, 140);
const O_SERIES_TILES: ImageRule = tiles(75, 150);
const GPT_4O_MINI_TILES: ImageRule = tiles(2_833, 5_667);

/// OpenAI's 32-pixel patches, at most 1,536 an image, times the model's multiplier (in
/// hundredths). OpenAI's guide gives 1.62 for gpt-5-mini and 2.46 for gpt-5-nano; measurements
/// reported on OpenAI's forum bill them at 1.2 and 1.5. The published (larger) figures stay
/// here, since a budget may over-count but must not under-count; a caller can override them.
const fn openai_patches(multiplier: u32) -> ImageRule {
    ImageRule::Patches {
        size: 32,
        max_patches: 1_536,
        max_side: None,
        multiplier: Multiplier(multiplier),
    }
}

/// Anthropic's 28-pixel patches: long side at most 1,568 pixels and 1,568 patches; Claude
/// Opus 4.7 and later models read images at high resolution, up to 2,576 pixels and 4,784
/// patches.
const CLAUDE_PATCHES: ImageRule = claude_patches(1_568, 1_568);
const CLAUDE_HIGH_RES: ImageRule = claude_patches(2_576, 4_784);
const fn claude_patches(max_side: u32, max_patches: u32) -> ImageRule {
    ImageRule::Patches {
        size: 28,
        max_patches,
        max_side: Some(max_side),
        multiplier: Multiplier::ONE,
    }
}

/// Gemini 1.5 and 2.x: 258 tokens per 768-pixel crop. Gemini 1.0 charged 258 per image, and
/// Gemini 3 charges up to 1,120 at its default (high) media resolution for images.
const GEMINI_CROPS: ImageRule = ImageRule::Crops { per_tile: 258 };

const fn openai(
    name: &'static str,
    context_window: u32,
    max_output: u32,
    encoding: Encoding,
    images: ImageRule,
) -> Entry {
    Entry {
        name,
        provider: OpenAi,
        context_window,
        max_output,
        encoding,
        exact: true,
        images,
    }
}

/// A model with no public tokenizer, counted with the closest public encoding.
const fn approximate(
    name: &'static str,
    provider: Provider,
    context_window: u32,
    max_output: u32,
    encoding: Encoding,
    images: ImageRule,
) -> Entry {
    Entry {
        name,
        provider,
        context_window,
        max_output,
        encoding,
        exact: false,
        images,
    }
}

const fn claude(name: &'static str, window: u32, max_output: u32, images: ImageRule) -> Entry {
    approximate(name, Anthropic, window, max_output, O200K, images)
}

const fn gemini(name: &'static str, window: u32, max_output: u32, images: ImageRule) -> Entry {
    approximate(name, Google, window, max_output, O200K, images)
}

/// An open model, with its provider's image rule.
const fn open(
    name: &'static str,
    provider: Provider,
    window: u32,
    max_output: u32,
    encoding: Encoding,
) -> Entry {
    approximate(
        name,
        provider,
        window,
        max_output,
        encoding,
        image_rule(provider),
    )
}

const M: u32 = 1_048_576;

/// The built-in registry, from the providers' published model pages. Longest prefix wins, so a
/// specific entry (`gpt-4o-mini`) may sit beside a general one (`gpt-4o`).
const MODELS: &[Entry] = &[
    // OpenAI. Every model since GPT-4o counts with o200k_base.
    openai("gpt-5", 400_000, 128_000, O200K, GPT_5_TILES),
    openai("gpt-5-chat", 128_000, 16_384, O200K, GPT_5_TILES),
    openai("gpt-5-mini", 400_000, 128_000, O200K, openai_patches(162)),
    openai("gpt-5-nano", 400_000, 128_000, O200K, openai_patches(246)),
    openai("gpt-5-pro", 400_000, 272_000, O200K, GPT_5_TILES),
    openai("gpt-5.1", 400_000, 128_000, O200K, GPT_5_TILES),
    openai("gpt-5.1-chat", 128_000, 16_384, O200K, GPT_5_TILES),
    openai("gpt-5.2", 400_000, 128_000, O200K, openai_patches(120)),
    openai("gpt-5.2-chat", 128_000, 16_384, O200K, openai_patches(120)),
    openai("gpt-5.4", 1_050_000, 128_000, O200K, openai_patches(120)),
    openai("gpt-4.1", 1_047_576, 32_768, O200K, GPT_4O_TILES),
    openai(
        "gpt-4.1-mini",
        1_047_576,
        32_768,
        O200K,
        openai_patches(162),
    ),
    openai(
        "gpt-4.1-nano",
        1_047_576,
        32_768,
        O200K,
        openai_patches(246),
    ),
    openai("gpt-4.5", 128_000, 16_384, O200K, GPT_4O_TILES),
    openai("gpt-4o", 128_000, 16_384, O200K, GPT_4O_TILES),
    openai("gpt-4o-mini", 128_000, 16_384, O200K, GPT_4O_MINI_TILES),
    openai("gpt-4o-2024-05-13", 128_000, 4_096, O200K, GPT_4O_TILES),
    openai("chatgpt-4o", 128_000, 16_384, O200K, GPT_4O_TILES),
    openai("o1", 200_000, 100_000, O200K, O_SERIES_TILES),
    openai("o1-mini", 128_000, 65_536, O200K, O_SERIES_TILES),
    openai("o1-preview", 128_000, 32_768, O200K, O_SERIES_TILES),
    openai("o3", 200_000, 100_000, O200K, O_SERIES_TILES),
    openai("o4-mini", 200_000, 100_000, O200K, openai_patches(172)),
    openai("codex-mini", 200_000, 100_000, O200K, openai_patches(172)),
    openai("gpt-oss", 131_072, 131_072, O200K, GPT_4O_TILES),
    openai("gpt-4", 8_192, 8_192, CL100K, GPT_4O_TILES),
    openai("gpt-4-32k", 32_768, 32_768, CL100K, GPT_4O_TILES),
    openai("gpt-4-turbo", 128_000, 4_096, CL100K, GPT_4O_TILES),
    openai("gpt-4-1106", 128_000, 4_096, CL100K, GPT_4O_TILES),
    openai("gpt-4-0125", 128_000, 4_096, CL100K, GPT_4O_TILES),
    openai("gpt-3.5-turbo", 16_385, 4_096, CL100K, GPT_4O_TILES),
    openai("gpt-35-turbo", 16_385, 4_096, CL100K, GPT_4O_TILES),
    openai("text-embedding-3", 8_191, 0, CL100K, GPT_4O_TILES),
    openai("text-embedding-ada-002", 8_191, 0, CL100K, GPT_4O_TILES),
    // Anthropic: no public tokenizer for Claude 3 and later. The 1M-token window begins with
    // Opus 4.6 and Sonnet 4.6; Sonnet 4.5, Opus 4.5 and Haiku 4.5 keep 200k.
    claude("claude", 200_000, 4_096, CLAUDE_PATCHES),
    claude("claude-3-5-sonnet", 200_000, 8_192, CLAUDE_PATCHES),
    claude("claude-3-5-haiku", 200_000, 8_192, CLAUDE_PATCHES),
    claude("claude-3-7-sonnet", 200_000, 64_000, CLAUDE_PATCHES),
    claude("claude-sonnet-4", 200_000, 64_000, CLAUDE_PATCHES),
    claude("claude-sonnet-4-6", M_CLAUDE, 128_000, CLAUDE_PATCHES),
    claude("claude-opus-4", 200_000, 32_000, CLAUDE_PATCHES),
    claude("claude-opus-4-5", 200_000, 64_000, CLAUDE_PATCHES),
    claude("claude-opus-4-6", M_CLAUDE, 128_000, CLAUDE_PATCHES),
    claude("claude-opus-4-7", M_CLAUDE, 128_000, CLAUDE_HIGH_RES),
    claude("claude-opus-4-8", M_CLAUDE, 128_000, CLAUDE_HIGH_RES),
    claude("claude-haiku-4", 200_000, 64_000, CLAUDE_PATCHES),
    claude("claude-opus-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES),
    claude("claude-sonnet-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES),
    claude("claude-haiku-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES),
    claude("claude-fable-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES),
    claude("claude-mythos-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES),
    // Google.
    gemini("gemini", M, 8_192, GEMINI_CROPS),
    gemini("gemini-pro", 32_768, 8_192, ImageRule::Flat { tokens: 258 }),
    gemini(
        "gemini-1.0-pro",
        32_768,
        8_192,
        ImageRule::Flat { tokens: 258 },
    ),
    gemini("gemini-1.5-pro", 2_097_152, 8_192, GEMINI_CROPS),
    gemini("gemini-2.5", M, 65_536, GEMINI_CROPS),
    gemini("gemini-3", M, 65_536, ImageRule::Flat { tokens: 1_120 }),
    // Open models, counted with the public encoding closest to their own vocabulary.
    open("llama-3", Meta, 8_192, 8_192, CL100K),
    open("llama-3.1", Meta, 131_072, 8_192, CL100K),
    open("llama-3.2", Meta, 131_072, 8_192, CL100K),
    open("llama-3.3", Meta, 131_072, 8_192, CL100K),
    open("llama-4", Meta, M, 8_192, O200K),
    open("llama-4-scout", Meta, 10_485_760, 8_192, O200K),
    open("qwen", Alibaba, 32_768, 8_192, CL100K),
    open("qwen-plus", Alibaba, 131_072, 8_192, CL100K),
    open("qwen-turbo", Alibaba, 1_000_000, 8_192, CL100K),
    open("qwen-long", Alibaba, 10_000_000, 8_192, CL100K),
    open("qwen2", Alibaba, 131_072, 8_192, CL100K),
    open("qwen2.5", Alibaba, 131_072, 8_192, CL100K),
    open("qwen3", Alibaba, 131_072, 32_768, CL100K),
    open("qwq", Alibaba, 131_072, 32_768, CL100K),
    open("mistral", Mistral, 32_768, 8_192, O200K),
    open("mistral-large", Mistral, 131_072, 8_192, O200K),
    open("mistral-medium", Mistral, 131_072, 8_192, O200K),
    open("mistral-small", Mistral, 131_072, 8_192, O200K),
    open("mistral-nemo", Mistral, 131_072, 8_192, O200K),
    open("ministral", Mistral, 131_072, 8_192, O200K),
    open("mixtral-8x7b", Mistral, 32_768, 8_192, O200K),
    open("mixtral-8x22b", Mistral, 65_536, 8_192, O200K),
    open("pixtral", Mistral, 131_072, 8_192, O200K),
    open("magistral", Mistral, 131_072, 40_000, O200K),
    open("devstral", Mistral, 131_072, 8_192, O200K),
    open("codestral", Mistral, 262_144, 8_192, O200K),
    open("deepseek", DeepSeek, 131_072, 8_192, CL100K),
    open("deepseek-reasoner", DeepSeek, 131_072, 65_536, CL100K),
];

/// Claude's long window: one million tokens.
const M_CLAUDE: u32 = 1_000_000;

/// The window and output assumed for a model the registry does not know: small enough that a
/// conversation fitted to it fits every current model.
const UNKNOWN_WINDOW: u32 = 8_192;
const UNKNOWN_MAX_OUTPUT: u32 = 4_096;

/// Region prefixes of Amazon Bedrock's cross-region inference profiles (`us.anthropic.…`).
const BEDROCK_REGIONS: &[&str] = &[
    "us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global.",
];

/// Vendor prefixes of Bedrock model ids (`anthropic.claude-…-v1:0`) and of model names that
/// carry their maker (`meta-llama-3.1-8b` after a path is dropped, `open-mistral-nemo`).
const VENDOR_PREFIXES: &[&str] = &[
    "anthropic.",
    "meta.",
    "mistral.",
    "deepseek.",
    "meta-",
    "open-",
];

/// The image rule a provider uses when an entry does not say (a caller's entry that names only
/// its provider).
pub(crate) const fn image_rule(provider: Provider) -> ImageRule {
    match provider {
        Provider::Anthropic => CLAUDE_PATCHES,
        Provider::Google => GEMINI_CROPS,
        _ => GPT_4O_TILES,
    }
}

fn info(entry: &Entry) -> ModelInfo {
    ModelInfo {
        name: entry.name.to_owned(),
        provider: entry.provider,
        context_window: entry.context_window,
        max_output: entry.max_output,
        encoding: entry.encoding,
        exact: entry.exact,
        framing: Framing::CHAT,
        images: entry.images,
        known: true,
    }
}

/// The name as matching sees it: trimmed and lower case; without a path (`openai/gpt-4o`,
/// `@cf/meta/llama-3.1-8b-instruct`, `models/gemini-2.5-pro`), a fine-tune's `ft:`, a Bedrock
/// region or vendor (`us.anthropic.claude-…`); with the spellings of other hosts brought to
/// the providers' own (`claude-3.7-sonnet` is `claude-3-7-sonnet`, Ollama's `llama3.1` and
/// Bedrock's `llama3-1` are `llama-3.1`).
pub(crate) fn normalize(model: &str) -> String {
    let lower = model.trim().to_ascii_lowercase();
    let mut name = lower.rsplit('/').next().unwrap_or_default();
    name = name.strip_prefix("ft:").unwrap_or(name);
    for region in BEDROCK_REGIONS {
        if let Some(rest) = name.strip_prefix(region) {
            if VENDOR_PREFIXES
                .iter()
                .any(|v| v.ends_with('.') && rest.starts_with(v))
            {
                name = rest;
            }
        }
    }
    for vendor in VENDOR_PREFIXES {
        if let Some(rest) = name.strip_prefix(vendor) {
            name = rest;
            break;
        }
    }
    if name.starts_with("claude") {
        // Routers write Claude's versions with dots (OpenRouter's `claude-3.7-sonnet`,
        // `claude-sonnet-4.5`); Anthropic's ids use hyphens.
        return name.replace('.', "-");
    }
    if let Some(rest) = name.strip_prefix("llama") {
        return format!("llama-{}", llama_version(rest.trim_start_matches('-')));
    }
    name.to_owned()
}

/// `3.1-8b`, `3-1-70b-instruct` (Bedrock) or `3.1:8b` (Ollama) as `3.1-8b…`: a single-digit
/// minor version after a hyphen becomes a dotted one.
fn llama_version(rest: &str) -> String {
    let bytes = rest.as_bytes();
    match bytes {
        [major, b'-', minor, tail @ ..]
            if major.is_ascii_digit()
                && minor.is_ascii_digit()
                && tail.first().is_none_or(|c| !c.is_ascii_alphanumeric()) =>
        {
            format!(
                "{}.{}{}",
                *major as char,
                *minor as char,
                rest.get(3..).unwrap_or_default()
            )
        }
        _ => rest.to_owned(),
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
        .filter(|entry| matches_prefix(&name, entry.name))
        .max_by_key(|entry| entry.name.len())
}

/// What the registry knows of `model`; an unknown model gets conservative defaults and
/// `known: false`.
///
/// ```
/// use context_keeper::model::{model_info, Provider};
/// let info = model_info("gpt-4o-mini-2024-07-18");
/// assert_eq!((info.name.as_str(), info.context_window, info.exact), ("gpt-4o-mini", 128_000, true));
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
        images: GPT_4O_TILES,
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
        .map(|entry| entry.name)
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
    lookup(model).map(|entry| entry.encoding)
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
        assert_eq!(model_info("gpt-4o-2024-08-06").name, "gpt-4o");
        assert_eq!(model_info("gpt-4o-mini-2024-07-18").name, "gpt-4o-mini");
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
    fn names_as_hosts_and_routers_write_them() {
        let cases = [
            // Cloudflare Workers AI, Hugging Face, routers: a path before the name.
            ("@cf/meta/llama-3.1-8b-instruct", "llama-3.1", 131_072),
            (
                "meta-llama/Meta-Llama-3.1-8B-Instruct",
                "llama-3.1",
                131_072,
            ),
            ("accounts/x/models/qwen2-72b-instruct", "qwen2", 131_072),
            // Amazon Bedrock: vendor and region prefixes, version suffixes.
            (
                "anthropic.claude-3-5-sonnet-20240620-v1:0",
                "claude-3-5-sonnet",
                200_000,
            ),
            (
                "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
                "claude-3-7-sonnet",
                200_000,
            ),
            ("meta.llama3-1-70b-instruct-v1:0", "llama-3.1", 131_072),
            ("meta.llama3-70b-instruct-v1:0", "llama-3", 8_192),
            // OpenAI fine-tunes.
            (
                "ft:gpt-4o-mini-2024-07-18:acme::abc123",
                "gpt-4o-mini",
                128_000,
            ),
            // Ollama.
            ("llama3.1", "llama-3.1", 131_072),
            ("llama3.2:3b", "llama-3.2", 131_072),
            ("llama3", "llama-3", 8_192),
            ("qwq-32b", "qwq", 131_072),
            // OpenRouter's dotted Claude versions.
            ("anthropic/claude-3.7-sonnet", "claude-3-7-sonnet", 200_000),
            ("anthropic/claude-3.5-sonnet", "claude-3-5-sonnet", 200_000),
            ("anthropic/claude-sonnet-4.5", "claude-sonnet-4", 200_000),
            ("anthropic/claude-opus-4.6", "claude-opus-4-6", 1_000_000),
            // Mistral's and Groq's names.
            ("mixtral-8x7b-32768", "mixtral-8x7b", 32_768),
            ("open-mistral-nemo", "mistral-nemo", 131_072),
            ("ministral-8b-latest", "ministral", 131_072),
            ("pixtral-large-latest", "pixtral", 131_072),
            ("magistral-medium-2506", "magistral", 131_072),
            // Names that a shorter prefix used to claim.
            ("gpt-5.1-chat-latest", "gpt-5.1-chat", 128_000),
            ("gemini-pro", "gemini-pro", 32_768),
            ("gemini-1.0-pro-001", "gemini-1.0-pro", 32_768),
            ("qwen-plus-latest", "qwen-plus", 131_072),
            ("qwen-turbo", "qwen-turbo", 1_000_000),
        ];
        for (name, entry, window) in cases {
            let info = model_info(name);
            assert_eq!(
                (info.name.as_str(), info.context_window, info.known),
                (entry, window, true),
                "{name}"
            );
        }
        assert_eq!(model_info("gpt-5.1-chat-latest").max_output, 16_384);
        assert_eq!(model_info("anthropic/claude-3.7-sonnet").max_output, 64_000);
        assert_eq!(encoding_for_model("llama3.1"), Some(Encoding::Cl100kBase));
        // A name that is only a family's prefix is not that family.
        assert!(!model_info("llama").known);
        assert!(!model_info("claude3").known);
    }

    #[test]
    fn every_entry_is_found_by_its_own_name() {
        for entry in MODELS {
            let found = model_info(entry.name);
            assert_eq!(found.name, entry.name);
            assert!(found.known && found.context_window > 0);
            assert!(found.max_output <= found.context_window, "{}", entry.name);
            assert_eq!(normalize(entry.name), entry.name, "entries are normalized");
        }
    }

    #[test]
    fn unknown_models_get_a_flagged_conservative_default() {
        let info = model_info("my-finetune-v2");
        assert!(!info.known && !info.exact);
        assert_eq!(info.provider, Provider::Unknown);
        assert!(MODELS
            .iter()
            .all(|e| e.context_window >= info.context_window || e.context_window == 8_191));
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
