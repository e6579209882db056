//! The free functions: counting with the process's default counter
//! ([`with_default_counter`]), which the JS exports share.

use serde_json::Value;

use super::cache::CacheStats;
use super::conversation::{messages_options, CountMessagesError, MessagesCount};
use super::counter::{with_default_counter, Calibration, Counter};
use super::options::{CountMessagesOptions, ModelOverrides};
use crate::messages::{parse_messages_value, Conversation};

/// [`Counter::ratio_for`] with the default counter.
pub fn ratio_for(conv: &Conversation, options: &CountMessagesOptions) -> Option<f64> {
    with_default_counter(|counter| counter.ratio_for(conv, options))
}

/// Counts a conversation given as a JSON value with the default counter (its memo, and the
/// calibration of its model when one was recorded), stopping past `stop_above` tokens; the
/// flag says whether it stopped (the count is then partial).
pub fn count_value(
    value: Value,
    options: &CountMessagesOptions,
    stop_above: Option<u64>,
) -> Result<(MessagesCount, bool), CountMessagesError> {
    let conv = parse_messages_value(value, &messages_options(options.format))?;
    with_default_counter(|counter| counter.count_bounded(&conv, options, stop_above))
}

/// Counts a conversation given as JSON text with the default counter: its memo, and the
/// calibration of its model when one was recorded.
pub fn count_messages_str(
    json: &str,
    options: &CountMessagesOptions,
) -> Result<MessagesCount, CountMessagesError> {
    let value = crate::messages::parse_json(json)?;
    Ok(count_value(value, options, None)?.0)
}

/// [`Counter::within_limit`] on JSON text, with the default counter.
pub fn within_limit_str(
    json: &str,
    limit: u64,
    options: &CountMessagesOptions,
) -> Result<Option<u64>, CountMessagesError> {
    let value = crate::messages::parse_json(json)?;
    let (count, stopped) = count_value(value, options, Some(limit))?;
    Ok((!stopped).then_some(count.total))
}

/// Empties the default counter's memo of per-message counts.
pub fn clear_count_cache() {
    with_default_counter(Counter::clear_cache);
}

/// The default counter's memo statistics.
pub fn count_cache_stats() -> CacheStats {
    with_default_counter(|counter| counter.cache_stats())
}

/// [`Counter::calibrate`] on the default counter.
pub fn calibrate(
    model: &str,
    overrides: &ModelOverrides,
    estimated: u64,
    actual: u64,
) -> Calibration {
    with_default_counter(|counter| counter.calibrate(model, overrides, estimated, actual))
}

/// [`Counter::calibrate_usage`] on the default counter.
pub fn calibrate_usage(usage: &Value) -> Result<Calibration, CountMessagesError> {
    with_default_counter(|counter| counter.calibrate_usage(usage))
}

/// Forgets every calibration of the default counter.
pub fn clear_calibration() {
    with_default_counter(Counter::clear_calibrations);
}
