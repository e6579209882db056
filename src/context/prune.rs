//! Tier 2, prune: old tool results are cut to their head and tail, and very old ones cleared
//! to a placeholder. Pure: nothing is stored, the host's history keeps the originals.
//!
//! The rules (OpenClaw's context pruning, SPEC-008): a tool result whose call is older than the
//! last `keepLastAssistantTurns` assistant turns and longer than `softTrimChars` becomes its
//! first `softTrimHeadChars` and last `softTrimTailChars` characters around a line that says
//! what was cut; older than `hardClearAfterTurns` it becomes a placeholder naming the tool and
//! how much was cleared (and, for an offloaded result, the id to read it back with). Only the
//! text of a result changes: its images and files stay, and nothing else of the conversation
//! is touched. `clearAtLeastTokens` holds every edit back until together they free that much,
//! so the prompt prefix moves in steps. Pruning its own output changes nothing.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::offload::pointer_id;
use super::result;
use super::text::{group, utf16_len, utf16_prefix, utf16_suffix};
use super::Turns;
use super::{
    part_mut, result_at, result_sites, Action, Edit, Held, Measure, Original, Report, ResultSite,
    ToolFilter,
};
use crate::messages::{Conversation, Message, PartRef, ResultShape};

/// Options of `pruneMessages`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PruneOptions {
    /// Results of the calls of this many latest assistant turns stay whole. Default 3.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub keep_last_assistant_turns: usize,
    /// Older results longer than this (UTF-16 code units) are soft-trimmed. Default 4,000.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub soft_trim_chars: usize,
    /// Characters kept from the start of a soft-trimmed result. Default 1,500.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub soft_trim_head_chars: usize,
    /// Characters kept from its end. Default 1,500.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub soft_trim_tail_chars: usize,
    /// Results of calls this many assistant turns old or older are cleared to a placeholder.
    /// Default 10; `null` never clears.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub hard_clear_after_turns: Option<usize>,
    /// Prune only when the edits free at least this many tokens together. Default 0.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub clear_at_least_tokens: u64,
    /// Which tools' results may be pruned. Default: every tool.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tools: ToolFilter,
    /// The model, for exact token figures. Default: estimated with o200k_base.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub model: Option<String>,
    /// Prune as of message `horizon`: only results before it, aged as when the conversation
    /// ended there (the keeper's recorded decision; not an option of `pruneMessages`).
    #[serde(skip)]
    pub horizon: Option<usize>,
}

/// Soft-trim results older than this many turns.
pub const DEFAULT_KEEP_LAST_ASSISTANT_TURNS: usize = 3;
/// Soft-trim results longer than this.
pub const DEFAULT_SOFT_TRIM_CHARS: usize = 4_000;
/// Keep this much of the start and of the end.
pub const DEFAULT_SOFT_TRIM_KEEP_CHARS: usize = 1_500;
/// Clear results this many turns old.
pub const DEFAULT_HARD_CLEAR_AFTER_TURNS: usize = 10;

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions {
            keep_last_assistant_turns: DEFAULT_KEEP_LAST_ASSISTANT_TURNS,
            soft_trim_chars: DEFAULT_SOFT_TRIM_CHARS,
            soft_trim_head_chars: DEFAULT_SOFT_TRIM_KEEP_CHARS,
            soft_trim_tail_chars: DEFAULT_SOFT_TRIM_KEEP_CHARS,
            hard_clear_after_turns: Some(DEFAULT_HARD_CLEAR_AFTER_TURNS),
            clear_at_least_tokens: 0,
            tools: ToolFilter::default(),
            model: None,
            horizon: None,
        }
    }
}

/// The line a soft trim leaves between head and tail starts with this.
pub const TRIM_NOTE: &str = "[... trimmed ";
/// A cleared result starts with this.
pub const CLEARED_PREFIX: &str = "[tool result cleared: ";

/// A conversation after pruning.
#[derive(Clone, Debug)]
pub struct Pruned {
    /// The conversation, pruned.
    pub conversation: Conversation,
    /// Indices of the messages that changed.
    pub edited: Vec<usize>,
    /// What was done.
    pub report: Report,
}

/// Whether a result's text is already the output of a prune.
fn was_trimmed(text: &str) -> bool {
    text.contains(&format!("\n{TRIM_NOTE}"))
}

/// The soft trim of `text`: head, a line saying what was cut, tail.
pub fn soft_trim(text: &str, head: usize, tail: usize) -> String {
    let total = utf16_len(text);
    let head_end = utf16_prefix(text, head);
    let tail_start = utf16_suffix(text, tail).max(head_end);
    let (kept_head, kept_tail) = (
        text.get(..head_end).unwrap_or_default(),
        text.get(tail_start..).unwrap_or_default(),
    );
    let cut = total - utf16_len(kept_head) - utf16_len(kept_tail);
    format!(
        "{kept_head}\n{TRIM_NOTE}{} of {} characters of this tool result; the first {} and the last {} are kept ...]\n{kept_tail}",
        group(cut),
        group(total),
        group(utf16_len(kept_head)),
        group(utf16_len(kept_tail)),
    )
}

/// What `action` makes of the result at `site`: the edit and its text, or `None` when it
/// makes none (already done, too short to trim, or no shorter).
fn plan_site(
    conv: &Conversation,
    site: &ResultSite,
    action: Action,
    options: &PruneOptions,
    measure: &Measure,
) -> Option<(ResultShape, String, Edit)> {
    let (shape, read) = result_at(conv, site.at)?;
    let text = read.text;
    let replacement = if action == Action::HardClear {
        if text.starts_with(CLEARED_PREFIX) {
            return None;
        }
        placeholder(site.tool_name.as_deref(), &text)
    } else {
        let soft = utf16_len(&text) > options.soft_trim_chars;
        if !soft || was_trimmed(&text) || pointer_id(&text).is_some() {
            return None;
        }
        soft_trim(
            &text,
            options.soft_trim_head_chars,
            options.soft_trim_tail_chars,
        )
    };
    let before = measure.tokens(&text);
    let after = measure.tokens(&replacement);
    // NOTE: an edit never makes a result longer (a short result under a long placeholder).
    if after >= before {
        return None;
    }
    let original = match pointer_id(&text) {
        Some(id) => Original::Store {
            key: Vec::new(),
            id: id.to_owned(),
        },
        None => Original::History,
    };
    let edit = Edit {
        action,
        message_index: site.at.message,
        part_index: site.at.part,
        tool_name: site.tool_name.clone(),
        tool_call_id: site.call_id.clone(),
        field: None,
        tokens_before: before,
        tokens_after: after,
        estimated: measure.estimated(),
        original,
    };
    Some((shape, replacement, edit))
}

/// The placeholder of a cleared result.
pub fn placeholder(tool: Option<&str>, text: &str) -> String {
    let what = match tool {
        Some(tool) => format!("{tool} returned {} characters", group(utf16_len(text))),
        None => format!("{} characters", group(utf16_len(text))),
    };
    match pointer_id(text) {
        Some(id) => format!(
            "{CLEARED_PREFIX}{what}; the full output is stored as id=\"{id}\", read it with read_offloaded]"
        ),
        None => format!("{CLEARED_PREFIX}{what}, removed to save context]"),
    }
}

/// Prunes `conv`.
pub fn prune(conv: Conversation, options: &PruneOptions) -> Pruned {
    let sites = result_sites(&conv);
    prune_sites(conv, options, &sites, None)
}

/// What pruning made of tool results, by the message that holds each one (its identity: the
/// data a [`Message`] shares with its clones), the part and the action: the text to write and
/// the edit, or `None` when it makes none. A caller that prunes the same messages again (the
/// keeper, with each horizon it tries and on every prepare of a growing history, whose
/// messages it keeps parsed) measures each result once per action. Each entry holds its
/// message, so no other message can take its place in memory; [`PruneMemo::sweep`] drops what
/// was not used since the last sweep.
#[derive(Clone, Debug, Default)]
pub struct PruneMemo {
    entries: HashMap<(usize, usize, Action), Memoized>,
}

#[derive(Clone, Debug)]
struct Memoized {
    /// The message the entry is about: kept alive so that its identity stays its own.
    _message: Message,
    planned: Option<(ResultShape, String, Edit)>,
    used: bool,
}

impl PruneMemo {
    /// An empty memo.
    pub fn new() -> PruneMemo {
        PruneMemo::default()
    }

    fn get(
        &mut self,
        message: &Message,
        part: usize,
        action: Action,
    ) -> Option<Option<(ResultShape, String, Edit)>> {
        let entry = self.entries.get_mut(&(message.identity(), part, action))?;
        entry.used = true;
        Some(entry.planned.clone())
    }

    fn insert(
        &mut self,
        message: &Message,
        part: usize,
        action: Action,
        planned: Option<(ResultShape, String, Edit)>,
    ) {
        let entry = Memoized {
            _message: message.clone(),
            planned,
            used: true,
        };
        self.entries
            .insert((message.identity(), part, action), entry);
    }

    /// Drops every entry not used since the last sweep.
    pub fn sweep(&mut self) {
        self.entries
            .retain(|_, entry| std::mem::take(&mut entry.used));
    }
}

/// [`prune`] with `conv`'s [`result_sites`], which the caller has at hand, and a memo of what
/// earlier prunes of the same conversation with the same options (horizon aside) made.
pub(crate) fn prune_sites(
    conv: Conversation,
    options: &PruneOptions,
    sites: &[ResultSite],
    mut memo: Option<&mut PruneMemo>,
) -> Pruned {
    let measure = Measure::for_model(options.model.as_deref());
    let turns = Turns::until(&conv, options.horizon);
    let before_horizon = |at: PartRef| options.horizon.is_none_or(|h| at.message < h);
    let keep = options.keep_last_assistant_turns;
    let hard = options.hard_clear_after_turns.map(|h| h.max(keep));
    let mut planned: Vec<(PartRef, ResultShape, String, Edit)> = Vec::new();
    for site in sites {
        let age = turns.age(site.call_at);
        if !before_horizon(site.at)
            || age < keep
            || !options.tools.accepts(site.tool_name.as_deref())
        {
            continue;
        }
        let action = match hard.is_some_and(|h| age >= h) {
            true => Action::HardClear,
            false => Action::SoftTrim,
        };
        let message = conv.messages().get(site.at.message);
        let known = match (memo.as_deref_mut(), message) {
            (Some(memo), Some(message)) => memo.get(message, site.at.part, action),
            _ => None,
        };
        let planned_site = match known {
            Some(known) => known,
            None => {
                let planned_site = plan_site(&conv, site, action, options, &measure);
                if let (Some(memo), Some(message)) = (memo.as_deref_mut(), message) {
                    memo.insert(message, site.at.part, action, planned_site.clone());
                }
                planned_site
            }
        };
        if let Some((shape, replacement, mut edit)) = planned_site {
            // NOTE: the memo knows the message, not where it sits now.
            edit.message_index = site.at.message;
            planned.push((site.at, shape, replacement, edit));
        }
    }
    let would_save: u64 = planned
        .iter()
        .map(|(.., e)| e.tokens_before - e.tokens_after)
        .sum();
    let mut report = Report::default();
    let mut conversation = conv;
    let mut edited = Vec::new();
    if would_save < options.clear_at_least_tokens || planned.is_empty() {
        if !planned.is_empty() {
            report.held = Some(Held {
                would_save,
                clear_at_least_tokens: options.clear_at_least_tokens,
            });
        }
        return Pruned {
            conversation,
            edited,
            report,
        };
    }
    for (at, shape, replacement, edit) in planned {
        if let Some((_, value)) = part_mut(&mut conversation, at).and_then(|p| p.result_slot_mut())
        {
            result::write(shape, value, replacement);
            if edited.last() != Some(&at.message) {
                edited.push(at.message);
            }
            report.push(edit);
        }
    }
    Pruned {
        conversation,
        edited,
        report,
    }
}
