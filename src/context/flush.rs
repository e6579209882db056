//! The memory flush: before a compaction summarizes older messages away, the host's agent gets
//! one silent turn to save durable facts with its memory tool.
//!
//! It runs once per compaction cycle (the flag is in the session state, so a stateless Worker
//! honours it), when the count crosses `window - reserve - margin`. The reply never enters the
//! conversation: a reply carrying the silent token (or nothing) is dropped, any other goes to
//! the report. Thresholds are tokens above 1, or shares of the window up to 1, so that a
//! 1M-token window flushes at the same share as a 200k one (openclaw #17034: a fixed margin on
//! a large window never fired).

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::state::SessionState;

/// Tokens kept free for the reply and the next turns: 20,000.
pub const DEFAULT_RESERVE_TOKENS: f64 = 20_000.0;
/// How far before the compaction threshold the flush runs: 4,000 tokens.
pub const DEFAULT_FLUSH_MARGIN: f64 = 4_000.0;
/// The token a flush reply carries when there was nothing to save.
pub const DEFAULT_SILENT_TOKEN: &str = "SILENT";

/// The flush prompt; `{silent}` is replaced by the silent token.
pub const DEFAULT_FLUSH_PROMPT: &str = "Pre-compaction memory flush. This conversation is close to its context limit, and its older messages will soon be replaced by a summary. Before that happens, save anything durable that must outlive them with your memory tool: the user's preferences and instructions, decisions and their reasons, names, identifiers, file paths and open tasks. Do not reply to the user. When you are done, or if there is nothing worth saving, reply with exactly {silent}.";

/// A figure in tokens: above 1 a number of tokens, from 0 up to 1 a share of the context window
/// (so `1` is the whole window, never one token).
pub fn resolve(value: f64, window: u64) -> u64 {
    if !value.is_finite() || value <= 0.0 {
        0
    } else if value <= 1.0 {
        (value * window as f64).round() as u64
    } else {
        value.min(u64::MAX as f64) as u64
    }
}

/// Options of the flush (the callback itself is the driver's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FlushOptions {
    /// Tokens kept free for the reply (a share of the window up to 1). Default 20,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub reserve_tokens: f64,
    /// How far before `window - reserve` the flush runs (a share up to 1). Default 4,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub flush_margin: f64,
    /// The prompt; `{silent}` stands for the silent token.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub flush_prompt: Option<String>,
    /// The token of a reply that saved nothing. Default `SILENT`.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub silent_token: String,
}

impl Default for FlushOptions {
    fn default() -> Self {
        FlushOptions {
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            flush_margin: DEFAULT_FLUSH_MARGIN,
            flush_prompt: None,
            silent_token: DEFAULT_SILENT_TOKEN.to_owned(),
        }
    }
}

impl FlushOptions {
    /// The first of the figures (by JSON name) that is neither 0, nor a share of the window
    /// (up to 1), nor tokens (above 1): a negative number or NaN, which [`resolve`] reads as 0.
    pub fn invalid_figure(&self) -> Option<(&'static str, f64)> {
        [
            ("reserveTokens", self.reserve_tokens),
            ("flushMargin", self.flush_margin),
        ]
        .into_iter()
        .find(|(_, value)| value.is_nan() || *value < 0.0)
    }

    /// [`FlushOptions::invalid_figure`], said: its JSON name and what is wrong with it.
    pub fn invalid(&self) -> Option<(&'static str, String)> {
        self.invalid_figure().map(|(name, value)| {
            let reason = format!(
                "expected 0, a share of the window (up to 1) or tokens (above 1), found {value}"
            );
            (name, reason)
        })
    }

    /// The count from which the flush runs, for a window.
    pub fn threshold(&self, window: u64) -> u64 {
        window
            .saturating_sub(resolve(self.reserve_tokens, window))
            .saturating_sub(resolve(self.flush_margin, window))
    }

    /// The prompt the flush callback is given.
    pub fn prompt(&self) -> String {
        self.flush_prompt
            .as_deref()
            .unwrap_or(DEFAULT_FLUSH_PROMPT)
            .replace("{silent}", &self.silent_token)
    }
}

/// What the flush callback is given (beside the messages, which the driver passes as they
/// are).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct FlushRequest {
    /// The flush prompt.
    pub prompt: String,
    /// The silent token.
    pub silent_token: String,
    /// The conversation's count.
    pub tokens: u64,
    /// The count the flush runs from.
    pub threshold: u64,
    /// The compaction cycle (the number of the compaction the flush comes before).
    pub cycle: u32,
}

/// Whether a flush is due: past the threshold and not yet run this cycle. `force` skips the
/// threshold (a compaction is about to run, so this is the last chance of the cycle).
pub fn request(
    options: &FlushOptions,
    state: &SessionState,
    tokens: u64,
    window: u64,
    force: bool,
) -> Option<FlushRequest> {
    let threshold = options.threshold(window);
    if state.flushed() || (!force && tokens < threshold) {
        return None;
    }
    Some(FlushRequest {
        prompt: options.prompt(),
        silent_token: options.silent_token.clone(),
        tokens,
        threshold,
        cycle: state.cycle(),
    })
}

/// How the flush went, as the driver saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlushOutcome {
    /// The callback returned (its reply, as text; `None` for no text).
    Replied(Option<String>),
    /// It threw, rejected or timed out.
    Failed(String),
}

/// What the report says of a flush.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct FlushReport {
    /// The cycle it ran in.
    pub cycle: u32,
    /// Whether the reply was dropped (it carried the silent token, or was empty).
    pub silent: bool,
    /// A reply that was not silent: for the host to look at; it never enters the messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub reply: Option<String>,
    /// Why the callback failed; the flush is not retried this cycle (the compaction goes on).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub failure: Option<String>,
}

/// Records a flush in the state (it ran this cycle, whatever its outcome) and reports it.
pub fn record(
    request: &FlushRequest,
    outcome: FlushOutcome,
    state: &mut SessionState,
) -> FlushReport {
    state.flushed_before = Some(request.cycle);
    match outcome {
        FlushOutcome::Replied(reply) => {
            let silent = reply
                .as_deref()
                .is_none_or(|r| r.trim().is_empty() || r.contains(&request.silent_token));
            FlushReport {
                cycle: request.cycle,
                silent,
                reply: if silent { None } else { reply },
                failure: None,
            }
        }
        FlushOutcome::Failed(reason) => FlushReport {
            cycle: request.cycle,
            silent: false,
            reply: None,
            failure: Some(reason),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_take_tokens_or_fractions() {
        let o = FlushOptions::default();
        assert_eq!(o.threshold(200_000), 176_000);
        let frac = FlushOptions {
            reserve_tokens: 0.1,
            flush_margin: 0.02,
            ..FlushOptions::default()
        };
        assert_eq!(frac.threshold(1_000_000), 880_000);
        assert_eq!(o.threshold(10_000), 0, "a small window saturates");
        assert_eq!(resolve(f64::NAN, 100), 0);
        // 1 is the whole window, never one token; tokens start above it
        assert_eq!(resolve(1.0, 40_000), 40_000);
        assert_eq!(resolve(0.99, 40_000), 39_600);
        assert_eq!(resolve(2.0, 40_000), 2);
    }

    #[test]
    fn a_flush_runs_once_per_cycle_and_silent_replies_are_dropped() {
        let o = FlushOptions::default();
        let mut state = SessionState::default();
        assert!(request(&o, &state, 100_000, 200_000, false).is_none());
        let req = request(&o, &state, 180_000, 200_000, false).unwrap();
        assert_eq!(req.cycle, 1);
        assert!(req.prompt.ends_with("reply with exactly SILENT."));
        let r = record(
            &req,
            FlushOutcome::Replied(Some("ok SILENT".into())),
            &mut state,
        );
        assert!(r.silent && r.reply.is_none());
        assert!(
            request(&o, &state, 190_000, 200_000, true).is_none(),
            "once a cycle"
        );
        // the next cycle begins with the next compaction
        state.push(crate::context::state::Overlay {
            marker: crate::messages::CompactionMarker {
                number: 1,
                ..Default::default()
            },
            ..Default::default()
        });
        let req = request(&o, &state, 0, 200_000, true).unwrap();
        assert_eq!(req.cycle, 2);
        let r = record(
            &req,
            FlushOutcome::Replied(Some("Saved 3 facts.".into())),
            &mut state,
        );
        assert_eq!(
            (r.silent, r.reply.as_deref()),
            (false, Some("Saved 3 facts."))
        );
        let mut fresh = SessionState::default();
        let r = record(&req, FlushOutcome::Failed("boom".into()), &mut fresh);
        assert_eq!(r.failure.as_deref(), Some("boom"));
        assert!(fresh.flushed_before.is_some());
    }
}
