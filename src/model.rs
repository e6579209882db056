//! The model registry: what a model name means for counting and budgeting.
//!
//! A name matches an entry exactly, or else the longest entry that is a prefix of it at a word
//! boundary (`gpt-4o-2024-08-06` is `gpt-4o`; `gpt-40` is nothing). Matching ignores ASCII
//! case, a leading path (`openai/`, `@cf/meta/`), and the prefixes and spellings of hosts and
//! routers (see `normalize`). Each entry carries its model's image rule. Models whose
//! tokenizer is not public (Claude, Gemini, and open models with their own vocabularies) count
//! with the closest encoding and say so with `exact: false`. An unknown model gets a
//! conservative default, flagged `known: false`; the caller can override every field.
//!
//! Every entry names its source, the provider's page stating the context window and the
//! output limit, and the day the figures were read there. For managing a conversation,
//! [`resolve_window`] lets a window the caller passes win, and gives no window at all for an
//! unknown model without one.

use std::borrow::Cow;

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
///
/// Its JSON form is an object tagged by `rule`: `{ "rule": "tiles", "base": 85, "perTile": 170 }`.
/// It is read by [`ImageRule::from_json`], which names the field at fault, and not by a derived
/// `Deserialize`: serde reads an internally tagged enum through a buffer of its own, code that
/// nothing else in the crate needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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

impl Multiplier {
    /// What a multiplier must be.
    const EXPECTED: &'static str = "a multiplier between 0 and 10000 tokens per patch";

    /// Tokens per patch, to the hundredth; `None` outside 0..=10000 (or NaN).
    pub fn from_tokens(tokens: f64) -> Option<Multiplier> {
        let hundredths = (tokens * 100.0).round();
        // NOTE: in range, so the cast is exact.
        (0.0..=1_000_000.0)
            .contains(&hundredths)
            .then_some(Multiplier(hundredths as u32))
    }
}

impl<'de> Deserialize<'de> for Multiplier {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Multiplier::from_tokens(f64::deserialize(deserializer)?)
            .ok_or_else(|| serde::de::Error::custom(Multiplier::EXPECTED))
    }
}

/// Why a JSON value is not an [`ImageRule`]: the field at fault and what it must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRuleError {
    /// The field (`base`, `perTile`, `rule`...), or `""` when the value is not an object.
    pub field: &'static str,
    /// What the field must hold.
    pub expected: &'static str,
    /// The field has the right type and a value not allowed: an unknown rule, a multiplier
    /// out of range.
    pub out_of_range: bool,
}

impl std::fmt::Display for ImageRuleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field {
            "" => write!(f, "expected {}", self.expected),
            field => write!(f, "{field}: expected {}", self.expected),
        }
    }
}

impl std::error::Error for ImageRuleError {}

impl ImageRule {
    /// Every rule's JSON form, as an error names it.
    const SHAPES: &'static str = "{ rule: \"tiles\", base, perTile } | { rule: \"patches\", size, maxPatches, maxSide?, multiplier } | { rule: \"crops\", perTile } | { rule: \"area\", divisor, maxSide } | { rule: \"flat\", tokens }";

    /// Reads a rule from its JSON form, as `Serialize` writes it. A `null` field is an absent
    /// one; fields the rule does not have are ignored.
    ///
    /// # Errors
    /// The first field at fault: a value that is not an object, a missing or unknown `rule`,
    /// a missing field, a number that is not a whole `u32`, a multiplier outside 0..=10000.
    pub fn from_json(value: &serde_json::Value) -> Result<ImageRule, ImageRuleError> {
        const TOKENS: &str = "a whole number of tokens";
        const PIXELS: &str = "a whole number of pixels";
        const RULES: &str = "\"tiles\", \"patches\", \"crops\", \"area\" or \"flat\"";
        let wrong = |field, expected| ImageRuleError {
            field,
            expected,
            out_of_range: false,
        };
        let serde_json::Value::Object(obj) = value else {
            return Err(wrong("", ImageRule::SHAPES));
        };
        let get = |field: &str| obj.get(field).filter(|v| !v.is_null());
        let whole = |field, expected| match get(field) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or(wrong(field, expected)),
        };
        let need = |field, expected| whole(field, expected)?.ok_or(wrong(field, expected));
        let Some(serde_json::Value::String(rule)) = get("rule") else {
            return Err(wrong("rule", RULES));
        };
        Ok(match rule.as_str() {
            "tiles" => ImageRule::Tiles {
                base: need("base", TOKENS)?,
                per_tile: need("perTile", TOKENS)?,
            },
            "patches" => ImageRule::Patches {
                size: need("size", PIXELS)?,
                max_patches: need("maxPatches", "a whole number of patches")?,
                max_side: whole("maxSide", PIXELS)?,
                multiplier: match get("multiplier") {
                    None => Multiplier::ONE,
                    Some(v) => v
                        .as_f64()
                        .ok_or(wrong("multiplier", Multiplier::EXPECTED))
                        .and_then(|tokens| {
                            Multiplier::from_tokens(tokens).ok_or(ImageRuleError {
                                out_of_range: true,
                                ..wrong("multiplier", Multiplier::EXPECTED)
                            })
                        })?,
                },
            },
            "crops" => ImageRule::Crops {
                per_tile: need("perTile", TOKENS)?,
            },
            "area" => ImageRule::Area {
                divisor: need("divisor", "a whole number of pixels per token")?,
                max_side: need("maxSide", PIXELS)?,
            },
            "flat" => ImageRule::Flat {
                tokens: need("tokens", TOKENS)?,
            },
            _ => {
                return Err(ImageRuleError {
                    out_of_range: true,
                    ..wrong("rule", RULES)
                })
            }
        })
    }
}

impl<'de> Deserialize<'de> for ImageRule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ImageRule::from_json(&serde_json::Value::deserialize(deserializer)?)
            .map_err(serde::de::Error::custom)
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
    /// Whether the reasoning (thinking) of earlier turns stays in the model's context and
    /// counts there. Anthropic drops it for older Claude models, keeping only the current
    /// turn's ([`keeps_earlier_thinking`]); every other model keeps what it is sent.
    pub earlier_thinking: bool,
    /// The provider's page that states the window and the output limit; `None` for a model
    /// the registry does not know, or whose window or output limit the caller's entry sets.
    pub source: Option<Cow<'static, str>>,
    /// The day (`YYYY-MM-DD`) the figures were last read off `source`; `None` with it.
    pub checked: Option<Cow<'static, str>>,
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
    /// The provider's page that states the window and the output limit.
    source: &'static str,
    /// The day (`YYYY-MM-DD`) the figures were last read there.
    checked: &'static str,
}

/// An entry's figures before they name their source: [`Figures::read`] makes the entry, so
/// the table cannot hold one without a source.
struct Figures {
    name: &'static str,
    provider: Provider,
    context_window: u32,
    max_output: u32,
    encoding: Encoding,
    exact: bool,
    images: ImageRule,
}

impl Figures {
    /// The entry, with the page its figures come from and the day they were read there.
    const fn read(self, source: &'static str, checked: &'static str) -> Entry {
        Entry {
            name: self.name,
            provider: self.provider,
            context_window: self.context_window,
            max_output: self.max_output,
            encoding: self.encoding,
            exact: self.exact,
            images: self.images,
            source,
            checked,
        }
    }
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
) -> Figures {
    Figures {
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
) -> Figures {
    Figures {
        name,
        provider,
        context_window,
        max_output,
        encoding,
        exact: false,
        images,
    }
}

const fn claude(name: &'static str, window: u32, max_output: u32, images: ImageRule) -> Figures {
    approximate(name, Anthropic, window, max_output, O200K, images)
}

const fn gemini(name: &'static str, window: u32, max_output: u32, images: ImageRule) -> Figures {
    approximate(name, Google, window, max_output, O200K, images)
}

/// An open model, with its provider's image rule.
const fn open(
    name: &'static str,
    provider: Provider,
    window: u32,
    max_output: u32,
    encoding: Encoding,
) -> Figures {
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

/// The days figures were read off their pages. `NOV25` is this reading; a figure whose page
/// could not be read again keeps the day it entered the registry (`NOV22`, `NOV23`), which is
/// when it was last checked.
const NOV25: &str = "2026-11-25";
const NOV23: &str = "2026-11-23";
const NOV22: &str = "2026-11-22";

/// A model's page in OpenAI's API reference (where platform.openai.com/docs/models leads).
macro_rules! openai_page {
    ($id:literal) => {
        concat!("https://developers.openai.com/api/docs/models/", $id)
    };
}
/// A model's page in Anthropic's Claude docs.
macro_rules! claude_page {
    ($id:literal) => {
        concat!(
            "https://platform.claude.com/docs/en/models/",
            $id,
            "/overview"
        )
    };
}
/// A model's page in Google's Gemini API docs.
macro_rules! gemini_page {
    ($id:literal) => {
        concat!("https://ai.google.dev/gemini-api/docs/models/", $id)
    };
}
/// A model card on Meta's Llama site.
macro_rules! llama_page {
    ($id:literal) => {
        concat!(
            "https://www.llama.com/docs/model-cards-and-prompt-formats/",
            $id,
            "/"
        )
    };
}
/// Anthropic's models overview (current and legacy models side by side).
const CLAUDE_MODELS: &str = "https://platform.claude.com/docs/en/about-claude/models/overview";
/// Alibaba Cloud Model Studio's list of Qwen models.
const QWEN_MODELS: &str = "https://www.alibabacloud.com/help/en/model-studio/models";
/// Mistral's models overview.
const MISTRAL_MODELS: &str = "https://docs.mistral.ai/getting-started/models/";
/// DeepSeek's models and pricing page.
const DEEPSEEK_MODELS: &str = "https://api-docs.deepseek.com/quick_start/pricing";

/// The built-in registry, from the providers' published model pages; each entry names its page
/// and the day its figures were read there. Longest prefix wins, so a specific entry
/// (`gpt-4o-mini`) may sit beside a general one (`gpt-4o`).
const MODELS: &[Entry] = &[
    // OpenAI. Every model since GPT-4o counts with o200k_base.
    openai("gpt-5", 400_000, 128_000, O200K, GPT_5_TILES).read(openai_page!("gpt-5"), NOV22),
    openai("gpt-5-chat", 128_000, 16_384, O200K, GPT_5_TILES)
        .read(openai_page!("gpt-5-chat-latest"), NOV22),
    openai("gpt-5-mini", 400_000, 128_000, O200K, openai_patches(162))
        .read(openai_page!("gpt-5-mini"), NOV23),
    openai("gpt-5-nano", 400_000, 128_000, O200K, openai_patches(246))
        .read(openai_page!("gpt-5-nano"), NOV23),
    openai("gpt-5-pro", 400_000, 272_000, O200K, GPT_5_TILES)
        .read(openai_page!("gpt-5-pro"), NOV23),
    openai("gpt-5.1", 400_000, 128_000, O200K, GPT_5_TILES).read(openai_page!("gpt-5.1"), NOV23),
    openai("gpt-5.1-chat", 128_000, 16_384, O200K, GPT_5_TILES)
        .read(openai_page!("gpt-5.1-chat-latest"), NOV23),
    openai("gpt-5.2", 400_000, 128_000, O200K, openai_patches(120))
        .read(openai_page!("gpt-5.2"), NOV23),
    openai("gpt-5.2-chat", 128_000, 16_384, O200K, openai_patches(120))
        .read(openai_page!("gpt-5.2-chat-latest"), NOV23),
    openai("gpt-5.4", 1_050_000, 128_000, O200K, openai_patches(120))
        .read(openai_page!("gpt-5.4"), NOV23),
    openai("gpt-4.1", 1_047_576, 32_768, O200K, GPT_4O_TILES).read(openai_page!("gpt-4.1"), NOV22),
    openai(
        "gpt-4.1-mini",
        1_047_576,
        32_768,
        O200K,
        openai_patches(162),
    )
    .read(openai_page!("gpt-4.1-mini"), NOV23),
    openai(
        "gpt-4.1-nano",
        1_047_576,
        32_768,
        O200K,
        openai_patches(246),
    )
    .read(openai_page!("gpt-4.1-nano"), NOV23),
    openai("gpt-4.5", 128_000, 16_384, O200K, GPT_4O_TILES)
        .read(openai_page!("gpt-4.5-preview"), NOV22),
    openai("gpt-4o", 128_000, 16_384, O200K, GPT_4O_TILES).read(openai_page!("gpt-4o"), NOV22),
    openai("gpt-4o-mini", 128_000, 16_384, O200K, GPT_4O_MINI_TILES)
        .read(openai_page!("gpt-4o-mini"), NOV23),
    openai("gpt-4o-2024-05-13", 128_000, 4_096, O200K, GPT_4O_TILES)
        .read(openai_page!("gpt-4o"), NOV22),
    openai("chatgpt-4o", 128_000, 16_384, O200K, GPT_4O_TILES)
        .read(openai_page!("chatgpt-4o-latest"), NOV22),
    openai("o1", 200_000, 100_000, O200K, O_SERIES_TILES).read(openai_page!("o1"), NOV22),
    openai("o1-mini", 128_000, 65_536, O200K, O_SERIES_TILES).read(openai_page!("o1-mini"), NOV22),
    openai("o1-preview", 128_000, 32_768, O200K, O_SERIES_TILES)
        .read(openai_page!("o1-preview"), NOV22),
    openai("o3", 200_000, 100_000, O200K, O_SERIES_TILES).read(openai_page!("o3"), NOV22),
    openai("o4-mini", 200_000, 100_000, O200K, openai_patches(172))
        .read(openai_page!("o4-mini"), NOV22),
    openai("codex-mini", 200_000, 100_000, O200K, openai_patches(172))
        .read(openai_page!("codex-mini-latest"), NOV22),
    openai("gpt-oss", 131_072, 131_072, O200K, GPT_4O_TILES)
        .read(openai_page!("gpt-oss-120b"), NOV22),
    openai("gpt-4", 8_192, 8_192, CL100K, GPT_4O_TILES).read(openai_page!("gpt-4"), NOV25),
    openai("gpt-4-32k", 32_768, 32_768, CL100K, GPT_4O_TILES).read(openai_page!("gpt-4"), NOV22),
    openai("gpt-4-turbo", 128_000, 4_096, CL100K, GPT_4O_TILES)
        .read(openai_page!("gpt-4-turbo"), NOV22),
    openai("gpt-4-1106", 128_000, 4_096, CL100K, GPT_4O_TILES)
        .read(openai_page!("gpt-4-turbo-preview"), NOV22),
    openai("gpt-4-0125", 128_000, 4_096, CL100K, GPT_4O_TILES)
        .read(openai_page!("gpt-4-turbo-preview"), NOV22),
    openai("gpt-3.5-turbo", 16_385, 4_096, CL100K, GPT_4O_TILES)
        .read(openai_page!("gpt-3.5-turbo"), NOV22),
    openai("gpt-35-turbo", 16_385, 4_096, CL100K, GPT_4O_TILES)
        .read(openai_page!("gpt-3.5-turbo"), NOV22),
    openai("text-embedding-3", 8_191, 0, CL100K, GPT_4O_TILES)
        .read(openai_page!("text-embedding-3-large"), NOV22),
    openai("text-embedding-ada-002", 8_191, 0, CL100K, GPT_4O_TILES)
        .read(openai_page!("text-embedding-ada-002"), NOV22),
    // Anthropic: no public tokenizer for Claude 3 and later. The 1M-token window begins with
    // Opus 4.6 and Sonnet 4.6; Sonnet 4.5, Opus 4.5 and Haiku 4.5 keep 200k.
    claude("claude", 200_000, 4_096, CLAUDE_PATCHES).read(CLAUDE_MODELS, NOV22),
    claude("claude-3-5-sonnet", 200_000, 8_192, CLAUDE_PATCHES).read(CLAUDE_MODELS, NOV22),
    claude("claude-3-5-haiku", 200_000, 8_192, CLAUDE_PATCHES).read(CLAUDE_MODELS, NOV22),
    claude("claude-3-7-sonnet", 200_000, 64_000, CLAUDE_PATCHES).read(CLAUDE_MODELS, NOV22),
    claude("claude-sonnet-4", 200_000, 64_000, CLAUDE_PATCHES)
        .read(claude_page!("sonnet-4-5"), NOV25),
    claude("claude-sonnet-4-6", M_CLAUDE, 128_000, CLAUDE_PATCHES)
        .read(claude_page!("sonnet-4-6"), NOV25),
    claude("claude-opus-4", 200_000, 32_000, CLAUDE_PATCHES).read(CLAUDE_MODELS, NOV22),
    claude("claude-opus-4-5", 200_000, 64_000, CLAUDE_PATCHES)
        .read(claude_page!("opus-4-5"), NOV25),
    claude("claude-opus-4-6", M_CLAUDE, 128_000, CLAUDE_PATCHES)
        .read(claude_page!("opus-4-6"), NOV25),
    claude("claude-opus-4-7", M_CLAUDE, 128_000, CLAUDE_HIGH_RES)
        .read(claude_page!("opus-4-7"), NOV23),
    claude("claude-opus-4-8", M_CLAUDE, 128_000, CLAUDE_HIGH_RES)
        .read(claude_page!("opus-4-8"), NOV25),
    claude("claude-haiku-4", 200_000, 64_000, CLAUDE_PATCHES).read(CLAUDE_MODELS, NOV25),
    claude("claude-opus-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES).read(claude_page!("opus-5"), NOV25),
    claude("claude-sonnet-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES)
        .read(claude_page!("sonnet-5"), NOV25),
    claude("claude-haiku-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES)
        .read(claude_page!("haiku-5-5"), NOV25),
    claude("claude-fable-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES)
        .read(claude_page!("fable-5"), NOV25),
    // Claude Mythos 5 shares Claude Fable 5's specifications (Fable 5's page says so).
    claude("claude-mythos-5", M_CLAUDE, 128_000, CLAUDE_HIGH_RES)
        .read(claude_page!("fable-5"), NOV25),
    // Google. The `gemini` family default is Gemini 2.0 Flash's limits.
    gemini("gemini", M, 8_192, GEMINI_CROPS).read(gemini_page!("gemini-2.0-flash"), NOV25),
    gemini("gemini-pro", 32_768, 8_192, ImageRule::Flat { tokens: 258 })
        .read(gemini_page!("gemini-1.0-pro"), NOV23),
    gemini(
        "gemini-1.0-pro",
        32_768,
        8_192,
        ImageRule::Flat { tokens: 258 },
    )
    .read(gemini_page!("gemini-1.0-pro"), NOV23),
    gemini("gemini-1.5-pro", 2_097_152, 8_192, GEMINI_CROPS)
        .read(gemini_page!("gemini-1.5-pro"), NOV22),
    gemini("gemini-2.5", M, 65_536, GEMINI_CROPS).read(gemini_page!("gemini-2.5-pro"), NOV22),
    gemini("gemini-3", M, 65_536, ImageRule::Flat { tokens: 1_120 })
        .read(gemini_page!("gemini-3-pro-preview"), NOV25),
    // Open models, counted with the public encoding closest to their own vocabulary.
    open("llama-3", Meta, 8_192, 8_192, CL100K).read(llama_page!("meta-llama-3"), NOV22),
    open("llama-3.1", Meta, 131_072, 8_192, CL100K).read(llama_page!("llama3_1"), NOV22),
    open("llama-3.2", Meta, 131_072, 8_192, CL100K).read(llama_page!("llama3_2"), NOV22),
    open("llama-3.3", Meta, 131_072, 8_192, CL100K).read(llama_page!("llama3_3"), NOV22),
    open("llama-4", Meta, M, 8_192, O200K).read(llama_page!("llama4"), NOV22),
    open("llama-4-scout", Meta, 10_485_760, 8_192, O200K).read(llama_page!("llama4"), NOV22),
    open("qwen", Alibaba, 32_768, 8_192, CL100K).read(QWEN_MODELS, NOV22),
    open("qwen-plus", Alibaba, 131_072, 8_192, CL100K).read(QWEN_MODELS, NOV23),
    open("qwen-turbo", Alibaba, 1_000_000, 8_192, CL100K).read(QWEN_MODELS, NOV23),
    open("qwen-long", Alibaba, 10_000_000, 8_192, CL100K).read(QWEN_MODELS, NOV23),
    open("qwen2", Alibaba, 131_072, 8_192, CL100K).read(QWEN_MODELS, NOV23),
    open("qwen2.5", Alibaba, 131_072, 8_192, CL100K).read(QWEN_MODELS, NOV22),
    open("qwen3", Alibaba, 131_072, 32_768, CL100K).read(QWEN_MODELS, NOV22),
    open("qwq", Alibaba, 131_072, 32_768, CL100K).read(QWEN_MODELS, NOV23),
    open("mistral", Mistral, 32_768, 8_192, O200K).read(MISTRAL_MODELS, NOV22),
    open("mistral-large", Mistral, 131_072, 8_192, O200K).read(MISTRAL_MODELS, NOV22),
    open("mistral-medium", Mistral, 131_072, 8_192, O200K).read(MISTRAL_MODELS, NOV22),
    open("mistral-small", Mistral, 131_072, 8_192, O200K).read(MISTRAL_MODELS, NOV22),
    open("mistral-nemo", Mistral, 131_072, 8_192, O200K).read(MISTRAL_MODELS, NOV23),
    open("ministral", Mistral, 131_072, 8_192, O200K).read(MISTRAL_MODELS, NOV23),
    open("mixtral-8x7b", Mistral, 32_768, 8_192, O200K).read(MISTRAL_MODELS, NOV23),
    open("mixtral-8x22b", Mistral, 65_536, 8_192, O200K).read(MISTRAL_MODELS, NOV23),
    open("pixtral", Mistral, 131_072, 8_192, O200K).read(MISTRAL_MODELS, NOV23),
    open("magistral", Mistral, 131_072, 40_000, O200K).read(MISTRAL_MODELS, NOV23),
    open("devstral", Mistral, 131_072, 8_192, O200K).read(MISTRAL_MODELS, NOV23),
    open("codestral", Mistral, 262_144, 8_192, O200K).read(MISTRAL_MODELS, NOV22),
    open("deepseek", DeepSeek, 131_072, 8_192, CL100K).read(DEEPSEEK_MODELS, NOV22),
    open("deepseek-reasoner", DeepSeek, 131_072, 65_536, CL100K).read(DEEPSEEK_MODELS, NOV22),
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

/// Whether a model keeps the thinking of earlier turns in its context. Anthropic's rule
/// (https://platform.claude.com/docs/en/build-with-claude/extended-thinking, read 2026-11-28):
/// Claude Opus 4.5 and later Opus models, Sonnet 4.6 and later Sonnet models, and the models
/// after them keep every earlier thinking block; Opus 4.1 and earlier Opus models, Sonnet 4.5
/// and earlier Sonnet models, and Haiku models through Haiku 4.5 keep only the thinking of the
/// current assistant turn (since the last user message that is not only tool results), and
/// drop the rest from the context window.
pub fn keeps_earlier_thinking(provider: Provider, entry: &str) -> bool {
    provider != Provider::Anthropic
        || !matches!(
            entry,
            "claude"
                | "claude-3-5-sonnet"
                | "claude-3-5-haiku"
                | "claude-3-7-sonnet"
                | "claude-sonnet-4"
                | "claude-opus-4"
                | "claude-haiku-4"
        )
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
        earlier_thinking: keeps_earlier_thinking(entry.provider, entry.name),
        source: Some(Cow::Borrowed(entry.source)),
        checked: Some(Cow::Borrowed(entry.checked)),
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

/// The registry's names nearest to `model` (at most three, the nearest first): those within
/// a few edits of it (a third of its length, at least two), for an error that suggests what
/// was meant.
///
/// ```
/// use context_keeper::model::nearest_models;
/// assert_eq!(nearest_models("gpt4o").first(), Some(&"gpt-4o"));
/// assert!(nearest_models("nope").is_empty());
/// ```
pub fn nearest_models(model: &str) -> Vec<&'static str> {
    let name = normalize(model);
    let most = (name.chars().count() / 3).max(2);
    let mut near: Vec<(usize, &'static str)> = MODELS
        .iter()
        .map(|entry| (edit_distance(&name, entry.name), entry.name))
        .filter(|&(d, _)| d <= most)
        .collect();
    near.sort();
    near.dedup_by(|a, b| a.1 == b.1);
    near.into_iter().take(3).map(|(_, name)| name).collect()
}

/// Levenshtein distance by characters (one row kept).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = i;
        let mut left = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row.get(j + 1).copied().unwrap_or(usize::MAX);
            let cost = diagonal + usize::from(ca != *cb);
            let next = cost.min(up.saturating_add(1)).min(left + 1);
            diagonal = up;
            if let Some(slot) = row.get_mut(j + 1) {
                *slot = next;
            }
            left = next;
        }
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
    }
    row.last().copied().unwrap_or(0)
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
        encoding: default_encoding(),
        exact: false,
        framing: Framing::CHAT,
        images: GPT_4O_TILES,
        known: false,
        earlier_thinking: true,
        source: None,
        checked: None,
    })
}

/// Every model the built-in registry holds, in its order (by provider, the newest families
/// first), each as [`model_info`] gives it: what a model picker lists.
///
/// ```
/// use context_keeper::model::{models, model_info};
/// let gpt_4o = models().find(|m| m.name == "gpt-4o").expect("in the registry");
/// assert_eq!(gpt_4o, model_info("gpt-4o"));
/// ```
pub fn models() -> impl Iterator<Item = ModelInfo> {
    MODELS.iter().map(info)
}

/// A caller's own figures for a model's limits; each one set wins over the registry's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// The context window in tokens, input and output together.
    pub context_window: Option<u32>,
    /// The most tokens one reply may have.
    pub max_output: Option<u32>,
}

/// The window a conversation is kept within, and the room its reply may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The context window in tokens, input and output together.
    pub context_window: u32,
    /// The most tokens one reply may have, at most the window; `None` when neither the caller
    /// nor the registry knows it.
    pub max_output: Option<u32>,
}

/// The window to manage `model`'s conversation in: the caller's `limits` win over the
/// registry's figures, field by field. `None` when there is no window to go by: the model is
/// unknown (or not named) and the caller gave none, or gave 0. An unknown model's
/// conservative default in [`model_info`] is for counting, never for deciding what to cut.
///
/// ```
/// use context_keeper::model::{resolve_window, Limits, Window};
/// let gpt = resolve_window(Some("gpt-4o"), Limits::default());
/// assert_eq!(gpt, Some(Window { context_window: 128_000, max_output: Some(16_384) }));
/// let mine = Limits { context_window: Some(32_000), max_output: None };
/// assert_eq!(resolve_window(Some("gpt-4o"), mine).map(|w| w.context_window), Some(32_000));
/// assert_eq!(resolve_window(Some("my-llm"), Limits::default()), None);
/// assert_eq!(
///     resolve_window(Some("my-llm"), mine),
///     Some(Window { context_window: 32_000, max_output: None })
/// );
/// ```
pub fn resolve_window(model: Option<&str>, limits: Limits) -> Option<Window> {
    let entry = model.and_then(lookup);
    let context_window = limits
        .context_window
        .or(entry.map(|e| e.context_window))
        .filter(|&w| w > 0)?;
    let max_output = limits.max_output.or(entry.map(|e| e.max_output));
    Some(Window {
        context_window,
        max_output: max_output.map(|m| m.min(context_window)),
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
/// neither the default is [`default_encoding`] (o200k_base where the build has it).
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
        None => Ok(default_encoding()),
    }
}

/// The encoding a count with neither an encoding nor a model uses: o200k_base (every current
/// OpenAI model's), or cl100k_base in a build that has only that one (`context-keeper/cl100k`).
pub fn default_encoding() -> Encoding {
    match (
        Encoding::O200kBase.is_built(),
        Encoding::Cl100kBase.is_built(),
    ) {
        (false, true) => Encoding::Cl100kBase,
        _ => Encoding::O200kBase,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn image_rules_read_back_what_they_write_and_name_the_field_at_fault() {
        let mut rules: Vec<ImageRule> = MODELS.iter().map(|e| e.images).collect();
        rules.extend([
            ImageRule::Area {
                divisor: 750,
                max_side: 1568,
            },
            ImageRule::Flat { tokens: 1_120 },
            ImageRule::Patches {
                size: 14,
                max_patches: 6_000,
                max_side: None,
                multiplier: Multiplier(50),
            },
        ]);
        for rule in rules {
            let json = serde_json::to_value(rule).unwrap();
            assert_eq!(ImageRule::from_json(&json), Ok(rule), "{json}");
            assert_eq!(serde_json::from_value::<ImageRule>(json).unwrap(), rule);
        }
        let err = |v: serde_json::Value| ImageRule::from_json(&v).unwrap_err();
        let e = err(json!({"rule": "tiles", "base": 85, "perTile": "170"}));
        assert_eq!((e.field, e.out_of_range), ("perTile", false));
        assert_eq!(e.to_string(), "perTile: expected a whole number of tokens");
        assert_eq!(err(json!({"rule": "tiles", "base": 85})).field, "perTile");
        assert_eq!(
            err(json!({"rule": "crops", "perTile": -1})).field,
            "perTile"
        );
        assert_eq!(err(json!({"rule": "flat", "tokens": 1.5})).field, "tokens");
        assert_eq!(
            err(json!({"rule": "area", "divisor": 750})).field,
            "maxSide"
        );
        let e = err(json!({"rule": "patches", "size": 14, "maxPatches": 9, "multiplier": -1}));
        assert_eq!((e.field, e.out_of_range), ("multiplier", true));
        let e = err(json!({"rule": "patches", "size": 14, "maxPatches": 9, "multiplier": "2"}));
        assert_eq!((e.field, e.out_of_range), ("multiplier", false));
        let e = err(json!({"rule": "tilez"}));
        assert_eq!((e.field, e.out_of_range), ("rule", true));
        assert_eq!(err(json!({"base": 85})).field, "rule");
        assert_eq!(err(json!([1])).field, "");
        // Null is absent; fields of other rules are ignored.
        assert_eq!(
            ImageRule::from_json(&json!({"rule": "flat", "tokens": 9, "maxSide": null, "x": 1})),
            Ok(ImageRule::Flat { tokens: 9 })
        );
        let message = serde_json::from_value::<ImageRule>(json!({"rule": "crops"}))
            .unwrap_err()
            .to_string();
        assert_eq!(message, "perTile: expected a whole number of tokens");
    }

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

    /// The domains a provider publishes its model pages on.
    fn provider_domains(provider: Provider) -> &'static [&'static str] {
        match provider {
            Provider::OpenAi => &["openai.com"],
            Provider::Anthropic => &["claude.com", "anthropic.com"],
            Provider::Google => &["ai.google.dev"],
            Provider::Meta => &["llama.com"],
            Provider::Alibaba => &["alibabacloud.com"],
            Provider::Mistral => &["mistral.ai"],
            Provider::DeepSeek => &["deepseek.com"],
            Provider::Unknown => &[],
        }
    }

    /// Days since 1970-01-01 of a valid `YYYY-MM-DD` date (Howard Hinnant's days_from_civil).
    fn days_from_civil(date: &str) -> Option<i64> {
        let mut parts = date.split('-');
        let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || (y.len(), m.len(), d.len()) != (4, 2, 2) {
            return None;
        }
        let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let month_days = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        if !(1..=12).contains(&m) || d < 1 || d > month_days[(m - 1) as usize] {
            return None;
        }
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        Some(era * 146_097 + doe - 719_468)
    }

    /// The day the registry's figures were last read from the providers' pages.
    const LAST_REVIEWED: &str = "2026-11-28";

    #[test]
    fn every_entry_names_its_providers_page_and_the_day_it_was_read() {
        // NOTE: a fixed day, not the machine's clock (a clock set back would fail the test, one
        // set forward would pass a date typed wrong): raised when the registry is read again.
        let reviewed = days_from_civil(LAST_REVIEWED).unwrap();
        assert_eq!(days_from_civil("1970-01-01"), Some(0));
        assert_eq!(days_from_civil("2026-11-25"), Some(20_782));
        assert_eq!(days_from_civil("2026-02-29"), None);
        assert_eq!(days_from_civil("2026-1-05"), None);
        for entry in MODELS {
            let host = entry
                .source
                .strip_prefix("https://")
                .and_then(|rest| rest.split('/').next())
                .unwrap_or_else(|| panic!("{}: not an https URL: {}", entry.name, entry.source));
            let domains = provider_domains(entry.provider);
            assert!(
                domains
                    .iter()
                    .any(|d| host == *d || host.ends_with(&format!(".{d}"))),
                "{}: {host} is not a domain of {:?}",
                entry.name,
                entry.provider
            );
            assert!(
                !entry.source.contains(char::is_whitespace),
                "{}",
                entry.name
            );
            let day = days_from_civil(entry.checked)
                .unwrap_or_else(|| panic!("{}: bad date {}", entry.name, entry.checked));
            // The registry's first figures were read in November 2026.
            assert!(
                (days_from_civil("2026-11-01").unwrap()..=reviewed).contains(&day),
                "{}: checked {} is before the registry or after its last review ({LAST_REVIEWED})",
                entry.name,
                entry.checked
            );
            let info = model_info(entry.name);
            assert_eq!(info.source.as_deref(), Some(entry.source));
            assert_eq!(info.checked.as_deref(), Some(entry.checked));
        }
        let unknown = model_info("my-finetune");
        assert_eq!((unknown.source, unknown.checked), (None, None));
    }

    #[test]
    fn the_callers_window_wins_and_an_unknown_model_has_none() {
        let none = Limits::default();
        assert_eq!(
            resolve_window(Some("claude-opus-4-6"), none),
            Some(Window {
                context_window: 1_000_000,
                max_output: Some(128_000)
            })
        );
        // Each field on its own: the caller's window with the registry's output limit.
        let window_only = Limits {
            context_window: Some(32_000),
            max_output: None,
        };
        assert_eq!(
            resolve_window(Some("gpt-4o"), window_only),
            Some(Window {
                context_window: 32_000,
                max_output: Some(16_384)
            })
        );
        let output_only = Limits {
            context_window: None,
            max_output: Some(1_000),
        };
        assert_eq!(
            resolve_window(Some("openai/gpt-4o-2024-08-06"), output_only),
            Some(Window {
                context_window: 128_000,
                max_output: Some(1_000)
            })
        );
        // A reply never gets more room than the window.
        assert_eq!(
            resolve_window(Some("gpt-5"), window_only).and_then(|w| w.max_output),
            Some(32_000)
        );
        // No window to go by: management is off, whatever the conservative counting default.
        assert_eq!(resolve_window(Some("my-finetune"), none), None);
        assert_eq!(resolve_window(Some("my-finetune"), output_only), None);
        assert_eq!(resolve_window(None, none), None);
        let zero = Limits {
            context_window: Some(0),
            max_output: None,
        };
        assert_eq!(resolve_window(Some("gpt-4o"), zero), None);
        assert_eq!(
            resolve_window(None, window_only),
            Some(Window {
                context_window: 32_000,
                max_output: None
            })
        );
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
