//! What the agent used: the exact details (paths, identifiers, line numbers) its own messages
//! took from earlier tool results, so that a decision drops last what was used and a trim keeps
//! the lines that were cited (DESIGN.md, "What to keep").
//!
//! A *detail* is a run of letters, digits and `_ . / -` that has the shape of something copied
//! rather than written: a path (a `/`, or a file extension), an identifier of six or more
//! characters with an `_`, a dot or an inner capital, or a number of three or more digits.
//! A run also stands for the details inside it (the names after each `/`, its dotted parts),
//! on both sides, so `separable.py` in a listing matches `astropy/modeling/separable.py` in a
//! command. Details are compared by 32 bits of their XXH3 hash ([`Detail`]): a result's details
//! are held, one per occurrence, for as long as the result is in the history, and a collision
//! (about one lookup in 2^32 per distinct detail written) only makes a line look used, which
//! keeps it. What the agent wrote is read from its text and its tool-call inputs, never from
//! its thinking.
//!
//! [`UsageIndex::of`] reads a conversation up to a message (the horizon of a decision), so the
//! same history gives the same answer whatever came after; [`UsageIndex::cited`] gives, for a
//! result, the lines whose details a later assistant message used. Linear in the text read.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use crate::counting::IdentityHasher;
use crate::messages::{Conversation, Message, PartKind, Role, ToolInput};

/// A detail as it is compared: the low 32 bits of its XXH3-64 hash.
pub type Detail = u32;

/// The [`Detail`] of a 64-bit hash.
pub fn detail_of(hash: u64) -> Detail {
    // NOTE: the low half of the hash, taken as it is (XXH3's bits are equally mixed).
    (hash & u64::from(u32::MAX)) as u32
}

/// At most this many details are taken from one run of characters (a long dotted chain).
const MAX_PIECES: usize = 12;

fn is_run_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-')
}

/// Whether `s` has the shape of a copied detail.
fn is_detail(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return false;
    }
    if bytes.iter().all(u8::is_ascii_digit) {
        return bytes.len() >= 3;
    }
    if bytes.len() < 4 {
        return false;
    }
    if s.contains('/') {
        return bytes.iter().any(u8::is_ascii_alphanumeric);
    }
    if has_extension(s) {
        return true;
    }
    let identifier = bytes
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'));
    identifier
        && bytes.len() >= 6
        && (s.contains('_')
            || s.contains('.')
            || bytes
                .windows(2)
                .any(|w| matches!(w, [a, b] if (a.is_ascii_lowercase() || a.is_ascii_digit()) && b.is_ascii_uppercase())))
}

/// A name, a dot, and one to six letters and digits starting with a letter (`setup.py`).
fn has_extension(s: &str) -> bool {
    let Some((name, ext)) = s.rsplit_once('.') else {
        return false;
    };
    !name.is_empty()
        && name
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        && (1..=6).contains(&ext.len())
        && ext.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && ext.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Calls `found(detail)` for every detail of `text`, with the byte offset of its run.
fn details(text: &str, found: &mut dyn FnMut(Detail, usize)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes.get(i).copied().is_some_and(is_run_char) {
            i += 1;
            continue;
        }
        let start = i;
        // NOTE: what the run holds, found as it is read: most runs are plain words, which are
        // no detail and hold none, and are passed over without looking at them again.
        let (mut separators, mut plain) = (false, true);
        let mut previous = 0u8;
        while let Some(&b) = bytes.get(i).filter(|b| is_run_char(**b)) {
            separators |= matches!(b, b'.' | b'/' | b'-');
            plain &= b.is_ascii_lowercase()
                || (b.is_ascii_uppercase() && !previous.is_ascii_lowercase());
            previous = b;
            i += 1;
        }
        if plain || (!separators && i - start < 3) {
            continue;
        }
        let Some(run) = text.get(start..i) else {
            continue;
        };
        let run = run.trim_matches(|c| matches!(c, '.' | '-' | '/'));
        if run.is_empty() {
            continue;
        }
        let mut emit = |piece: &str| {
            if is_detail(piece) {
                found(detail_of(xxh3_64(piece.as_bytes())), start);
            }
        };
        emit(run);
        if !separators {
            continue;
        }
        // the names after each `/` (`modeling/separable.py`, `separable.py`)
        let mut pieces = 0;
        for (at, _) in run.match_indices('/') {
            if pieces >= MAX_PIECES {
                break;
            }
            if let Some(rest) = run.get(at + 1..) {
                emit(rest);
                pieces += 1;
            }
        }
        // the parts of a dotted or dashed name (`self.separability_matrix`, `2024-01-15`),
        // when it is not a file name
        let last = run.rsplit('/').next().unwrap_or(run);
        if !has_extension(last) || last.matches('.').count() > 1 {
            for piece in last.split(['.', '-']).take(MAX_PIECES) {
                if piece.len() < last.len() {
                    emit(piece);
                }
            }
        }
    }
}

/// The details a message wrote: its text and its tool-call inputs (string leaves), not its
/// thinking.
pub fn written(message: &Message, out: &mut Vec<Detail>) {
    for part in message.parts() {
        match part.kind() {
            PartKind::Text => {
                if let Some(text) = part.text() {
                    details(text, &mut |h, _| out.push(h));
                }
            }
            PartKind::ToolCall => match part.tool_input() {
                Some(ToolInput::Text(text)) => match serde_json::from_str::<Value>(text) {
                    Ok(value) => leaves(&value, out),
                    Err(_) => details(text, &mut |h, _| out.push(h)),
                },
                Some(ToolInput::Json(value)) => leaves(value, out),
                None => {}
            },
            _ => {}
        }
    }
}

fn leaves(value: &Value, out: &mut Vec<Detail>) {
    match value {
        Value::String(s) => details(s, &mut |h, _| out.push(h)),
        Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
        _ => {}
    }
}

/// The details of a result's text, each with the line (from 1) it is on (a detail that comes
/// again at once on the same line, once), in a buffer of its exact length: it is kept for as
/// long as the result is in the history.
pub fn by_line(text: &str) -> Vec<(Detail, u32)> {
    let mut out = Vec::new();
    let mut line = 1u32;
    let mut line_start = 0usize;
    let bytes = text.as_bytes();
    details(text, &mut |hash, at| {
        // NOTE: runs come in order, so the line count only moves forward.
        let upto = at.min(bytes.len());
        if upto > line_start {
            let feeds = bytes
                .get(line_start..upto)
                .map_or(0, |s| s.iter().filter(|&&b| b == b'\n').count());
            line += feeds as u32;
            line_start = upto;
        }
        if out.last() != Some(&(hash, line)) {
            out.push((hash, line));
        }
    });
    out.shrink_to_fit();
    out
}

/// For each detail, the latest assistant message (before the horizon) that wrote it.
#[derive(Debug, Default)]
pub struct UsageIndex {
    // NOTE: the keys are XXH3 hashes: the map uses them as they are (spread to 64 bits).
    last_use: HashMap<Detail, u32, BuildHasherDefault<IdentityHasher>>,
}

impl UsageIndex {
    /// Reads the assistant messages of `conv` before message `horizon`.
    pub fn of(conv: &Conversation, horizon: usize) -> UsageIndex {
        let mut index = UsageIndex::default();
        let mut found: Vec<Detail> = Vec::new();
        for (m, message) in conv.messages().iter().enumerate().take(horizon) {
            if message.role() != Role::Assistant {
                continue;
            }
            found.clear();
            written(message, &mut found);
            index.record(m, &found);
        }
        index
    }

    /// The latest message that wrote `detail`.
    pub fn last_use(&self, detail: Detail) -> Option<usize> {
        self.last_use.get(&detail).map(|&m| m as usize)
    }

    /// Records that message `m` (later than every message recorded before) wrote `details`.
    pub fn record(&mut self, m: usize, details: &[Detail]) {
        let m = u32::try_from(m).unwrap_or(u32::MAX);
        for &h in details {
            self.last_use.insert(h, m);
        }
    }

    /// The lines of a result in message `at` (its details [`by_line`]) that an assistant
    /// message after it used, in order, each once; and the latest message that used any.
    pub fn cited(&self, at: usize, details: &[(Detail, u32)]) -> (Vec<u32>, Option<usize>) {
        let mut lines: Vec<u32> = Vec::new();
        let mut latest = None;
        for &(hash, line) in details {
            let Some(used) = self.last_use.get(&hash).map(|&m| m as usize) else {
                continue;
            };
            if used <= at {
                continue;
            }
            latest = latest.max(Some(used));
            if lines.last() != Some(&line) {
                lines.push(line);
            }
        }
        lines.dedup();
        (lines, latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(text: &str) -> Vec<Detail> {
        let mut out = Vec::new();
        details(text, &mut |h, _| out.push(h));
        out
    }

    fn h(s: &str) -> Detail {
        detail_of(xxh3_64(s.as_bytes()))
    }

    #[test]
    fn details_have_the_shapes_of_copied_text() {
        let found = hashes("see astropy/modeling/separable.py:120 and separability_matrix(cm), CompoundModel, line 245, the end.");
        for want in [
            "astropy/modeling/separable.py",
            "modeling/separable.py",
            "separable.py",
            "120",
            "separability_matrix",
            "CompoundModel",
            "245",
        ] {
            assert!(found.contains(&h(want)), "{want}");
        }
        for not in [
            "see", "and", "line", "the", "end", "astropy", "modeling", "cm",
        ] {
            assert!(!found.contains(&h(not)), "{not}");
        }
    }

    #[test]
    fn dotted_names_stand_for_their_parts() {
        let found = hashes("self.separability_matrix = np.hstack");
        assert!(found.contains(&h("self.separability_matrix")));
        assert!(found.contains(&h("separability_matrix")));
        assert!(found.contains(&h("np.hstack")));
        assert!(!found.contains(&h("self")));
    }

    #[test]
    fn lines_are_counted_from_one() {
        let text =
            "first line\n  120 def _cstack(left, right):\nthird\n  245     return x_separable";
        let lines = by_line(text);
        assert!(lines.contains(&(h("120"), 2)));
        assert!(lines.contains(&(h("_cstack"), 2)));
        assert!(lines.contains(&(h("245"), 4)));
        assert!(lines.contains(&(h("x_separable"), 4)));
    }
}
