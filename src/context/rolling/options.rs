//! The rolling window's options: what stays raw, the summary's bound, the sections' budgets.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use crate::context::fold::{DEFAULT_MAX_PINNED, DEFAULT_TRANSCRIPT_TOKENS};

/// Iterations kept raw by default.
pub const DEFAULT_KEEP_ITERATIONS: usize = 5;
/// The summary's bound by default, in tokens.
pub const DEFAULT_MAX_SUMMARY_TOKENS: u64 = 2_000;
/// Iterations between two summaries by default.
pub const DEFAULT_RESUMMARIZE_EVERY: usize = 10;
/// The instructions are never cut below this many tokens by default.
pub const DEFAULT_MIN_INSTRUCTIONS_TOKENS: u64 = 1_000;
/// Failures the state remembers.
pub(super) const MAX_FAILURES: usize = 8;
/// The version written into every state.
pub const ROLLING_STATE_VERSION: u32 = 1;

/// A budget per section, in tokens. An absent section is not bounded (the summary still is,
/// by `maxSummaryTokens`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SectionBudget {
    /// The first user request.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub goal: Option<u64>,
    /// The summary of the folded iterations (at most `maxSummaryTokens` either way).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub summary: Option<u64>,
    /// The raw iterations.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub recent: Option<u64>,
    /// The system messages and the host's instructions (never cut below
    /// `minInstructionsTokens`).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub instructions: Option<u64>,
}

/// The budget: per section, or a total the sections share (the instructions and the goal take
/// what they need up to a quarter each, the summary reserves its bound up to a quarter, the
/// recent iterations get the rest).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RollingBudget {
    /// The whole prompt, in tokens.
    Total(u64),
    /// Per section.
    Sections(SectionBudget),
}

impl<'de> Deserialize<'de> for RollingBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value {
            Value::Number(n) => n
                .as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e18)
                        .map(|f| f as u64)
                })
                .map(RollingBudget::Total)
                .ok_or_else(|| {
                    D::Error::custom(format!(
                        "expected a whole number of tokens (the total), found {n}"
                    ))
                }),
            Value::Object(_) => serde_json::from_value(value)
                .map(RollingBudget::Sections)
                .map_err(D::Error::custom),
            other => Err(D::Error::custom(format!(
                "expected a number of tokens or {{ goal, summary, recent, instructions }}, found {}",
                match other {
                    Value::String(_) => "a string",
                    Value::Array(_) => "an array",
                    Value::Bool(_) => "a boolean",
                    _ => "null",
                }
            ))),
        }
    }
}

/// Options of the rolling window (the summarizer, the store and the timeouts are the driver's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RollingCoreOptions {
    /// The session: the state and the archives are kept under it.
    pub session_id: String,
    /// The latest iterations kept raw. Default 5; at least 1.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub keep_iterations: usize,
    /// The summary's bound, in tokens. Default 2,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub max_summary_tokens: u64,
    /// Iterations between two summaries. Default 10; at least 1.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub resummarize_every: usize,
    /// The budget: a total in tokens, or one per section.
    #[cfg_attr(
        target_arch = "wasm32",
        tsify(optional, type = "number | SectionBudget")
    )]
    pub budget: Option<RollingBudget>,
    /// The host's instructions (its system prompt), placed first: a system message, or for
    /// Anthropic the request object's `system`.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub instructions: Option<String>,
    /// The instructions are never cut below this many tokens. Default 1,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub min_instructions_tokens: u64,
    /// The summarizer's prompt, replacing compaction's default (`{targetTokens}` is replaced).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prompt: Option<String>,
    /// The model the conversation is for: counts use its tokenizer.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// The transcript given to the summarizer is cut to about this many tokens. Default
    /// 60,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub transcript_tokens: u64,
    /// The time written into a new marker, as the host gives it (the core reads no clock).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub now: Option<String>,
    /// Exact details pinned to a summary at most (within its bound). Default 40; 0 pins none.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub max_pinned: usize,
}

/// The rolling window's options, by the name Rust users know (in TypeScript the package's
/// `RollingOptions` adds the driver's summarizer and store).
pub type RollingOptions = RollingCoreOptions;

impl Default for RollingCoreOptions {
    fn default() -> Self {
        RollingCoreOptions {
            session_id: String::new(),
            keep_iterations: DEFAULT_KEEP_ITERATIONS,
            max_summary_tokens: DEFAULT_MAX_SUMMARY_TOKENS,
            resummarize_every: DEFAULT_RESUMMARIZE_EVERY,
            budget: None,
            instructions: None,
            min_instructions_tokens: DEFAULT_MIN_INSTRUCTIONS_TOKENS,
            prompt: None,
            model: None,
            transcript_tokens: DEFAULT_TRANSCRIPT_TOKENS,
            now: None,
            max_pinned: DEFAULT_MAX_PINNED,
        }
    }
}
