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

use serde::{Deserialize, Serialize};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::offload::pointer_id;
use super::recovery::READ_TOOL;
use super::result;
use super::text::{cap_line, group, utf16_len, utf16_prefix, utf16_suffix};
use super::Turns;
use super::{
    part_mut, result_at, result_sites, Action, Edit, Held, Measure, Original, Report, ResultSite,
    ToolFilter,
};
use crate::messages::{Conversation, PartRef, ResultShape};

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

/// What a trim or a clear keeps beside its note: the id of the stored copy of the whole
/// result (the keeper's; `pruneMessages` stores nothing), and the lines (numbered from 1) that
/// later turns used, each cut to `line_chars`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kept<'a> {
    /// The id `read_offloaded` reads the whole result by.
    pub id: Option<&'a str>,
    /// Lines of the result to keep, by number, in order.
    pub lines: &'a [u32],
    /// Each kept line is cut to this many characters (UTF-16 code units).
    pub line_chars: usize,
}

/// A trim keeps at most this many cited lines (besides its head and tail).
pub const MAX_KEPT_LINES: usize = 30;

/// The clause that names a stored copy.
fn stored_clause(id: &str) -> String {
    format!("the full output is stored as id=\"{id}\", read it with {READ_TOOL}")
}

/// The kept lines of `text` (those of `kept.lines` that lie in `from..=to`), as `L<n>: line`.
fn kept_lines(text: &str, kept: &Kept<'_>, from: u32, to: u32) -> Vec<String> {
    let mut wanted = kept
        .lines
        .iter()
        .copied()
        .filter(|&n| n >= from && n <= to)
        .peekable();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i as u32 + 1;
        let Some(&next) = wanted.peek() else { break };
        if n < next {
            continue;
        }
        wanted.next();
        if out.len() < MAX_KEPT_LINES {
            out.push(format!("L{n}: {}", cap_line(line, kept.line_chars.max(1))));
        }
    }
    out
}

/// "the line" or "the N lines".
fn the_lines(n: usize) -> String {
    match n {
        1 => "the line".to_owned(),
        n => format!("the {} lines", group(n)),
    }
}

/// The soft trim of `text`: head, a line saying what was cut, tail.
pub fn soft_trim(text: &str, head: usize, tail: usize) -> String {
    trim(text, head, tail, &Kept::default())
}

/// The trim of `text`: its first `head` and last `tail` characters around a line that says
/// what was cut (and where the whole is, when `kept` names a stored copy), followed by the
/// lines of the cut part that `kept` asks for, numbered.
pub fn trim(text: &str, head: usize, tail: usize, kept: &Kept<'_>) -> String {
    let total = utf16_len(text);
    let head_end = utf16_prefix(text, head);
    let tail_start = utf16_suffix(text, tail).max(head_end);
    let (kept_head, kept_tail) = (
        text.get(..head_end).unwrap_or_default(),
        text.get(tail_start..).unwrap_or_default(),
    );
    let cut = total - utf16_len(kept_head) - utf16_len(kept_tail);
    // NOTE: the lines wholly inside the cut part: after the head's last line feed, before
    // the tail's first line.
    let first_cut = kept_head.matches('\n').count() as u32
        + 1
        + u32::from(!kept_head.is_empty() && !kept_head.ends_with('\n'));
    let last_cut = text
        .get(..tail_start)
        .map_or(0, |t| t.matches('\n').count() as u32);
    let lines = kept_lines(text, kept, first_cut, last_cut);
    let mut note = format!(
        "{TRIM_NOTE}{} of {} characters of this tool result; the first {} and the last {} are kept",
        group(cut),
        group(total),
        group(utf16_len(kept_head)),
        group(utf16_len(kept_tail)),
    );
    if !lines.is_empty() {
        note.push_str(&format!(
            ", and {} later turns used, by number",
            the_lines(lines.len())
        ));
    }
    if let Some(id) = kept.id {
        note.push_str("; ");
        note.push_str(&stored_clause(id));
    }
    let mut out = format!("{kept_head}\n{note} ...]\n");
    if !lines.is_empty() {
        for line in &lines {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str("[...]\n");
    }
    out.push_str(kept_tail);
    out
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
    clear(tool, text, &Kept::default())
}

/// The placeholder of a cleared result: what was cleared, where the whole is (the stored copy
/// `kept` names, or the one a pointer names), and the lines `kept` asks for, numbered.
pub fn clear(tool: Option<&str>, text: &str, kept: &Kept<'_>) -> String {
    let what = match tool {
        Some(tool) => format!("{tool} returned {} characters", group(utf16_len(text))),
        None => format!("{} characters", group(utf16_len(text))),
    };
    let lines = kept_lines(text, kept, 1, u32::MAX);
    let mut out = format!("{CLEARED_PREFIX}{what}");
    match kept.id.or_else(|| stored_id(text)) {
        Some(id) => {
            out.push_str("; ");
            out.push_str(&stored_clause(id));
        }
        None => out.push_str(", removed to save context"),
    }
    if lines.is_empty() {
        out.push(']');
        return out;
    }
    out.push_str(&format!(
        "; kept: {} later turns used, by number]",
        the_lines(lines.len())
    ));
    for line in &lines {
        out.push('\n');
        out.push_str(line);
    }
    out
}

/// The id of the stored copy a pointer, a trim or a cleared result names, when `text` is one.
pub fn stored_id(text: &str) -> Option<&str> {
    if let Some(id) = pointer_id(text) {
        return Some(id);
    }
    let note = if text.starts_with(CLEARED_PREFIX) {
        text.lines().next()?
    } else {
        let at = text.find(&format!("\n{TRIM_NOTE}"))?;
        text.get(at + 1..)?.lines().next()?
    };
    let rest = note.get(note.find("stored as id=\"")? + "stored as id=\"".len()..)?;
    rest.get(..rest.find('"')?)
}

/// Prunes `conv`.
pub fn prune(conv: Conversation, options: &PruneOptions) -> Pruned {
    let sites = result_sites(&conv);
    prune_sites(conv, options, &sites)
}

/// [`prune`] with `conv`'s [`result_sites`], which the caller has at hand.
pub(crate) fn prune_sites(
    conv: Conversation,
    options: &PruneOptions,
    sites: &[ResultSite],
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
        if let Some((shape, replacement, edit)) = plan_site(&conv, site, action, options, &measure)
        {
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
