//! The keeper's options, and the budget they make of a window.

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use crate::context::compact::{self, CompactOptions};
use crate::context::evict::EvictOptions;
use crate::context::flush::{resolve, FlushOptions};
use crate::context::offload::{self, OffloadOptions};
use crate::context::prune::PruneOptions;
use crate::counting::CountMessagesOptions;
use crate::messages::Format;

/// Default prune/evict threshold: this share of the window.
pub const DEFAULT_PRUNE_AT: f64 = 0.85;
/// Default compaction threshold: this share of the window (or window - reserve, if lower).
pub const DEFAULT_COMPACT_AT: f64 = 0.95;
/// A decision leaves at most this share of the window (less when the turns to come need more
/// room).
pub const DEFAULT_PRUNE_TARGET: f64 = 0.70;
/// A compaction leaves at most this share of the window (less when the turns to come need
/// more room). NOTE: was 0.50; the room for the turns to come now decides, and this bounds it.
pub const DEFAULT_COMPACT_TARGET: f64 = 0.70;
/// A prune/evict decision is not re-made within this many assistant turns of the last one,
/// unless the count is over the compaction threshold.
pub const DEFAULT_MIN_TURNS_BETWEEN: usize = 4;
/// The thresholds: each a share of the window up to 1 (1 is the whole window), or tokens above
/// 1. How they combine with the reserve into the budget: [`KeeperOptions::budget`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Thresholds {
    /// Prune and evict above this. Default 0.85.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prune: f64,
    /// Flush and compact above this (or above window - reserve, if lower). Default 0.95.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub compact: f64,
    /// The most a decision leaves (low watermark): it leaves room for `minTurnsBetween` + 1
    /// turns of the size the newest had, and at most this. Default 0.70.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prune_target: f64,
    /// The most a compaction leaves (low watermark): it keeps the recent messages that fit with
    /// room for two turns, and at most this. Default 0.70.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub compact_target: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            prune: DEFAULT_PRUNE_AT,
            compact: DEFAULT_COMPACT_AT,
            prune_target: DEFAULT_PRUNE_TARGET,
            compact_target: DEFAULT_COMPACT_TARGET,
        }
    }
}

/// A keeper's configuration (the store, the callbacks and the timeouts are the driver's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct KeeperOptions {
    /// The model: its tokenizer counts, and the registry gives its window.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// The context window; wins over the registry's.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub context_window: Option<u64>,
    /// Read the conversation in this format instead of detecting it (the bindings take it
    /// by name, as every export does).
    #[serde(skip)]
    pub format: Option<Format>,
    /// The thresholds.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub thresholds: Thresholds,
    /// A prune/evict decision is not re-made within this many assistant turns of the last
    /// one, unless the count is over the compaction threshold. Default 4.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub min_turns_between: usize,
    /// Offloading (the session id is the call's).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub offload: OffloadOptions,
    /// Pruning.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub prune: PruneOptions,
    /// Evicting file contents.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub evict: EvictOptions,
    /// Compaction (the session, model, window and time are the keeper's).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub compact: compact::CompactCoreOptions,
    /// Anthropic prompt caching: `cache_control` on the system prompt and on the last message
    /// of the stable prefix.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub cache_breakpoints: bool,
    /// `false` turns management off: prepare returns the input as it is.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub enabled: bool,
    /// The reserve (`reserveTokens`, default 20,000), the flush margin and prompt.
    #[serde(flatten)]
    pub flush: FlushOptions,
}

impl Default for KeeperOptions {
    fn default() -> Self {
        KeeperOptions {
            model: None,
            context_window: None,
            format: None,
            thresholds: Thresholds::default(),
            min_turns_between: DEFAULT_MIN_TURNS_BETWEEN,
            offload: OffloadOptions::default(),
            prune: PruneOptions::default(),
            evict: EvictOptions::default(),
            compact: CompactOptions::default(),
            cache_breakpoints: false,
            enabled: true,
            flush: FlushOptions::default(),
        }
    }
}

/// The token figures a keeper works to, from its options and the model's window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// The context window.
    pub window: u64,
    /// Prune and evict above this.
    pub prune_at: u64,
    /// Compact above this; after prepare the count is at most this: the budget.
    pub compact_at: u64,
    /// The memory flush runs above this (once per cycle).
    pub flush_at: u64,
    /// A decision leaves at most this.
    pub prune_target: u64,
    /// A compaction leaves at most this.
    pub compact_target: u64,
    /// Tool results over this many tokens are offloaded: `offload.limitTokens`, by default
    /// 20,000 or an eighth of the window when that is less (a 20,000-token result would be
    /// most of a 32k window's budget, and prune would only trim it turns later).
    pub offload_at: u64,
}

impl KeeperOptions {
    /// The first figure of these options out of range, with its path from the options
    /// (`thresholds.prune`) and what is wrong with it: a context window of 0, a threshold
    /// that is not above 0 (NaN included), a flush figure ([`FlushOptions::invalid`], at the
    /// top: `reserveTokens`).
    ///
    /// [`FlushOptions::invalid`]: crate::context::flush::FlushOptions::invalid
    pub fn invalid(&self) -> Option<(String, String)> {
        if self.context_window == Some(0) {
            let reason = "expected a positive number of tokens, found 0";
            return Some(("contextWindow".to_owned(), reason.to_owned()));
        }
        let t = &self.thresholds;
        let named = [
            ("prune", t.prune),
            ("compact", t.compact),
            ("pruneTarget", t.prune_target),
            ("compactTarget", t.compact_target),
        ];
        if let Some((name, value)) = named.into_iter().find(|(_, v)| v.is_nan() || *v <= 0.0) {
            let reason = format!(
                "expected a share of the window (above 0, up to 1) or tokens (above 1), found {value}"
            );
            return Some((format!("thresholds.{name}"), reason));
        }
        // NOTE: the flush's figures sit at the top of the options (flattened).
        let (name, reason) = self.flush.invalid()?;
        Some((name.to_owned(), reason))
    }

    /// An error for options that would leave management off without saying so, or fail at the
    /// first prepare: a model the registry does not know, with no `contextWindow` to manage it
    /// in (the error names the model and the registry's nearest names), or a model whose
    /// encoding this build lacks. (A keeper with neither a model nor a window, or with
    /// `enabled: false`, is off by the caller's choice, and says so in every report.)
    pub fn check_model(&self) -> Result<(), String> {
        let (true, Some(model)) = (self.enabled, self.model.as_deref()) else {
            return Ok(());
        };
        // NOTE: an entry with one encoding's tables cannot count the other's models (the
        // estimator-only entry counts every model by the estimate).
        if let Some(encoding) = crate::model::encoding_for_model(model) {
            if !encoding.is_built() && !crate::count::ESTIMATOR_ONLY {
                return Err(format!(
                    "{model:?} counts with {encoding}, which this entry of context-keeper does \
                     not have; use \"context-keeper\" (every encoding) or \
                     \"context-keeper/{}\"",
                    encoding.feature()
                ));
            }
        }
        if self.context_window.is_some() || crate::model::model_info(model).known {
            return Ok(());
        }
        let near = crate::model::nearest_models(model);
        let hint = match near.as_slice() {
            [] => String::new(),
            [one] => format!("Did you mean {one:?}? "),
            many => format!(
                "Did you mean one of {}? ",
                many.iter()
                    .map(|m| format!("{m:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Err(format!(
            "unknown model {model:?}: its context window is not known, so nothing would be \
             managed. {hint}Pass contextWindow for a model the registry does not list \
             (listModels() lists those it does)"
        ))
    }

    /// The budget, or why there is none (management is then off).
    pub fn budget(&self) -> Result<Budget, String> {
        let window = match (self.context_window, self.model.as_deref()) {
            (Some(window), _) => window,
            (None, Some(model)) => {
                let info = crate::model::model_info(model);
                if !info.known {
                    return Err(format!(
                        "the context window of {model:?} is not known; pass contextWindow"
                    ));
                }
                u64::from(info.context_window)
            }
            (None, None) => return Err("no model and no contextWindow".to_owned()),
        };
        if window == 0 {
            return Err("contextWindow is 0".to_owned());
        }
        let t = &self.thresholds;
        // NOTE: the reserve is at most a quarter of the window (a 20,000-token reserve would
        // leave a 32k window 12k), and each threshold sits at least 5% of the window under the
        // one above it, so that every band (hold, prune, compact) exists on every window.
        let step = window / 20;
        let reserve = resolve(self.flush.reserve_tokens, window).min(window / 4);
        let compact_at = resolve(t.compact, window)
            .min(window.saturating_sub(reserve))
            .max(1);
        let prune_at = resolve(t.prune, window).min(compact_at.saturating_sub(step));
        let prune_target = resolve(t.prune_target, window).min(prune_at.saturating_sub(step));
        let compact_target = resolve(t.compact_target, window).min(prune_target);
        let flush_at = compact_at.saturating_sub(resolve(self.flush.flush_margin, window));
        let offload_at = self
            .offload
            .limit_tokens
            .unwrap_or_else(|| offload::DEFAULT_LIMIT_TOKENS.min(window / 8))
            .max(1);
        Ok(Budget {
            window,
            offload_at,
            prune_at,
            compact_at,
            flush_at,
            prune_target,
            compact_target,
        })
    }

    pub(super) fn count_options(&self, format: Format) -> CountMessagesOptions {
        CountMessagesOptions {
            model: self.model.clone(),
            format: Some(format),
            ..CountMessagesOptions::default()
        }
    }
}
