//! A cut, its shape and what it makes of a text (memoized across prepares), and the copy its
//! save stores.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use crate::context::evict::{self, EvictOptions};
use crate::context::offload::{
    self, offload_id, offload_key, pointer_id, OffloadOptions, Offloaded,
};
use crate::context::prune::{self, stored_id, Kept, PruneOptions, CLEARED_PREFIX};
use crate::context::recovery::{sha256_hex, RecordHeader};
use crate::context::result;
use crate::context::text::{line_count, utf16_len};
use crate::context::usage::{self, UsageIndex};
use crate::context::{Action, Measure, Save};
use crate::counting::KeyMap;
use crate::messages::{Conversation, Message, PartRef};

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
    pub(super) fn level(&self) -> u8 {
        level_of(self.action, !self.lines.is_empty())
    }
}

pub(super) fn level_of(action: Action, lines: bool) -> u8 {
    match action {
        Action::Offload | Action::SoftTrim => 1,
        Action::HardClear if lines => 2,
        Action::HardClear | Action::EvictInput | Action::EvictResult => 3,
    }
}

pub(super) fn hash_hex(text: &str) -> String {
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
pub(super) struct Figures {
    pub(super) before: u64,
    pub(super) after: u64,
}

/// What earlier prepares made of the same messages, by message identity (the data a
/// [`Message`] shares with its clones): the hash, tokens, details and id of each result, and the
/// replacement of each cut. Each entry holds its message, so no other message can take its
/// place in memory; [`DecisionMemo::sweep`] drops what was not used since the last sweep.
#[derive(Clone, Debug, Default)]
pub struct DecisionMemo {
    // NOTE: by a message's address, a part and a hash the core made: no caller chooses a key.
    pub(super) facts: KeyMap<RenderKey, Memoized<Facts>>,
    pub(super) rendered: KeyMap<RenderKey, Memoized<Figures>>,
}

#[derive(Clone, Debug)]
pub(super) struct Memoized<T> {
    pub(super) _message: Message,
    pub(super) value: T,
    pub(super) used: bool,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Facts {
    pub(super) hash: Option<String>,
    pub(super) tokens: Option<u64>,
    pub(super) details: Option<Vec<(usage::Detail, u32)>>,
    pub(super) sha256: Option<String>,
    /// What an assistant message wrote ([`usage::written`]).
    pub(super) written: Option<Vec<usage::Detail>>,
    /// The message as its cuts made it, and the hash of those cuts.
    pub(super) cut: Option<(u64, Message)>,
    /// How deep the text is cut already ([`level_on_input`]) and the copy it names.
    pub(super) input: Option<(u8, Option<String>)>,
    /// Its length in UTF-16 code units.
    pub(super) chars: Option<usize>,
    /// Of a tool call: its tool and input, hashed ([`DecisionMemo::signature`]).
    pub(super) signature: Option<Option<usage::Detail>>,
}

/// The slot of a message's own facts (what it wrote, what its cuts made of it), beside its
/// parts' texts.
pub(super) const WRITTEN: (usize, u64) = (usize::MAX, 0);

/// The slot of a tool call's signature, beside its parts' texts (0) and inputs (a field's hash,
/// odd).
const SIGNATURE: u64 = 2;

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
    pub(super) fn usage(&mut self, conv: &Conversation, horizon: usize) -> UsageIndex {
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
            if part.kind == crate::messages::PartKind::ToolCall {
                self.signature(message, p);
            }
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
    pub(super) fn written(&mut self, message: &Message) -> &[usage::Detail] {
        let facts = self.facts(message, WRITTEN.0, WRITTEN.1);
        facts.written.get_or_insert_with(|| {
            let mut found = Vec::new();
            usage::written(message, &mut found);
            found
        })
    }

    /// The tool and input of the call at part `part` of `message`, hashed: a call made again
    /// later with the same signature (a test run again, a file read again) supersedes it.
    pub(super) fn signature(&mut self, message: &Message, part: usize) -> Option<usage::Detail> {
        let facts = self.facts(message, part, SIGNATURE);
        *facts.signature.get_or_insert_with(|| {
            let part = message.parts().get(part)?;
            let mut key = part.tool_name().unwrap_or_default().as_bytes().to_vec();
            key.push(0);
            match part.tool_input()? {
                crate::messages::ToolInput::Text(text) => key.extend_from_slice(text.as_bytes()),
                crate::messages::ToolInput::Json(value) => {
                    key.extend_from_slice(value.to_string().as_bytes());
                }
            }
            Some(usage::detail_of(xxh3_64(&key)))
        })
    }

    /// The message its cuts of hash `spec` made of `original`, when an earlier apply made it.
    pub(super) fn cut_message(&mut self, original: &Message, spec: u64) -> Option<Message> {
        let facts = self.facts(original, WRITTEN.0, WRITTEN.1);
        facts
            .cut
            .as_ref()
            .filter(|(s, _)| *s == spec)
            .map(|(_, m)| m.clone())
    }

    pub(super) fn keep_cut_message(&mut self, original: &Message, spec: u64, cut: Message) {
        self.facts(original, WRITTEN.0, WRITTEN.1).cut = Some((spec, cut));
    }

    pub(super) fn facts(&mut self, message: &Message, part: usize, slot: u64) -> &mut Facts {
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
pub(super) struct Target<'a> {
    pub(super) at: PartRef,
    /// The call it answers (for an input, the call itself).
    pub(super) call_at: PartRef,
    /// 0 for a result; the hash of the field's name for an input.
    pub(super) slot: u64,
    pub(super) call: &'a str,
    pub(super) tool: Option<&'a str>,
    pub(super) text: std::borrow::Cow<'a, str>,
    pub(super) field: Option<&'a str>,
    pub(super) path: Option<&'a str>,
}

impl<'a> Target<'a> {
    /// The result of the call `call` at `site`, whose text is `text` (`path`: the file its call
    /// wrote, for a write's result).
    pub(super) fn result(
        site: &'a crate::context::ResultSite,
        call: &'a str,
        text: std::borrow::Cow<'a, str>,
        path: Option<&'a str>,
    ) -> Self {
        Target {
            at: site.at,
            call_at: site.call_at,
            slot: 0,
            call,
            tool: site.tool_name.as_deref(),
            text,
            field: None,
            path,
        }
    }
}

impl Shape<'_> {
    pub(super) fn hash(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
    ) -> String {
        let facts = memo.facts(message, t.at.part, t.slot);
        facts.hash.get_or_insert_with(|| hash_hex(&t.text)).clone()
    }

    pub(super) fn tokens(&self, memo: &mut DecisionMemo, message: &Message, t: &Target<'_>) -> u64 {
        let measure = self.measure;
        let facts = memo.facts(message, t.at.part, t.slot);
        *facts.tokens.get_or_insert_with(|| measure.tokens(&t.text))
    }

    /// The lines of `t` a later assistant message used (before the horizon of `usage`), and
    /// the latest such message.
    pub(super) fn cited(
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
    pub(super) fn chars(
        &self,
        memo: &mut DecisionMemo,
        message: &Message,
        t: &Target<'_>,
    ) -> usize {
        let facts = memo.facts(message, t.at.part, t.slot);
        *facts.chars.get_or_insert_with(|| utf16_len(&t.text))
    }

    /// How deep `t`'s text was cut before it came in ([`level_on_input`]) and the id of the
    /// copy it names, each found once per text (both search the whole text).
    pub(super) fn input(
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
    pub(super) fn id(&self, memo: &mut DecisionMemo, message: &Message, t: &Target<'_>) -> String {
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
    pub(super) fn render(
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
    pub(super) fn render_keyed(
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
    pub(super) fn cut_text(
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
    pub(super) fn save(
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
    pub(super) header: RecordHeader,
    pub(super) key: Vec<String>,
    /// Where the text is: the message that holds it, the part, the input's field.
    pub(super) message: Message,
    pub(super) part: usize,
    pub(super) field: Option<String>,
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
pub(super) fn render_key(message: &Message, t: &Target<'_>, cut: &Cut) -> RenderKey {
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
pub(super) fn level_on_input(text: &str) -> u8 {
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
