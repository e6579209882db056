//! Fact pinning for compaction (DESIGN.md, "The operations", 6): the exact details a summary
//! must not lose. File paths, URLs, code identifiers, numbers with units and shell commands are
//! found in the archived span by a hand-written scanner (no regex, no LLM: deterministic and
//! linear), and those the recent turns or the first user request still name but the summary
//! lost are appended to it verbatim ([`missing_facts`], [`pin`]).
//!
//! The scanner errs towards missing a fact rather than pinning prose: a word is a fact only by
//! its shape (a slash and an extension, an inner capital or underscore, a hex run with digits,
//! a number followed by a unit from a small table, backticks around a known command).

use std::borrow::Cow;
use std::collections::HashSet;

use serde::Serialize;

use super::result;
pub use kind::{FactKind, MAX_FACTS, MAX_FACT_LEN};
use scan::{code, json_commands, json_escaped, words, Sink};

mod kind;
mod scan;
mod shapes;
use crate::messages::{Message, PartKind, ToolInput};

/// The heading [`pin`] appends.
pub const PIN_HEADING: &str = "Exact details (kept verbatim from the archived messages):";

/// One exact detail, as it appears in the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Fact {
    /// What it is.
    pub kind: FactKind,
    /// Its text, verbatim (a command read from JSON is unescaped).
    pub text: String,
}

/// The facts in `text`, in order of first appearance, each once, at most [`MAX_FACTS`].
pub fn extract_facts(text: &str) -> Vec<Fact> {
    extract_facts_all([text])
}

/// The facts of several texts, as if they were one: in order of first appearance (the first
/// text first), each once, at most [`MAX_FACTS`].
pub fn extract_facts_all<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<Fact> {
    let texts: Vec<&str> = texts.into_iter().collect();
    extract_facts_list(&texts)
}

/// [`extract_facts_all`] of a list. NOTE: one copy in the binary for every caller (the
/// generic wrapper only collects).
#[inline(never)]
fn extract_facts_list(texts: &[&str]) -> Vec<Fact> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for text in texts {
        if out.len() >= MAX_FACTS {
            break;
        }
        let mut found = Vec::new();
        words(text, &mut Sink::new(&mut found, 0));
        code(text, &mut Sink::new(&mut found, 1));
        json_commands(text, &mut Sink::new(&mut found, 2));
        // NOTE: each scanner yields in order; a stable sort by offset merges them, and at one
        // offset the word scanner's reading wins.
        crate::sort::sort_by_key(&mut found, |c| {
            crate::sort::fields(c.at as u64, u64::from(c.scanner))
        });
        for c in found {
            if out.len() >= MAX_FACTS {
                break;
            }
            if !seen.contains(c.text.as_ref()) {
                seen.insert(c.text.clone().into_owned());
                out.push(Fact {
                    kind: c.kind,
                    text: c.text.into_owned(),
                });
            }
        }
    }
    out
}

/// Facts of the `span` texts that the `keep` texts (the recent turns and the first user
/// request) still name and the `summary` lost, at most `max`: first those the agent used (that
/// occur in `written`, what its own messages wrote), then the rest, each group latest first
/// (the span's texts are in order, oldest first). A fact counts as named where its exact text
/// occurs (a command read from JSON also in its JSON-escaped form); one contained in a fact
/// already chosen is left out.
///
/// Cost: linear in the texts, plus for each fact a lookup of its 4-byte windows in an index of
/// the keep texts; only a fact whose every window is there is confirmed by a substring search.
pub fn missing_facts(
    span: &[&str],
    keep: &[&str],
    written: &[&str],
    summary: &str,
    max: usize,
) -> Vec<Fact> {
    if max == 0 {
        return Vec::new();
    }
    let facts = by_use(span, written);
    let index = KeepIndex::new(keep);
    let mut out: Vec<Fact> = Vec::new();
    for fact in facts {
        if out.len() >= max {
            break;
        }
        if summary.contains(fact.text.as_str())
            || out.iter().any(|o| o.text.contains(fact.text.as_str()))
        {
            continue;
        }
        let named = index.contains(&fact.text)
            || json_escaped(&fact.text).is_some_and(|escaped| index.contains(&escaped));
        if named {
            out.push(fact);
        }
    }
    out
}

/// The facts of `texts` (in order, oldest first), those that occur in `written` first, each
/// group latest first.
pub fn by_use(texts: &[&str], written: &[&str]) -> Vec<Fact> {
    let reversed: Vec<&str> = texts.iter().rev().copied().collect();
    let facts = extract_facts_list(&reversed);
    let used: HashSet<String> = extract_facts_list(written)
        .into_iter()
        .map(|f| f.text)
        .collect();
    let (mut first, rest): (Vec<Fact>, Vec<Fact>) =
        facts.into_iter().partition(|f| used.contains(&f.text));
    first.extend(rest);
    first
}

/// What an assistant message wrote: its text and its tool-call inputs (not its thinking, not
/// the results an AI SDK `UIMessage` holds).
pub fn written_texts(message: &Message) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    if message.role() != crate::messages::Role::Assistant {
        return out;
    }
    for part in message.parts() {
        match part.kind() {
            PartKind::Text => out.extend(part.text().map(Cow::Borrowed)),
            PartKind::ToolCall => match part.tool_input() {
                Some(ToolInput::Text(text)) => out.push(Cow::Borrowed(text)),
                Some(ToolInput::Json(value)) => {
                    out.push(Cow::Owned(serde_json::to_string(value).unwrap_or_default()));
                }
                None => {}
            },
            _ => {}
        }
    }
    out
}

/// `summary` with `facts` appended as a short list under [`PIN_HEADING`]; `summary` itself
/// when there are none.
pub fn pin(summary: &str, facts: &[Fact]) -> String {
    if facts.is_empty() {
        return summary.to_owned();
    }
    let mut out = String::with_capacity(summary.len() + 64 + facts.len() * 32);
    let body = summary.trim_end();
    out.push_str(body);
    if !body.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(PIN_HEADING);
    for fact in facts {
        out.push_str("\n- ");
        push_code(&mut out, &fact.text);
    }
    out
}

/// `text` as Markdown inline code: fenced with one backtick more than its longest run, padded
/// when it starts or ends with one.
pub(crate) fn push_code(out: &mut String, text: &str) {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    out.push_str(&fence);
    out.push_str(pad);
    out.push_str(text);
    out.push_str(pad);
    out.push_str(&fence);
}

/// The texts of a message the model reads: text, reasoning and compaction parts, tool-call
/// inputs (as JSON text) and tool-result text. Images, files, encrypted reasoning and unknown
/// parts are left out. Borrowed where the message holds a string.
pub fn message_texts(message: &Message) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    for part in message.parts() {
        match part.kind() {
            PartKind::Text | PartKind::Reasoning | PartKind::Compaction => {
                if let Some(text) = part.text() {
                    out.push(Cow::Borrowed(text));
                }
            }
            PartKind::ToolCall => {
                match part.tool_input() {
                    Some(ToolInput::Text(text)) => out.push(Cow::Borrowed(text)),
                    Some(ToolInput::Json(value)) => {
                        out.push(Cow::Owned(serde_json::to_string(value).unwrap_or_default()));
                    }
                    None => {}
                }
                // NOTE: an AI SDK UIMessage tool part holds its own result.
                if let Some(read) = part.result_slot().and_then(|(s, v)| result::read(s, v)) {
                    out.push(read.text);
                }
            }
            PartKind::ToolResult => {
                if let Some(read) = part.result_slot().and_then(|(s, v)| result::read(s, v)) {
                    out.push(read.text);
                }
            }
            PartKind::Image
            | PartKind::File
            | PartKind::RedactedReasoning
            | PartKind::Unknown
            | PartKind::UiOnly => {}
        }
    }
    out
}

// --- presence in the keep texts

/// The keep texts, with the set of their 4-byte windows: a fact with a window that is not in
/// the set does not occur, without a search.
struct KeepIndex<'k> {
    texts: &'k [&'k str],
    grams: HashSet<u32>,
}

impl<'k> KeepIndex<'k> {
    fn new(texts: &'k [&'k str]) -> Self {
        let mut grams = HashSet::new();
        for text in texts {
            for w in text.as_bytes().windows(4) {
                grams.insert(gram(w));
            }
        }
        KeepIndex { texts, grams }
    }

    fn contains(&self, needle: &str) -> bool {
        if needle.len() >= 4
            && !needle
                .as_bytes()
                .windows(4)
                .all(|w| self.grams.contains(&gram(w)))
        {
            return false;
        }
        self.texts.iter().any(|t| t.contains(needle))
    }
}

fn gram(w: &[u8]) -> u32 {
    w.iter().fold(0, |acc, &b| (acc << 8) | u32::from(b))
}

#[cfg(test)]
mod tests;
