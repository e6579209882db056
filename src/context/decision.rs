//! The keeper's standing decision: which old tool results (and file-write inputs) are cut, and
//! how, so that the prompt fits with room for several turns, keeps what the agent uses, and
//! loses nothing (DESIGN.md, "What to keep").
//!
//! A decision is made at a horizon (the latest tool call with its result) and recorded as a
//! list of [`Cut`]s in the session state; every later prepare re-applies the same cuts, so the
//! prompt prefix stays byte-identical until the next decision. Each cut names the call, what
//! is done ([`Action`]), the id of the stored copy of what it removes, a hash of the text it was
//! made on (a result the host changed is left alone), and the lines it keeps.
//!
//! What a new decision cuts is chosen greedily from a ladder of steps, cheapest in value first,
//! until the estimated count is at or under the target:
//! 1. the contents of file writes older than the kept turns (the file holds them);
//! 2. results the agent never used later: trimmed to head and tail, then cleared, oldest first;
//! 3. results it used (their details are in its later messages, [`super::usage`]): trimmed to
//!    head, tail and the lines it cited, then cleared to the cited lines, then cleared, those
//!    used longest ago first.
//!
//! Results of the latest `keepLastAssistantTurns` turns are never cut. Every cut's copy is
//! saved before the cut is made: the driver stores [`Cut::save`]'s record (the offload record,
//! [`super::recovery::RecordHeader`]) and only confirmed cuts enter the decision.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use super::evict::{self, EvictOptions};
use super::offload::{self, offload_id, offload_key, pointer_id, OffloadOptions, Offloaded};
use super::prune::{self, stored_id, Kept, PruneOptions, CLEARED_PREFIX};
use super::recovery::{sha256_hex, RecordHeader};
use super::result;
use super::text::{line_count, utf16_len};
use super::usage::{self, UsageIndex};
use super::{part_at, result_at, Action, Edit, Measure, Original, Report, ResultSite, Save, Turns};
use crate::messages::{Conversation, Message, PairingGraph, PartRef};

/// One cut of a standing decision, as the session state records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cut {
    /// The tool call whose result (or, for [`Action::EvictInput`], whose input) is cut.
    pub call: String,
    /// What is done.
    pub action: Action,
    /// The id of the stored copy of what the cut removes.
    pub id: String,
    /// XXH3-64 (16 hex digits) of the text the cut was decided on.
    pub hash: String,
    /// The lines a trim or a clear keeps (numbered from 1), the ones later turns used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<u32>,
    /// The argument an input cut replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl Cut {
    /// How deep the cut goes: an offload or trim 1, a clear that keeps lines 2, a clear 3.
    fn level(&self) -> u8 {
        level_of(self.action, !self.lines.is_empty())
    }
}

fn level_of(action: Action, lines: bool) -> u8 {
    match action {
        Action::Offload | Action::SoftTrim => 1,
        Action::HardClear if lines => 2,
        Action::HardClear | Action::EvictInput | Action::EvictResult => 3,
    }
}

fn hash_hex(text: &str) -> String {
    format!("{:016x}", xxh3_64(text.as_bytes()))
}

/// What a cut needs to know besides the conversation: how trims are shaped, and the session
/// its copies are stored under.
#[derive(Clone, Debug)]
pub struct Shape<'a> {
    /// The prune options (head and tail of a trim, kept turns, which tools).
    pub prune: &'a PruneOptions,
    /// The evict options (which tools write files, their fields).
    pub evict: &'a EvictOptions,
    /// The offload options (the limit, the preview; its `lineChars` cuts kept lines).
    pub offload: &'a OffloadOptions,
    /// The session.
    pub session_id: &'a str,
    /// Token figures.
    pub measure: Measure,
}

/// The tokens of a text before and after a cut.
#[derive(Clone, Copy, Debug)]
struct Figures {
    before: u64,
    after: u64,
}

/// What earlier prepares made of the same messages, by message identity (the data a
/// [`Message`] shares with its clones): the hash, tokens, details and id of each result, and the
/// replacement of each cut. Each entry holds its message, so no other message can take its
/// place in memory; [`DecisionMemo::sweep`] drops what was not used since the last sweep.
#[derive(Clone, Debug, Default)]
pub struct DecisionMemo {
    facts: HashMap<RenderKey, Memoized<Facts>>,
    rendered: HashMap<RenderKey, Memoized<Figures>>,
}

#[derive(Clone, Debug)]
struct Memoized<T> {
    _message: Message,
    value: T,
    used: bool,
}

#[derive(Clone, Debug, Default)]
struct Facts {
    hash: Option<String>,
    tokens: Option<u64>,
    details: Option<Vec<(usage::Detail, u32)>>,
    sha256: Option<String>,
    /// What an assistant message wrote ([`usage::written`]).
    written: Option<Vec<usage::Detail>>,
    /// The message as its cuts made it, and the hash of those cuts.
    cut: Option<(u64, Message)>,
    /// How deep the text is cut already ([`level_on_input`]) and the copy it names.
    input: Option<(u8, Option<String>)>,
    /// Its length in UTF-16 code units.
    chars: Option<usize>,
}

/// The slot of a message's own facts (what it wrote, what its cuts made of it), beside its
/// parts' texts.
const WRITTEN: (usize, u64) = (usize::MAX, 0);

impl DecisionMemo {
    /// An empty memo.
    pub fn new() -> DecisionMemo {
        DecisionMemo::default()
    }

    /// Drops what no message of `conv` needs: the facts and details of messages no longer in
    /// it, and the texts of cuts not used since the last sweep (the steps a decision measured
    /// and did not take).
    pub fn sweep(&mut self, conv: &Conversation) {
        let mut alive: Vec<usize> = conv.messages().iter().map(Message::identity).collect();
        alive.sort_unstable();
        self.facts
            .retain(|(m, ..), _| alive.binary_search(m).is_ok());
        self.rendered.retain(|_, e| std::mem::take(&mut e.used));
    }

    /// The details the assistant messages of `conv` before `horizon` wrote, each message's
    /// read once ([`usage::written`]).
    fn usage(&mut self, conv: &Conversation, horizon: usize) -> UsageIndex {
        let mut index = UsageIndex::default();
        for (m, message) in conv.messages().iter().enumerate().take(horizon) {
            if message.role() != crate::messages::Role::Assistant {
                continue;
            }
            index.record(m, self.written(message));
        }
        index
    }

    /// Works out ahead what a decision reads of `message` that depends on nothing else: what
    /// an assistant message wrote, and of each tool result its hash, length, SHA-256 and
    /// details by line. A host calls it as each message arrives (the keeper's fast path), so
    /// that a decision turn does not do it for every message that arrived since the last one.
    pub fn prime(&mut self, message: &Message) {
        if message.role() == crate::messages::Role::Assistant {
            self.written(message);
        }
        for (p, part) in message.parts().iter().enumerate() {
            let Some(text) = part
                .result_slot()
                .and_then(|(shape, value)| result::read(shape, value))
                .map(|read| read.text)
            else {
                continue;
            };
            let facts = self.facts(message, p, 0);
            facts.hash.get_or_insert_with(|| hash_hex(&text));
            facts.chars.get_or_insert_with(|| utf16_len(&text));
            facts.sha256.get_or_insert_with(|| sha256_hex(&text));
            facts.details.get_or_insert_with(|| usage::by_line(&text));
        }
    }

    /// The details `message` wrote ([`usage::written`]), read once.
    fn written(&mut self, message: &Message) -> &[usage::Detail] {
        let facts = self.facts(message, WRITTEN.0, WRITTEN.1);
        facts.written.get_or_insert_with(|| {
            let mut found = Vec::new();
            usage::written(message, &mut found);
            found
        })
    }

    /// The message its cuts of hash `spec` made of `original`, when an earlier apply made it.
    fn cut_message(&mut self, original: &Message, spec: u64) -> Option<Message> {
        let facts = self.facts(original, WRITTEN.0, WRITTEN.1);
        facts
            .cut
            .as_ref()
            .filter(|(s, _)| *s == spec)
            .map(|(_, m)| m.clone())
    }

    fn keep_cut_message(&mut self, original: &Message, spec: u64, cut: Message) {
        self.facts(original, WRITTEN.0, WRITTEN.1).cut = Some((spec, cut));
    }

    fn facts(&mut self, message: &Message, part: usize, slot: u64) -> &mut Facts {
        let entry = self
            .facts
            .entry((message.identity(), part, slot))
            .or_insert_with(|| Memoized {
                _message: message.clone(),
                value: Facts::default(),
                used: true,
            });
        entry.used = true;
        &mut entry.value
    }
}

/// A text a cut may apply to: a result's, or an input field's.
struct Target<'a> {
    at: PartRef,
    /// The call it answers (for an input, the call itself).
    call_at: PartRef,
    /// 0 for a result; the hash of the field's name for an input.
    slot: u64,
    call: &'a str,
    tool: Option<&'a str>,
    text: std::borrow::Cow<'a, str>,
    field: Option<&'a str>,
    path: Option<&'a str>,
}

impl Shape<'_> {
    fn hash(&self, memo: &mut DecisionMemo, message: &Message, t: &Target<'_>) -> String {
        let facts = memo.facts(message, t.at.part, t.slot);
        facts.hash.get_or_insert_with(|| hash_hex(&t.text)).clone()
    }

    fn tokens(&self, memo: &mut DecisionMemo, message: &Message, t: &Target<'_>) -> u64 {
        let measure = self.measure;
        let facts = memo.facts(message, t.at.part, t.slot);
        *facts.tokens.get_or_insert_with(|| measure.tokens(&t.text))
    }

    /// The lines of `t` a later assistant message used (before the horizon of `usage`), and
    /// the latest such message.
    fn cited(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
        usage: &UsageIndex,
    ) -> (Vec<u32>, Option<usize>) {
        let facts = memo.facts(message, t.at.part, t.slot);
        let details = facts.details.get_or_insert_with(|| usage::by_line(&t.text));
        usage.cited(t.at.message, details)
    }

    /// The length of `t`'s text in UTF-16 code units.
    fn chars(&self, memo: &mut DecisionMemo, message: &Message, t: &Target<'_>) -> usize {
        let facts = memo.facts(message, t.at.part, t.slot);
        *facts.chars.get_or_insert_with(|| utf16_len(&t.text))
    }

    /// How deep `t`'s text was cut before it came in ([`level_on_input`]) and the id of the
    /// copy it names, each found once per text (both search the whole text).
    fn input(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
    ) -> (u8, Option<String>) {
        let facts = memo.facts(message, t.at.part, t.slot);
        facts
            .input
            .get_or_insert_with(|| {
                (
                    level_on_input(&t.text),
                    stored_copy(&t.text).map(str::to_owned),
                )
            })
            .clone()
    }

    /// The id of the stored copy of `t`'s text: the one an edited text names, else made from
    /// the call id and the text's SHA-256 (as an offload's).
    fn id(&self, memo: &mut DecisionMemo, message: &Message, t: &Target<'_>) -> String {
        if let (_, Some(id)) = self.input(memo, message, t) {
            return id;
        }
        let facts = memo.facts(message, t.at.part, t.slot);
        let sha = facts.sha256.get_or_insert_with(|| sha256_hex(&t.text));
        offload_id(Some(t.call), sha)
    }

    /// The tokens of `t` before and after `cut`, memoized (the text itself is not kept:
    /// most cuts a decision measures are never made, and a made one is rendered again once,
    /// when its message is first cut that way).
    fn render(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
        cut: &Cut,
    ) -> Figures {
        self.render_keyed(memo, message, t, cut, render_key(message, t, cut))
    }

    /// [`Shape::render`], its memo key ([`render_key`]) at hand.
    #[inline(never)]
    fn render_keyed(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
        cut: &Cut,
        key: RenderKey,
    ) -> Figures {
        if let Some(entry) = memo.rendered.get_mut(&key) {
            entry.used = true;
            return entry.value;
        }
        let text = self.cut_text(memo, message, t, cut);
        let figures = Figures {
            before: self.tokens(memo, message, t),
            after: self.measure.tokens(&text),
        };
        memo.rendered.insert(
            key,
            Memoized {
                _message: message.clone(),
                value: figures,
                used: true,
            },
        );
        figures
    }

    /// The text `cut` makes of `t`.
    fn cut_text(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
        cut: &Cut,
    ) -> String {
        let kept = Kept {
            id: Some(&cut.id),
            lines: &cut.lines,
            line_chars: self.offload.line_chars,
        };
        let p = self.prune;
        match cut.action {
            Action::Offload => {
                let offloaded = Offloaded {
                    key: offload_key(self.session_id, &cut.id),
                    id: cut.id.clone(),
                    tokens: self.tokens(memo, message, t),
                    estimated: self.measure.estimated(),
                    lines: line_count(&t.text),
                    bytes: t.text.len(),
                };
                offload::pointer_text(&offloaded, &t.text, self.offload)
            }
            Action::SoftTrim => prune::trim(
                &t.text,
                p.soft_trim_head_chars,
                p.soft_trim_tail_chars,
                &kept,
            ),
            Action::HardClear => prune::clear(t.tool, &t.text, &kept),
            Action::EvictInput => evict::evicted_text(
                t.field.unwrap_or_default(),
                &t.text,
                t.path.unwrap_or_default(),
                Some(&cut.id),
            ),
            Action::EvictResult => evict::result_note(t.path.unwrap_or_default(), Some(&cut.id)),
        }
    }

    /// The copy that stores `t`'s text under `id`.
    #[inline(never)]
    fn save(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
        id: &str,
    ) -> CutCopy {
        let tokens = self.tokens(memo, message, t);
        let facts = memo.facts(message, t.at.part, t.slot);
        let sha = facts
            .sha256
            .get_or_insert_with(|| sha256_hex(&t.text))
            .clone();
        let header = RecordHeader {
            v: 1,
            id: id.to_owned(),
            tool_name: t.tool.map(str::to_owned),
            tool_call_id: Some(t.call.to_owned()),
            tokens,
            estimated: self.measure.estimated(),
            lines: line_count(&t.text),
            bytes: t.text.len(),
            sha256: sha,
        };
        CutCopy {
            header,
            key: offload_key(self.session_id, id),
            message: message.clone(),
            part: t.at.part,
            field: t.field.map(str::to_owned),
        }
    }
}

/// A copy a cut needs stored: its record is made when the driver asks for it ([`CutCopy::make`]),
/// so the copies of a large decision are never in memory together.
#[derive(Clone, Debug)]
pub struct CutCopy {
    header: RecordHeader,
    key: Vec<String>,
    /// Where the text is: the message that holds it, the part, the input's field.
    message: Message,
    part: usize,
    field: Option<String>,
}

impl CutCopy {
    /// The id the copy is stored under.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The bytes of its text.
    pub fn len(&self) -> usize {
        self.header.bytes
    }

    /// Whether its text is empty.
    pub fn is_empty(&self) -> bool {
        self.header.bytes == 0
    }

    /// The save that stores it (the record: header line and text).
    pub fn make(&self) -> Save {
        let part = self.message.parts().get(self.part);
        let text: std::borrow::Cow<'_, str> = match (&self.field, part) {
            (Some(field), Some(part)) => part
                .tool_input()
                .and_then(evict::input_object)
                .and_then(|input| input.get(field).and_then(Value::as_str).map(str::to_owned))
                .map(std::borrow::Cow::Owned)
                .unwrap_or_default(),
            (None, Some(part)) => part
                .result_slot()
                .and_then(|(shape, value)| result::read(shape, value))
                .map(|read| read.text)
                .unwrap_or_default(),
            _ => std::borrow::Cow::Borrowed(""),
        };
        Save {
            key: self.key.clone(),
            bytes: self.header.encode(&text),
        }
    }
}

/// Where the memo keeps a cut's text: the message's identity, the part, and a hash of the
/// text's slot and the cut.
type RenderKey = (usize, usize, u64);

/// The memo key of the text `cut` makes of `t`.
fn render_key(message: &Message, t: &Target<'_>, cut: &Cut) -> RenderKey {
    let mut spec = Vec::with_capacity(cut.id.len() + 4 * cut.lines.len() + 8);
    spec.push(cut.action as u8);
    spec.extend_from_slice(cut.id.as_bytes());
    for line in &cut.lines {
        spec.extend_from_slice(&line.to_le_bytes());
    }
    spec.extend_from_slice(cut.field.as_deref().unwrap_or_default().as_bytes());
    (message.identity(), t.at.part, t.slot ^ xxh3_64(&spec))
}

/// The id of the stored copy an already cut text names (a pointer, a trim, a cleared result,
/// an evicted input or the note of a write's result), when it is one: what a history the host
/// got back from a prepare holds.
pub fn stored_copy(text: &str) -> Option<&str> {
    if let Some(id) = stored_id(text) {
        return Some(id);
    }
    if text.starts_with(evict::EVICTED_PREFIX) || text.starts_with(evict::RESULT_NOTE) {
        let rest = text.get(text.find("stored as id=\"")? + "stored as id=\"".len()..)?;
        return rest.get(..rest.find('"')?);
    }
    None
}

/// How deep a text already is when the host sends it cut (a history it got back from a
/// prepare): 1 for a pointer or a trim, 3 for a cleared result; 0 otherwise.
fn level_on_input(text: &str) -> u8 {
    if text.starts_with(CLEARED_PREFIX)
        || text.starts_with(evict::EVICTED_PREFIX)
        || (text.starts_with(evict::RESULT_NOTE) && stored_copy(text).is_some())
    {
        3
    } else if pointer_id(text).is_some() || text.contains(&format!("\n{}", prune::TRIM_NOTE)) {
        1
    } else {
        0
    }
}

/// The cuttable texts of `conv`: every tool result with a call id, and every content input of
/// a file write (with the path it names and the note for its long result).
#[inline(never)]
fn targets<'a>(
    conv: &'a Conversation,
    sites: &'a [ResultSite],
    writes: &'a [evict::Candidate],
) -> Vec<Target<'a>> {
    let mut out = Vec::new();
    for site in sites {
        let Some(call) = site.call_id.as_deref() else {
            continue;
        };
        let Some((_, read)) = result_at(conv, site.at) else {
            continue;
        };
        // NOTE: a history has few file writes: each result looks for its call among them.
        let path = (writes.iter())
            .find(|w| w.id.as_deref() == Some(call))
            .map(|w| w.path.as_str());
        out.push(Target {
            at: site.at,
            call_at: site.call_at,
            slot: 0,
            call,
            tool: site.tool_name.as_deref(),
            text: read.text,
            field: None,
            path,
        });
    }
    for write in writes {
        let Some(call) = write.id.as_deref() else {
            continue;
        };
        for (field, content) in &write.inputs {
            out.push(Target {
                at: write.call_at,
                call_at: write.call_at,
                slot: xxh3_64(field.as_bytes()) | 1,
                call,
                tool: Some(&write.name),
                text: std::borrow::Cow::Borrowed(content.as_str()),
                field: Some(field),
                path: Some(&write.path),
            });
        }
    }
    out
}

/// A conversation with cuts applied.
#[derive(Debug)]
pub struct Applied {
    /// The conversation.
    pub conversation: Conversation,
    /// Indices of the messages that changed.
    pub edited: Vec<usize>,
    /// The offloads of huge results.
    pub offloaded: Report,
    /// The trims and clears of results.
    pub pruned: Report,
    /// The evictions of file-write inputs and results.
    pub evicted: Report,
}

/// Applies `cuts` to `conv`: each to the text of its call and action whose hash it records
/// (a text the host changed, or sends already cut, is left as it is).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn apply(
    conv: Conversation,
    cuts: &[Cut],
    sites: &[ResultSite],
    graph: &PairingGraph,
    shape: &Shape<'_>,
    memo: &mut DecisionMemo,
) -> Applied {
    let mut applied = Applied {
        conversation: conv,
        edited: Vec::new(),
        offloaded: Report::default(),
        pruned: Report::default(),
        evicted: Report::default(),
    };
    if cuts.is_empty() {
        return applied;
    }
    let writes = writes_of(&applied.conversation, shape.evict, graph, None);
    let conv = &applied.conversation;
    let by_call: HashMap<(&str, Option<&str>, bool), &Cut> = cuts
        .iter()
        .map(|c| {
            let input = c.action == Action::EvictInput;
            ((c.call.as_str(), c.field.as_deref(), input), c)
        })
        .collect();
    // (the text, its cut, the memo key of what the cut makes of it, the edit)
    let mut planned: Vec<(Target<'_>, &Cut, u64, Edit)> = Vec::new();
    for t in targets(conv, sites, &writes) {
        let input = t.field.is_some();
        let Some(&cut) = by_call.get(&(t.call, t.field, input)) else {
            continue;
        };
        let Some(message) = conv.messages().get(t.at.message) else {
            continue;
        };
        if shape.hash(memo, message, &t) != cut.hash {
            continue;
        }
        let key = render_key(message, &t, cut);
        let rendered = shape.render_keyed(memo, message, &t, cut, key);
        if rendered.after >= rendered.before {
            continue;
        }
        let edit = Edit {
            action: cut.action,
            message_index: t.at.message,
            part_index: t.at.part,
            tool_name: t.tool.map(str::to_owned),
            tool_call_id: Some(t.call.to_owned()),
            field: t.field.map(str::to_owned),
            tokens_before: rendered.before,
            tokens_after: rendered.after,
            estimated: shape.measure.estimated(),
            original: Original::Store {
                key: offload_key(shape.session_id, &cut.id),
                id: cut.id.clone(),
            },
        };
        planned.push((t, cut, key.2, edit));
    }
    // NOTE: by message: a message cut the same way by an earlier prepare is taken from the memo
    // as it was made, with no copy of its original text made and nothing rendered again.
    crate::sort::sort_by_key(&mut planned, |(t, ..)| {
        crate::sort::fields(t.at.message as u64, t.at.part as u64)
    });
    let mut made: Vec<(usize, Message)> = Vec::new();
    let mut rest = planned.as_slice();
    while let Some(((first, ..), _)) = rest.split_first() {
        let m = first.at.message;
        let n = rest.iter().take_while(|(t, ..)| t.at.message == m).count();
        let (group, tail) = rest.split_at(n);
        rest = tail;
        let Some(original) = conv.messages().get(m) else {
            continue;
        };
        let mut spec = Vec::with_capacity(group.len() * 16);
        for (t, _, key, _) in group {
            spec.extend_from_slice(&(t.at.part as u64).to_le_bytes());
            spec.extend_from_slice(&key.to_le_bytes());
        }
        let spec = xxh3_64(&spec);
        let cut = match memo.cut_message(original, spec) {
            Some(cut) => cut,
            None => {
                let mut message = original.clone();
                for (t, cut, ..) in group {
                    let text = shape.cut_text(memo, original, t, cut);
                    let Some(part) = message.parts_mut().get_mut(t.at.part) else {
                        continue;
                    };
                    match t.field {
                        Some(field) => {
                            let _ = part.set_input_field(field, Value::String(text));
                        }
                        None => {
                            if let Some((shape, value)) = part.result_slot_mut() {
                                result::write(shape, value, text);
                            }
                        }
                    }
                }
                memo.keep_cut_message(original, spec, message.clone());
                message
            }
        };
        made.push((m, cut));
        for (.., edit) in group {
            let report = match edit.action {
                Action::EvictInput | Action::EvictResult => &mut applied.evicted,
                Action::Offload => &mut applied.offloaded,
                Action::SoftTrim | Action::HardClear => &mut applied.pruned,
            };
            report.push(edit.clone());
        }
    }
    drop(planned);
    for (m, cut) in made {
        if let Some(slot) = applied.conversation.messages_mut().get_mut(m) {
            *slot = cut;
        }
        applied.edited.push(m);
    }
    applied
}

/// The file writes of `conv` whose inputs may be cut (every one, aged as of `horizon`).
#[inline(never)]
fn writes_of(
    conv: &Conversation,
    options: &EvictOptions,
    graph: &PairingGraph,
    horizon: Option<usize>,
) -> Vec<evict::Candidate> {
    let options = EvictOptions {
        horizon,
        keep_last_assistant_turns: if horizon.is_some() {
            options.keep_last_assistant_turns
        } else {
            0
        },
        ..options.clone()
    };
    evict::candidates(conv, &options, graph)
}

/// One step a new decision may take: a cut of target `target`, made when the greedy walk
/// reaches it.
#[derive(Clone, Debug)]
struct Step {
    phase: u8,
    order: u64,
    target: usize,
    action: Action,
    lines: Vec<u32>,
}

/// A new decision: the cuts to make (the standing ones, deepened or added to), the saves
/// their copies need, and the estimated count once they are made.
#[derive(Debug)]
pub struct Decided {
    /// Every cut of the decision.
    pub cuts: Vec<Cut>,
    /// The copies to store first (for cuts whose copy is not known to be stored).
    pub copies: Vec<CutCopy>,
    /// The count estimated after the cuts.
    pub estimate: u64,
    /// Whether a result was cleared.
    pub cleared: bool,
}

/// The phases of a decision's ladder, cheapest in what the agent loses first (see the
/// module's documentation); within a phase, the oldest first (results the agent used: those
/// whose latest use is oldest).
mod phase {
    pub const WRITES: u8 = 0;
    pub const SUPERSEDED: u8 = 1;
    pub const TRIM_UNUSED: u8 = 2;
    pub const CLEAR_UNUSED: u8 = 3;
    pub const TRIM_USED: u8 = 4;
    pub const CLEAR_TO_CITED: u8 = 5;
    pub const CLEAR_USED: u8 = 6;
}

/// Decides which cuts bring `tokens` (the count with `standing` applied) to `target`, at the
/// horizon `end` (the message after the exchange of the latest call). `stored(id)` says
/// whether a copy is known to be stored already. Every step past what the target needs is
/// left out; when every step is not enough, all of them are taken. A step's text is made only
/// when the walk reaches it.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn decide(
    conv: &Conversation,
    sites: &[ResultSite],
    graph: &PairingGraph,
    end: usize,
    standing: &[Cut],
    tokens: u64,
    target: u64,
    shape: &Shape<'_>,
    memo: &mut DecisionMemo,
    stored: impl Fn(&str) -> bool,
) -> Decided {
    let turns = Turns::until(conv, Some(end));
    let usage = memo.usage(conv, end);
    let writes = writes_of(conv, shape.evict, graph, Some(end));
    let keep = shape.prune.keep_last_assistant_turns;
    let targets = targets(conv, sites, &writes);
    let standing_of: HashMap<(&str, Option<&str>, bool), &Cut> = standing
        .iter()
        .map(|c| {
            (
                (
                    c.call.as_str(),
                    c.field.as_deref(),
                    c.action == Action::EvictInput,
                ),
                c,
            )
        })
        .collect();

    // NOTE: a call made again later with the same tool and input (a test run again, a file
    // read again) has a newer result: the older one is superseded.
    let signature = |call_at: PartRef| -> Option<usage::Detail> {
        let part = part_at(conv, call_at)?;
        let mut key = part.tool_name().unwrap_or_default().as_bytes().to_vec();
        key.push(0);
        match part.tool_input()? {
            crate::messages::ToolInput::Text(text) => key.extend_from_slice(text.as_bytes()),
            crate::messages::ToolInput::Json(value) => {
                key.extend_from_slice(value.to_string().as_bytes());
            }
        }
        Some(usage::detail_of(xxh3_64(&key)))
    };
    let mut latest_of = UsageIndex::default();
    let signatures: Vec<Option<usage::Detail>> = (targets.iter())
        .map(|t| match t.field {
            None if t.at.message < end && t.call_at != t.at => signature(t.call_at),
            _ => None,
        })
        .collect();
    for (t, sig) in targets.iter().zip(&signatures) {
        if let Some(sig) = sig {
            latest_of.record(t.at.message, &[*sig]);
        }
    }
    let mut steps: Vec<Step> = Vec::new();
    // each target's tokens now (with its standing cut), its level, and its hash
    let mut now: Vec<(u64, u8, String)> = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let Some(message) = conv.messages().get(t.at.message) else {
            now.push((0, 3, String::new()));
            continue;
        };
        let input = t.field.is_some();
        let hash = shape.hash(memo, message, t);
        let (mut tokens_now, mut level) = (0, shape.input(memo, message, t).0);
        let standing_cut = standing_of.get(&(t.call, t.field, input)).copied();
        if let Some(cut) = standing_cut.filter(|c| c.hash == hash) {
            let rendered = shape.render(memo, message, t, cut);
            if rendered.after < rendered.before {
                tokens_now = rendered.after;
                level = cut.level();
            }
        }
        let cuttable = level < 3 && t.at.message < end;
        if tokens_now == 0 && cuttable {
            tokens_now = shape.tokens(memo, message, t);
        }
        now.push((tokens_now, level, hash));
        if !cuttable {
            continue;
        }
        let age = turns.age(t.call_at);
        let mut step = |phase, order, action, lines: Vec<u32>| {
            steps.push(Step {
                phase,
                order,
                target: i,
                action,
                lines,
            });
        };
        let order = t.at.message as u64;
        if input {
            // a file write's content: the file holds it
            if age >= shape.evict.keep_last_assistant_turns {
                step(phase::WRITES, order, Action::EvictInput, Vec::new());
            }
            continue;
        }
        if age < keep || !shape.prune.tools.accepts(t.tool) {
            continue;
        }
        // a file write's long result: a note naming the file
        let chars = shape.chars(memo, message, t);
        if t.path.is_some() && chars > shape.evict.result_chars {
            step(phase::WRITES, order, Action::EvictResult, Vec::new());
            continue;
        }
        let (lines, latest) = if level > 0 {
            (Vec::new(), None)
        } else {
            shape.cited(memo, message, t, &usage)
        };
        let long = level < 1 && chars > shape.prune.soft_trim_chars;
        let superseded = signatures
            .get(i)
            .copied()
            .flatten()
            .and_then(|sig| latest_of.last_use(sig))
            .is_some_and(|latest| latest > t.at.message);
        if superseded {
            step(phase::SUPERSEDED, order, Action::HardClear, lines);
            continue;
        }
        match latest {
            None => {
                if long {
                    step(phase::TRIM_UNUSED, order, Action::SoftTrim, Vec::new());
                }
                step(phase::CLEAR_UNUSED, order, Action::HardClear, Vec::new());
            }
            Some(used) => {
                // NOTE: those used longest ago go first.
                let order = ((used as u64) << 32) | order;
                if long {
                    step(phase::TRIM_USED, order, Action::SoftTrim, lines.clone());
                }
                if level < 2 && !lines.is_empty() {
                    step(phase::CLEAR_TO_CITED, order, Action::HardClear, lines);
                }
                step(phase::CLEAR_USED, order, Action::HardClear, Vec::new());
            }
        }
    }
    crate::sort::sort_by_key(&mut steps, |s| {
        crate::sort::fields(u64::from(s.phase), s.order)
    });

    let mut chosen: Vec<Option<Cut>> = vec![None; targets.len()];
    let mut estimate = tokens;
    for step in steps {
        if estimate <= target {
            break;
        }
        let (Some(t), Some((current, level, hash))) =
            (targets.get(step.target), now.get_mut(step.target))
        else {
            continue;
        };
        let step_level = level_of(step.action, !step.lines.is_empty());
        let Some(message) = conv.messages().get(t.at.message) else {
            continue;
        };
        if step_level <= *level {
            continue;
        }
        let cut = Cut {
            call: t.call.to_owned(),
            action: step.action,
            id: shape.id(memo, message, t),
            hash: hash.clone(),
            lines: step.lines,
            field: t.field.map(str::to_owned),
        };
        let after = shape.render(memo, message, t, &cut).after;
        if after >= *current {
            continue;
        }
        estimate = estimate.saturating_sub(*current - after);
        *current = after;
        *level = step_level;
        if let Some(slot) = chosen.get_mut(step.target) {
            *slot = Some(cut);
        }
    }

    // the decision: the standing cuts not deepened, and the chosen ones, in message order
    let mut cuts: Vec<(PartRef, u64, Cut)> = Vec::new();
    let mut copies: Vec<CutCopy> = Vec::new();
    let mut cleared = false;
    for (i, t) in targets.iter().enumerate() {
        let input = t.field.is_some();
        let cut = match chosen.get_mut(i).and_then(Option::take) {
            Some(cut) => {
                let fresh = !stored(&cut.id)
                    && conv
                        .messages()
                        .get(t.at.message)
                        .is_none_or(|m| shape.input(memo, m, t).1.is_none());
                if let (Some(message), true) = (conv.messages().get(t.at.message), fresh) {
                    if !copies.iter().any(|c| c.id() == cut.id) {
                        copies.push(shape.save(memo, message, t, &cut.id));
                    }
                }
                cleared |= cut.action == Action::HardClear;
                cut
            }
            None => match standing_of.get(&(t.call, t.field, input)) {
                Some(cut) => (*cut).clone(),
                None => continue,
            },
        };
        cuts.push((t.at, t.slot, cut));
    }
    crate::sort::sort_by_key(&mut cuts, |(at, slot, _)| {
        crate::sort::fields(((at.message as u64) << 24) | at.part as u64, *slot)
    });
    Decided {
        cuts: cuts.into_iter().map(|(_, _, c)| c).collect(),
        copies,
        estimate,
        cleared,
    }
}

/// Whether the text of a result was cut by a decision (or an offload) and names its copy.
pub fn is_cut(text: &str) -> bool {
    level_on_input(text) > 0
}

/// The offloads the newest exchange needs when it cannot fit whole: its results over the
/// offload limit, largest first, until `head` (the system prompt and task) and what is left
/// of the exchange fit `budget`. `None` when it fits (the model reads what it just asked for
/// whole) or nothing can be offloaded.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn offload_newest(
    conv: &Conversation,
    sites: &[ResultSite],
    standing: &[Cut],
    head: u64,
    budget: u64,
    shape: &Shape<'_>,
    memo: &mut DecisionMemo,
    stored: impl Fn(&str) -> bool,
) -> Option<Decided> {
    let last = conv
        .messages()
        .iter()
        .rposition(|m| m.role() == crate::messages::Role::Assistant)?;
    let newest: Vec<&ResultSite> = sites.iter().filter(|s| s.call_at.message == last).collect();
    let mut sized: Vec<(u64, usize, Target<'_>)> = Vec::new();
    let mut total = head;
    for (i, site) in newest.iter().enumerate() {
        let Some(call) = site.call_id.as_deref() else {
            continue;
        };
        let Some((_, read)) = result_at(conv, site.at) else {
            continue;
        };
        let t = Target {
            at: site.at,
            call_at: site.call_at,
            slot: 0,
            call,
            tool: site.tool_name.as_deref(),
            text: read.text,
            field: None,
            path: None,
        };
        let message = conv.messages().get(site.at.message)?;
        let tokens = shape.tokens(memo, message, &t);
        total += tokens;
        let excluded = t
            .tool
            .is_some_and(|name| shape.offload.excludes(Some(name)));
        if tokens > shape.offload.limit() && shape.input(memo, message, &t).0 == 0 && !excluded {
            sized.push((tokens, i, t));
        }
    }
    if total <= budget || sized.is_empty() {
        return None;
    }
    // largest first; ties in order
    crate::sort::sort_by_key(&mut sized, |(tokens, i, _)| {
        crate::sort::fields(u64::MAX - *tokens, *i as u64)
    });
    let mut cuts: Vec<Cut> = standing.to_vec();
    let mut copies: Vec<CutCopy> = Vec::new();
    for (tokens, _, t) in sized {
        if total <= budget {
            break;
        }
        let message = conv.messages().get(t.at.message)?;
        let hash = shape.hash(memo, message, &t);
        let id = shape.id(memo, message, &t);
        let cut = Cut {
            call: t.call.to_owned(),
            action: Action::Offload,
            id: id.clone(),
            hash,
            lines: Vec::new(),
            field: None,
        };
        let after = shape.render(memo, message, &t, &cut).after;
        total = total.saturating_sub(tokens.saturating_sub(after));
        if !stored(&id) && !copies.iter().any(|c| c.id() == id) {
            copies.push(shape.save(memo, message, &t, &id));
        }
        cuts.retain(|c| !(c.call == cut.call && c.field.is_none()));
        cuts.push(cut);
    }
    Some(Decided {
        cuts,
        copies,
        estimate: total,
        cleared: false,
    })
}
