//! [`Counter`]: what counting remembers between counts, owned by whoever counts. It holds a
//! memo of per-message counts ([`CountCache`]) and the calibrations recorded from provider usage
//! reports, so two owners (two context keepers, two tests) never share either.
//!
//! The free functions of [`crate::counting`] and the JS exports count with one default counter
//! ([`with_default_counter`]), held only for the synchronous length of one step and never
//! while JavaScript runs.

use std::sync::{Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;

use super::cache::{CacheStats, CountCache, MessageKey, DEFAULT_CAPACITY};
use super::conversation::{
    count_bounded, count_conversation, counts_exactly, messages_options, setup, CountMessagesError,
    Counting, MessagesCount, Request,
};
use super::memo::Memo;
use super::options::{self, model_info_with, CountMessagesOptions, ModelOverrides, OptionsError};
use crate::messages::{parse_messages_value, Conversation};
use crate::model::normalize;

/// Models whose calibration is kept; a new one beyond this drops the oldest.
pub const MAX_CALIBRATIONS: usize = 256;

/// The calibration ratio may move an estimate by at most this factor either way.
pub const MAX_CALIBRATION_FACTOR: f64 = 2.0;

/// What [`Counter::calibrate`] recorded.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// The registry name the ratio is kept under (the entry that matched).
    pub model: String,
    /// actual / estimated, within [1/2, 2]; 1 when nothing was recorded.
    pub ratio: f64,
    /// False for a model counted exactly (no calibration applies) or a zero estimate.
    pub applied: bool,
}

/// A conversation counter with its own memo of per-message counts and its own calibrations.
/// The memo changes only the cost of a count; the calibrations scale the totals of the models
/// counted approximately.
///
/// ```
/// use context_keeper::counting::{CountMessagesOptions, Counter};
/// use context_keeper::messages::{parse_messages, MessagesOptions};
/// let input = serde_json::json!([{"role": "user", "content": "hello world"}]);
/// let conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
/// let mut counter = Counter::new();
/// let options = CountMessagesOptions::default();
/// assert_eq!(counter.count(&conv, &options).unwrap().total, 9);
/// assert_eq!(counter.within_limit(&conv, 8, &options).unwrap(), None);
/// // The second and third counts found the message in the memo.
/// assert_eq!((counter.cache_stats().misses, counter.cache_stats().hits), (1, 1));
/// ```
#[derive(Debug)]
pub struct Counter {
    cache: CountCache,
    /// What the host's message objects taught the counts ([`super::ListCount`]).
    memo: Memo,
    /// Ratios by normalized model name, oldest first.
    calibrations: Vec<(String, f64)>,
}

impl Default for Counter {
    fn default() -> Self {
        Counter::new()
    }
}

impl Counter {
    /// A counter whose memo holds [`DEFAULT_CAPACITY`] messages at most.
    pub fn new() -> Counter {
        Counter::with_capacity(DEFAULT_CAPACITY)
    }

    /// A counter whose memo holds `capacity` messages at most (at least 2).
    pub fn with_capacity(capacity: usize) -> Counter {
        Counter {
            cache: CountCache::new(capacity),
            memo: Memo::default(),
            calibrations: Vec::new(),
        }
    }

    /// Counts `conv`, scaled by its model's calibration when one was recorded here.
    ///
    /// # Errors
    /// An option or a field of the request object that is not what it must be, or an
    /// encoding this build left out.
    pub fn count(
        &mut self,
        conv: &Conversation,
        options: &CountMessagesOptions,
    ) -> Result<MessagesCount, CountMessagesError> {
        Ok(self.count_bounded(conv, options, None)?.0)
    }

    /// The (calibrated) total of `conv` if it is at most `limit` tokens, else `None`,
    /// tokenizing no further than the message that crossed the limit.
    ///
    /// # Errors
    /// As [`Counter::count`].
    pub fn within_limit(
        &mut self,
        conv: &Conversation,
        limit: u64,
        options: &CountMessagesOptions,
    ) -> Result<Option<u64>, CountMessagesError> {
        let (count, stopped) = self.count_bounded(conv, options, Some(limit))?;
        Ok((!stopped).then_some(count.total))
    }

    /// Counts `conv` as [`Counter::count`] does, stopping as soon as the calibrated running
    /// total passes `stop_above`; the flag says whether it stopped (the count is then partial).
    ///
    /// # Errors
    /// As [`Counter::count`].
    pub fn count_bounded(
        &mut self,
        conv: &Conversation,
        options: &CountMessagesOptions,
        stop_above: Option<u64>,
    ) -> Result<(MessagesCount, bool), CountMessagesError> {
        let ratio = self.ratio_for(conv, options);
        count_bounded(conv, options, &mut self.cache, ratio, stop_above)
    }

    /// Counts `conv` as [`Counter::count`] does, taking each message whose key is known
    /// (`known[i]`, from an earlier count of a message that read the same) from the cache
    /// without reading it again; returns every message's key, for the next count.
    ///
    /// # Errors
    /// As [`Counter::count`].
    pub fn count_keyed(
        &mut self,
        conv: &Conversation,
        options: &CountMessagesOptions,
        known: &[Option<MessageKey>],
    ) -> Result<(MessagesCount, Vec<MessageKey>), CountMessagesError> {
        let mut counting = self.start(conv, options, None)?;
        let mut keys = Vec::with_capacity(conv.messages().len());
        for (i, message) in conv.messages().iter().enumerate() {
            let key = match known.get(i).copied().flatten() {
                Some(key) if counting.add_known(message.role(), key, &mut self.cache) => key,
                _ => counting.add(message, &mut self.cache)?,
            };
            keys.push(key);
        }
        Ok((counting.finish(conv.format()).0, keys))
    }

    /// Starts a count of the conversation `head` belongs to, one message at a time, with this
    /// counter's calibration for its model: see [`Counting::start`]. Add its messages with
    /// [`Counting::add`] and [`Counting::add_known`], handing them [`Counter::cache_mut`].
    ///
    /// # Errors
    /// As [`Counting::start`].
    pub fn start(
        &mut self,
        head: &Conversation,
        options: &CountMessagesOptions,
        stop_above: Option<u64>,
    ) -> Result<Counting, CountMessagesError> {
        let ratio = self.ratio_for(head, options);
        Counting::start(head, options, ratio, stop_above, &mut self.cache)
    }

    /// The memo of per-message counts, for a [`Counting`] in progress.
    pub fn cache_mut(&mut self) -> &mut CountCache {
        &mut self.cache
    }

    /// What the host's message objects taught the counts, by the ids it keeps with them: for
    /// [`super::Listed`] and [`super::ListCount`].
    pub fn memo_mut(&mut self) -> &mut Memo {
        &mut self.memo
    }

    /// The calibration ratio recorded here for the model `conv` is counted for, if any applies
    /// (only to models counted approximately).
    pub fn ratio_for(&self, conv: &Conversation, options: &CountMessagesOptions) -> Option<f64> {
        let model = Request::read(conv, options).ok()?.model;
        let info = setup(model, conv.format, options).model?;
        if counts_exactly(&info) {
            return None;
        }
        let key = normalize(&info.name);
        self.calibrations
            .iter()
            .find(|(k, _)| *k == key)
            .map(|&(_, r)| r)
    }

    /// Records the tokens a provider reported (`actual`) for a request this crate estimated at
    /// `estimated` (the uncalibrated total), for a model counted approximately. Later counts
    /// for that model scale their total by actual / estimated (at most a factor of
    /// [`MAX_CALIBRATION_FACTOR`] either way); the latest call wins. Exact models are left
    /// alone. At most [`MAX_CALIBRATIONS`] models are kept, the oldest dropped first.
    pub fn calibrate(
        &mut self,
        model: &str,
        overrides: &ModelOverrides,
        estimated: u64,
        actual: u64,
    ) -> Calibration {
        let info = model_info_with(model, overrides);
        let key = normalize(&info.name);
        if counts_exactly(&info) || estimated == 0 {
            return Calibration {
                model: key,
                ratio: 1.0,
                applied: false,
            };
        }
        let ratio = (actual as f64 / estimated as f64)
            .clamp(1.0 / MAX_CALIBRATION_FACTOR, MAX_CALIBRATION_FACTOR);
        self.calibrations.retain(|(k, _)| *k != key);
        if self.calibrations.len() >= MAX_CALIBRATIONS {
            self.calibrations.remove(0);
        }
        self.calibrations.push((key.clone(), ratio));
        Calibration {
            model: key,
            ratio,
            applied: true,
        }
    }

    /// [`Counter::calibrate`] from a provider's usage report, as JS passes it: `{ model,
    /// inputTokens, estimated? }` or `{ model, inputTokens, messages, tools?, format?,
    /// encoding?, models? }` (then the estimate is the uncalibrated count of `messages` with
    /// those options, through this counter's memo).
    ///
    /// # Errors
    /// A field of the report that is missing or not what it must be, named by its place
    /// (`usage.inputTokens`, `usage.messages[2].content`); nothing is recorded then.
    pub fn calibrate_usage(&mut self, usage: &Value) -> Result<Calibration, CountMessagesError> {
        let Value::Object(obj) = usage else {
            return Err(options::wrong("usage", "an object", Some(usage)).into());
        };
        // NOTE: `null` is absent for an optional field; JS hands `NaN` and the infinities over
        // as `null`, and the bindings name those before they get here.
        let tokens = |key: &str| -> Result<Option<u64>, OptionsError> {
            match obj.get(key).filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                    options::wrong(format!("usage.{key}"), "a whole number of tokens", Some(v))
                }),
            }
        };
        let model = match obj.get("model") {
            Some(Value::String(model)) => model.clone(),
            other => return Err(options::wrong("usage.model", "a string", other).into()),
        };
        let actual = tokens("inputTokens")?.ok_or_else(|| {
            let found = obj.get("inputTokens");
            options::wrong("usage.inputTokens", "a whole number of tokens", found)
        })?;
        if actual == 0 {
            // No request has no input; a 0 is a usage field read wrong, and would halve counts.
            return Err(OptionsError::OutOfRange {
                path: "usage.inputTokens".to_owned(),
                expected: "a positive number of tokens",
                found: "0".to_owned(),
            }
            .into());
        }
        let mut bag = obj.clone();
        let messages = bag.shift_remove("messages").filter(|v| !v.is_null());
        for key in ["inputTokens", "estimated"] {
            bag.shift_remove(key);
        }
        let options = CountMessagesOptions::from_value(&Value::Object(bag)).map_err(in_usage)?;
        let estimated = match (tokens("estimated")?, messages) {
            (Some(estimated), _) => estimated,
            (None, Some(messages)) => {
                let conv = parse_messages_value(messages, &messages_options(options.format))
                    .map_err(|e| {
                        // NOTE: paths start at the list (`messages[2]`) or at the request object
                        // (`system`), which is `usage.messages` here.
                        let prefix = if e.path.starts_with("messages") {
                            "usage."
                        } else {
                            "usage.messages."
                        };
                        e.under(prefix)
                    })?;
                count_conversation(&conv, &options, &mut self.cache)?.total
            }
            (None, None) => {
                return Err(options::wrong(
                    "usage.estimated",
                    "a whole number of tokens (or usage.messages)",
                    None,
                )
                .into())
            }
        };
        Ok(self.calibrate(&model, &options.models, estimated, actual))
    }

    /// Empties the memo of per-message counts and resets its statistics, and forgets what the
    /// host's messages taught ([`Counter::memo_mut`]).
    pub fn clear_cache(&mut self) {
        self.cache.clear();
        self.memo.clear();
        // NOTE: the memo of text counts is the thread's, shared with the tiers: cleared too,
        // so that a count after this one tokenizes afresh (what a cold count measures).
        crate::text_counts::clear();
    }

    /// Forgets every calibration.
    pub fn clear_calibrations(&mut self) {
        self.calibrations.clear();
    }

    /// The memo's hits, misses and tokenizer calls since it was made or cleared.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }
}

/// An error in the options part of a usage report, at its place there: `usage.encoding`, not
/// `options.encoding`.
fn in_usage(mut err: OptionsError) -> OptionsError {
    let (OptionsError::WrongType { path, .. }
    | OptionsError::UnknownName { path, .. }
    | OptionsError::OutOfRange { path, .. }) = &mut err;
    if let Some(rest) = path.strip_prefix("options") {
        *path = format!("usage{rest}");
    }
    err
}

// NOTE: wasm32-unknown-unknown is single-threaded, and the lock is held only while `f` runs,
// which never calls into JavaScript, so it never waits; a poisoned lock (impossible with
// panic = "abort") is used as it is.
static DEFAULT: Mutex<Option<Counter>> = Mutex::new(None);

/// Runs `f` with the default counter: the one the free functions of [`crate::counting`] and
/// the JS exports count with. `f` must not call into JavaScript (which could re-enter the
/// package) nor call this function again: the counter is locked while `f` runs.
pub fn with_default_counter<T>(f: impl FnOnce(&mut Counter) -> T) -> T {
    let mut guard = DEFAULT.lock().unwrap_or_else(PoisonError::into_inner);
    f(guard.get_or_insert_with(Counter::new))
}
