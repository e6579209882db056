//! The usage a provider reported for one call (`recordUsage`): read from whichever shape the
//! provider or SDK gives it in, and added to a session's state with the calibration it gives.

use serde_json::{Map, Value};

use crate::context::state::SessionState;
use crate::counting::MAX_CALIBRATION_FACTOR;
use crate::messages::type_name;

/// One call's usage, as the provider counted it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Input tokens, as the report gives them.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the provider's cache.
    pub cache_read: u64,
    /// Input tokens written to it.
    pub cache_write: u64,
    /// Every input token the provider read, cached or not: what the keeper's estimate is
    /// compared with (Anthropic's `input_tokens` leaves the cached ones out; every other
    /// report's input includes them).
    pub read_in_all: u64,
}

/// A usage report that is not one: the path of the field at fault (`usage.inputTokens`) and
/// what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError {
    /// Where, from `usage`.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

/// Reads a usage report: ours (`{ inputTokens, outputTokens, cacheReadTokens,
/// cacheWriteTokens }`), the providers' own (`input_tokens`, `prompt_tokens`,
/// `cache_read_input_tokens`, `prompt_tokens_details.cached_tokens`, ...) and the AI SDK's
/// (`inputTokenDetails`, and the provider level's nested `inputTokens: { total, cacheRead, ... }`).
/// An absent or `null` figure is 0.
///
/// # Errors
/// A figure that is not a whole number, or a nested one whose parent is not an object.
pub fn read(usage: &Map<String, Value>) -> Result<Reported, UsageError> {
    let field = |names: &[&str]| -> Result<u64, UsageError> {
        for name in names {
            match usage.get(*name) {
                None | Some(Value::Null) => continue,
                Some(value) => return whole(value, || format!("usage.{name}")),
            }
        }
        Ok(0)
    };
    let nested = |outer: &str, inner: &str| -> Result<u64, UsageError> {
        match usage.get(outer) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Object(details)) => match details.get(inner) {
                None | Some(Value::Null) => Ok(0),
                Some(value) => whole(value, || format!("usage.{outer}.{inner}")),
            },
            Some(other) => Err(UsageError {
                path: format!("usage.{outer}"),
                reason: format!("expected an object, found {}", type_name(other)),
            }),
        }
    };
    // NOTE: the AI SDK's provider-level usage (LanguageModelV3Usage) nests the input's
    // figures: `inputTokens: { total, noCache, cacheRead, cacheWrite }`.
    let v3 = matches!(usage.get("inputTokens"), Some(Value::Object(_)));
    let input = match v3 {
        true => nested("inputTokens", "total")?,
        false => field(&[
            "inputTokens",
            "input_tokens",
            "prompt_tokens",
            "promptTokens",
        ])?,
    };
    let output = match usage.get("outputTokens") {
        Some(Value::Object(_)) => nested("outputTokens", "total")?,
        _ => field(&[
            "outputTokens",
            "output_tokens",
            "completion_tokens",
            "completionTokens",
        ])?,
    };
    // NOTE: each report names its cache reads one way: Anthropic's and ours at the top,
    // OpenAI's chat (`prompt_tokens_details`) and Responses (`input_tokens_details`) API and
    // the AI SDK (`inputTokenDetails`, or the provider-level `inputTokens`) nested.
    let cache_read = field(&[
        "cacheReadTokens",
        "cache_read_input_tokens",
        "cachedInputTokens",
    ])?
    .max(nested("prompt_tokens_details", "cached_tokens")?)
    .max(nested("input_tokens_details", "cached_tokens")?)
    .max(nested("inputTokenDetails", "cacheReadTokens")?)
    .max(match v3 {
        true => nested("inputTokens", "cacheRead")?,
        false => 0,
    });
    let cache_write = field(&["cacheWriteTokens", "cache_creation_input_tokens"])?
        .max(nested("inputTokenDetails", "cacheWriteTokens")?)
        .max(match v3 {
            true => nested("inputTokens", "cacheWrite")?,
            false => 0,
        });
    let anthropic = usage.contains_key("input_tokens")
        && (usage.contains_key("cache_read_input_tokens")
            || usage.contains_key("cache_creation_input_tokens"));
    Ok(Reported {
        input,
        output,
        cache_read,
        cache_write,
        read_in_all: match anthropic {
            true => input + cache_read + cache_write,
            false => input,
        },
    })
}

/// A whole number of tokens, or what is wrong with `value` (at `path()`).
fn whole(value: &Value, path: impl FnOnce() -> String) -> Result<u64, UsageError> {
    let reason = match value {
        Value::Number(n) => match n.as_u64() {
            Some(n) => return Ok(n),
            None => format!("expected a whole number of tokens, found {n}"),
        },
        other => format!("expected a number, found {}", type_name(other)),
    };
    Err(UsageError {
        path: path(),
        reason,
    })
}

/// Adds `reported` to the session's figures; when the session's last output was estimated
/// (its model counted by proxy), the provider's count of it calibrates the next counts (the
/// ratio bounded by [`MAX_CALIBRATION_FACTOR`] either way).
pub fn record(state: &mut SessionState, reported: &Reported) {
    let keeper = &mut state.keeper;
    if let Some(estimated) = keeper.estimated_tokens.filter(|n| *n > 0) {
        if reported.read_in_all > 0 {
            let ratio = (reported.read_in_all as f64 / estimated as f64)
                .clamp(1.0 / MAX_CALIBRATION_FACTOR, MAX_CALIBRATION_FACTOR);
            keeper.calibration_ppm = Some((ratio * 1e6).round() as u64);
        }
    }
    let usage = &mut keeper.stats.usage;
    usage.calls += 1;
    usage.input_tokens += reported.input;
    usage.output_tokens += reported.output;
    usage.cache_read_tokens += reported.cache_read;
    usage.cache_write_tokens += reported.cache_write;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reported(value: Value) -> Result<Reported, UsageError> {
        read(value.as_object().unwrap())
    }

    #[test]
    fn every_provider_shape_is_read() {
        // (the report, and its input, output, cache reads, cache writes, and every input token
        // read)
        let cases = [
            (
                json!({"inputTokens": 100, "outputTokens": 20, "cacheReadTokens": 30, "cacheWriteTokens": 5}),
                (100, 20, 30, 5, 100),
            ),
            // OpenAI chat completions: the cached tokens are nested, and within the input
            (
                json!({"prompt_tokens": 900, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 512}}),
                (900, 12, 512, 0, 900),
            ),
            // OpenAI Responses
            (
                json!({"input_tokens": 700, "output_tokens": 9, "input_tokens_details": {"cached_tokens": 256}}),
                (700, 9, 256, 0, 700),
            ),
            // Anthropic: `input_tokens` leaves the cached tokens out
            (
                json!({"input_tokens": 40, "output_tokens": 7, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 60}),
                (40, 7, 1000, 60, 1100),
            ),
            // the AI SDK's LanguageModelUsage, and its provider level's nested figures
            (
                json!({"inputTokens": 300, "outputTokens": 4, "inputTokenDetails": {"cacheReadTokens": 200, "cacheWriteTokens": 10}}),
                (300, 4, 200, 10, 300),
            ),
            (
                json!({"inputTokens": {"total": 500, "noCache": 100, "cacheRead": 350, "cacheWrite": 50}, "outputTokens": {"total": 30, "text": 30}}),
                (500, 30, 350, 50, 500),
            ),
            // absent and null figures are 0
            (json!({"inputTokens": null}), (0, 0, 0, 0, 0)),
        ];
        for (usage, expected) in cases {
            let r = reported(usage.clone()).unwrap();
            let got = (
                r.input,
                r.output,
                r.cache_read,
                r.cache_write,
                r.read_in_all,
            );
            assert_eq!(got, expected, "{usage}");
        }
    }

    #[test]
    fn a_figure_that_is_not_a_whole_number_is_named_by_its_path() {
        let at = |value: Value| reported(value).unwrap_err();
        assert_eq!(at(json!({"inputTokens": 1.5})).path, "usage.inputTokens");
        assert_eq!(
            at(json!({"output_tokens": "7"})),
            UsageError {
                path: "usage.output_tokens".into(),
                reason: "expected a number, found a string".into()
            }
        );
        assert_eq!(
            at(json!({"prompt_tokens_details": 3})).path,
            "usage.prompt_tokens_details"
        );
        assert_eq!(
            at(json!({"inputTokens": {"total": -1}})).path,
            "usage.inputTokens.total"
        );
    }

    #[test]
    fn an_estimated_session_is_calibrated_within_the_bounds_and_its_figures_add_up() {
        let mut state = SessionState::default();
        state.keeper.estimated_tokens = Some(1000);
        record(
            &mut state,
            &Reported {
                input: 1100,
                output: 5,
                read_in_all: 1100,
                ..Reported::default()
            },
        );
        assert_eq!(state.keeper.calibration_ppm, Some(1_100_000));
        record(
            &mut state,
            &Reported {
                input: 1_000_000,
                read_in_all: 1_000_000,
                ..Reported::default()
            },
        );
        assert_eq!(
            state.keeper.calibration_ppm,
            Some((MAX_CALIBRATION_FACTOR * 1e6).round() as u64)
        );
        let usage = &state.keeper.stats.usage;
        assert_eq!(
            (usage.calls, usage.input_tokens, usage.output_tokens),
            (2, 1_001_100, 5)
        );
        // an exact session (nothing estimated) is not calibrated
        let mut exact = SessionState::default();
        record(
            &mut exact,
            &Reported {
                input: 10,
                read_in_all: 10,
                ..Reported::default()
            },
        );
        assert_eq!(exact.keeper.calibration_ppm, None);
    }
}
