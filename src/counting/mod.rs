//! Counting a conversation: per message, per role and per kind, with the framing a provider
//! adds, tool definitions, images by their provider's rule, a bounded memo of per-message
//! counts, and an optional calibration against the tokens a provider reported.
//!
//! The memo and the calibrations are what counting remembers between counts; both live in a
//! [`Counter`], owned by whoever counts. The free functions below (and the JS exports) count
//! with one default counter ([`with_default_counter`]).
//!
//! What is counted, and how:
//! - Framing (`overhead`): per message `framing.perMessage` plus the role's tokens; a message's
//!   `name` (OpenAI) adds its tokens plus `framing.perName`; `framing.replyPriming` once per
//!   request. This is OpenAI's published accounting (3 + role per message, 1 + name per name,
//!   3 to prime the reply); other providers do not publish theirs and the same rule estimates.
//! - Text, refusals and compaction markers (`text`); reasoning text (`reasoning`); encrypted
//!   reasoning, one token per [`REDACTED_CHARS_PER_TOKEN`] characters of its data (estimated).
//! - Tool calls (`toolCalls`): name and arguments (OpenAI's `arguments` text; other formats'
//!   `input` as compact JSON), plus [`TOOL_CALL_FRAMING`] overhead (estimated).
//! - Tool results (`toolResults`): their text, JSON content as compact JSON; a result inside a
//!   content array (Anthropic, AI SDK) adds [`TOOL_CALL_FRAMING`] overhead (estimated); images
//!   inside results count as `images`.
//! - Images (`images`): by the model's [`ImageRule`](crate::model::ImageRule): OpenAI's
//!   tiles (prices per model family) or 32-pixel patches times a multiplier, Anthropic's
//!   28-pixel patches, Gemini's 768-pixel crops or flat price; dimensions come from the part
//!   (`width`/`height`) or the header of inline base64 data. Unknown size: a 1024x1024 image
//!   under tiles and crops (765 for GPT-4o at high/auto detail; low detail is `base` and
//!   exact), the full patch budget under patches (1,568 for Claude). An image of unknown size
//!   makes the count not `exact`. Base64 is never counted as text.
//! - Files, documents and audio (`files`): a text document's text (Anthropic `source.type`
//!   `text` or `content`, with its title and context), else [`DEFAULT_FILE_TOKENS`] each
//!   (estimated).
//! - Parts of unknown types: their JSON text as `text` (estimated).
//! - Tool definitions (`tools`, and in `overhead`): see the `tools` module, estimated; for an
//!   Anthropic model with tools, also the tool use system prompt Anthropic adds
//!   ([`anthropic_tool_prompt`]: 346 tokens for Claude 4 with `tool_choice` auto).
//!
//! A request object's own fields are read and checked: `model` (a string, or the AI SDK's
//! model object with its `modelId`), `system` (see
//! [`parse_messages`](crate::messages::parse_messages)), `tools`, and `tool_choice` (the AI
//! SDK's `toolChoice`); the options win over them. A field of the wrong type is an error
//! naming it, never ignored.
//!
//! `exact` is true only when the model's encoding is its own tokenizer (and is the one used)
//! and nothing in the request was estimated. With no model named, the count is OpenAI's
//! accounting with `o200k_base` (or the encoding named): `exact` for OpenAI messages, never for
//! Anthropic messages (Claude's tokenizer is not public), and for AI SDK messages (whose
//! provider is unknown) only when the caller named the encoding. A build without tables
//! (`context-keeper/lite`, [`ESTIMATOR_ONLY`]) counts every text with the estimator, and no
//! count of it is `exact`.
//!
//! AI SDK `UIMessage`s (`parts`, as `useChat` holds them) count as `convertToModelMessages`
//! would send them: text, reasoning, files, tool calls with their results (output, error text
//! or denial), and the framing of the assistant and tool messages each step becomes; sources,
//! `step-start` and `data-*` parts count nothing (a data part makes the count not `exact`, as
//! the host may convert it). An assistant's top-level `refusal` (OpenAI) counts as `text`.

mod cache;
mod conversation;
mod counter;
mod global;
mod image;
mod list;
mod memo;
mod options;
mod tally;
mod tools;
mod zod;

pub(crate) use cache::{message_key, IdentityHasher, KeyMap};
pub use cache::{CacheStats, CountCache, MessageKey, DEFAULT_CAPACITY};
pub(crate) use conversation::counts_exactly;
pub use conversation::{
    count_conversation, messages_options, within_limit, CountMessagesError, Counting, MessagesCount,
};
pub use counter::{
    with_default_counter, Calibration, Counter, MAX_CALIBRATIONS, MAX_CALIBRATION_FACTOR,
};
pub use global::{
    calibrate, calibrate_usage, clear_calibration, clear_count_cache, count_cache_stats,
    count_messages_str, count_value, ratio_for, within_limit_str,
};
pub use image::{
    area_tokens, crop_tokens, patch_count, tile_tokens, AREA_MAX_TOKENS, DEFAULT_FILE_TOKENS,
    DEFAULT_IMAGE_SIDE,
};
pub use list::{ListCount, Listed};
pub use memo::{Learnt, Memo, MEMO_CAPACITY};
pub use options::{
    model_info_with, models_with, CountMessagesOptions, ModelOverride, ModelOverrides, OptionsError,
};
pub use tally::{ByKind, Tally, REDACTED_CHARS_PER_TOKEN, TOOL_CALL_FRAMING};
pub use tools::{anthropic_tool_prompt, ToolChoice, SCHEMA_KEYS};
pub use zod::{close_objects, OPAQUE_OBJECT_TOKENS};

#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod tests;
