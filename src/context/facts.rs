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
use crate::messages::{Message, PartKind, ToolInput};

/// The most facts [`extract_facts`] returns, so a huge span stays linear in time and bounded in
/// memory.
pub const MAX_FACTS: usize = 2_000;
/// The longest fact, in bytes: a longer command or URL is cut (at a character boundary), a
/// longer path or identifier is not a fact (likely a blob).
pub const MAX_FACT_LEN: usize = 200;
/// The heading [`pin`] appends.
pub const PIN_HEADING: &str = "Exact details (kept verbatim from the archived messages):";

/// What a fact is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase")]
pub enum FactKind {
    /// A file path (`src/context/mod.rs`, `/etc/hosts`, `C:\x\y.txt`, `pkg/foo.js:120`).
    Path,
    /// An `http(s)`, `ws(s)` or `file` URL.
    Url,
    /// A code identifier (`snake_case`, `camelCase`, `Foo::bar`, `obj.method()`), a hash, a
    /// UUID, a call id, an issue reference (`#1234`) or a version (`v1.2.3`).
    Identifier,
    /// A number with a unit (`20,000 tokens`, `128 KiB`, `2.5 ms`, `95%`).
    Number,
    /// A shell command (in backticks, a shell code block, or a shell tool's `command` input).
    Command,
}

impl FactKind {
    /// The order [`missing_facts`] keeps facts in when it has to choose.
    pub const fn priority(self) -> u8 {
        match self {
            FactKind::Path => 0,
            FactKind::Identifier => 1,
            FactKind::Command => 2,
            FactKind::Url => 3,
            FactKind::Number => 4,
        }
    }
}

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

// ---------------------------------------------------------------------------------------------
// The scanners

/// A fact found at a byte offset, by one scanner.
struct Candidate<'t> {
    at: usize,
    scanner: u8,
    kind: FactKind,
    text: Cow<'t, str>,
}

/// Where a scanner puts what it finds: each text once, at most [`MAX_FACTS`].
struct Sink<'s, 't> {
    out: &'s mut Vec<Candidate<'t>>,
    seen: HashSet<Cow<'t, str>>,
    scanner: u8,
}

impl<'s, 't> Sink<'s, 't> {
    fn new(out: &'s mut Vec<Candidate<'t>>, scanner: u8) -> Self {
        Sink {
            out,
            seen: HashSet::new(),
            scanner,
        }
    }

    fn full(&self) -> bool {
        self.seen.len() >= MAX_FACTS
    }

    fn push(&mut self, at: usize, kind: FactKind, text: Cow<'t, str>) {
        if self.full() || text.is_empty() || self.seen.contains(&text) {
            return;
        }
        self.seen.insert(text.clone());
        self.out.push(Candidate {
            at,
            scanner: self.scanner,
            kind,
            text,
        });
    }
}

/// `text` cut to at most [`MAX_FACT_LEN`] bytes at a character boundary.
fn cap(text: &str) -> &str {
    if text.len() <= MAX_FACT_LEN {
        return text;
    }
    cap_bytes(text, MAX_FACT_LEN).trim_end()
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cap_bytes(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// The byte offset of `part` inside `whole` (`part` is a subslice of it).
fn offset(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

/// The runs of non-whitespace in `text`, with their offsets.
fn ws_words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(char::is_whitespace)
        .filter(|w| !w.is_empty())
        .map(move |w| (offset(text, w), w))
}

/// Scanner 0: URLs, numbers with units, paths and identifiers, word by word.
fn words<'t>(text: &'t str, sink: &mut Sink<'_, 't>) {
    let mut iter = ws_words(text).peekable();
    while let Some((at, word)) = iter.next() {
        if sink.full() {
            return;
        }
        if let Some(start) = url_start(word) {
            let url = url_at(word.get(start..).unwrap_or_default());
            if let Some(head) = word.get(..start) {
                subwords(text, head, sink);
            }
            if url.len() > "http://".len() {
                sink.push(at + start, FactKind::Url, Cow::Borrowed(cap(url)));
            }
            continue;
        }
        if let Some(end) = number_with_unit(text, at, word, iter.peek().copied()) {
            let start = at + word.len() - word.trim_start_matches(['(', '[', '~']).len();
            if let Some(fact) = text.get(start..end) {
                sink.push(start, FactKind::Number, Cow::Borrowed(fact));
            }
        }
        subwords(text, word, sink);
    }
}

/// The characters a path or identifier is made of; anything else ends a word.
fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '_' | '/' | '\\' | '.' | ':' | '-' | '#' | '~' | '+' | '(' | ')'
        )
}

fn subwords<'t>(text: &'t str, word: &'t str, sink: &mut Sink<'_, 't>) {
    // NOTE: a piece far over the cap is no fact (a blob); skipping it keeps `strip` linear.
    let pieces = word.split(|c| !word_char(c)).flat_map(unescaped);
    for piece in pieces.filter(|p| !p.is_empty() && p.len() <= 4 * MAX_FACT_LEN) {
        let piece = strip(piece);
        if piece.len() < 2 {
            continue;
        }
        let at = offset(text, piece);
        if text
            .get(at + piece.len()..)
            .is_some_and(|r| r.starts_with("\":"))
        {
            continue; // NOTE: a JSON key (`"file_path":`) names a field, not a detail.
        }
        if let Some(kind) = classify(piece) {
            sink.push(at, kind, Cow::Borrowed(piece));
            continue;
        }
        // NOTE: `foo(bar_baz)` and git's `20edef5..5857437` hold facts a split away.
        if piece.contains(['(', ')']) || piece.contains("..") {
            for inner in piece.split(['(', ')']).flat_map(|p| p.split("..")) {
                let inner = strip(inner);
                if inner.len() >= 2 {
                    if let Some(kind) = classify(inner) {
                        sink.push(offset(text, inner), kind, Cow::Borrowed(inner));
                    }
                }
            }
        }
    }
}

/// `piece` cut at the escapes of a JSON string that stand for whitespace (`\n`, `\r`, `\t`;
/// an escaped backslash `\\` is no cut). Tool inputs are scanned as JSON text, where
/// `x.py\nls` is a path, a newline and a command, and `as e:\n` is no drive `e:`. A Windows
/// path (`C:\new\tmp.txt`) stays whole.
fn unescaped(piece: &str) -> impl Iterator<Item = &str> {
    let whole = !piece.contains('\\') || is_drive_path(strip(piece));
    let mut rest = Some(piece);
    std::iter::from_fn(move || {
        let r = rest.take()?;
        if whole {
            return Some(r);
        }
        let bytes = r.as_bytes();
        let mut i = 0;
        while let Some(pair) = bytes.get(i..i + 2) {
            match pair {
                [b'\\', b'n' | b'r' | b't'] => {
                    rest = r.get(i + 2..);
                    return r.get(..i);
                }
                [b'\\', _] => i += 2,
                _ => i += 1,
            }
        }
        Some(r)
    })
}

/// Whether `word` starts like a Windows path: a drive letter, `:\`, then a name, which is
/// more than the one letter of an escape (`e:\n` is `except OSError as e:` then a newline,
/// in JSON text).
fn is_drive_path(word: &str) -> bool {
    match word.as_bytes() {
        [drive, b':', b'\\', rest @ ..] => {
            drive.is_ascii_alphabetic()
                && !matches!(rest, [b'n' | b'r' | b't'])
                && rest.iter().any(u8::is_ascii_alphanumeric)
        }
        _ => false,
    }
}

/// A word without the punctuation around it: leading `(`, `:`, `-`; trailing sentence
/// punctuation and unbalanced closing parentheses.
fn strip(word: &str) -> &str {
    let mut w = word.trim_start_matches(['(', ':', '-']);
    loop {
        let Some(last) = w.chars().next_back() else {
            return w;
        };
        let unbalanced = last == ')' && w.matches('(').count() < w.matches(')').count();
        if matches!(last, '.' | ',' | ':' | ';' | '!' | '?' | '-' | '(') || unbalanced {
            w = w.get(..w.len() - 1).unwrap_or_default();
        } else {
            return w;
        }
    }
}

fn classify(word: &str) -> Option<FactKind> {
    if word.len() > MAX_FACT_LEN {
        return None;
    }
    if is_path(word) {
        Some(FactKind::Path)
    } else if is_identifier(word) {
        Some(FactKind::Identifier)
    } else {
        None
    }
}

// --- URLs

const SCHEMES: [&str; 5] = ["https://", "http://", "wss://", "ws://", "file://"];

/// Where a URL starts in `word`, if one does.
fn url_start(word: &str) -> Option<usize> {
    let sep = word.find("://")?;
    SCHEMES.iter().find_map(|scheme| {
        let start = (sep + 3).checked_sub(scheme.len())?;
        let found = word.get(start..sep + 3)?.eq_ignore_ascii_case(scheme);
        // NOTE: the scheme must start the word or follow punctuation (`(https://`, `<https://`).
        let boundary = word
            .get(..start)?
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        (found && boundary).then_some(start)
    })
}

/// The URL at the start of `rest`: up to a quote, bracket or backtick, without trailing
/// punctuation or unbalanced closing brackets.
fn url_at(rest: &str) -> &str {
    let rest = cap_bytes(rest, 4 * MAX_FACT_LEN);
    let end = rest
        .find(['"', '\'', '<', '>', '`', '|', '\\'])
        .unwrap_or(rest.len());
    let mut url = rest.get(..end).unwrap_or_default();
    loop {
        let Some(last) = url.chars().next_back() else {
            return url;
        };
        let unbalanced = match last {
            ')' => url.matches('(').count() < url.matches(')').count(),
            ']' => url.matches('[').count() < url.matches(']').count(),
            '}' => url.matches('{').count() < url.matches('}').count(),
            _ => false,
        };
        if matches!(last, '.' | ',' | ':' | ';' | '!' | '?' | '*') || unbalanced {
            url = url.get(..url.len() - last.len_utf8()).unwrap_or_default();
        } else {
            return url;
        }
    }
}

// --- numbers with units

const UNITS: &[&str] = &[
    "%",
    "B",
    "KB",
    "kB",
    "KiB",
    "MB",
    "MiB",
    "GB",
    "GiB",
    "TB",
    "TiB",
    "bytes",
    "byte",
    "bits",
    "ns",
    "us",
    "µs",
    "ms",
    "s",
    "sec",
    "secs",
    "second",
    "seconds",
    "min",
    "mins",
    "minute",
    "minutes",
    "h",
    "hr",
    "hrs",
    "hour",
    "hours",
    "day",
    "days",
    "tokens",
    "token",
    "lines",
    "line",
    "chars",
    "characters",
    "words",
    "px",
    "em",
    "rem",
    "pt",
    "files",
    "rows",
    "columns",
    "messages",
    "turns",
    "steps",
    "requests",
    "calls",
    "tests",
    "errors",
    "warnings",
    "Hz",
    "kHz",
    "MHz",
    "GHz",
    "fps",
    "rps",
    "cores",
    "threads",
    "x",
];

/// The end offset (in `text`) of a number with a unit that `word` (at `at`) starts: a unit
/// attached (`2.5ms`, `95%`) or the next word after one space (`20,000 tokens`).
fn number_with_unit(
    text: &str,
    at: usize,
    word: &str,
    next: Option<(usize, &str)>,
) -> Option<usize> {
    let w = word.trim_start_matches(['(', '[', '~']);
    let lead = word.len() - w.len();
    let len = number_len(w)?;
    let rest = w.get(len..)?;
    let trimmed = rest.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']']);
    if !trimmed.is_empty() {
        return UNITS
            .contains(&trimmed)
            .then_some(at + lead + len + trimmed.len());
    }
    if !rest.is_empty() {
        return None; // NOTE: `20,000.` ends a clause; the next word is not its unit.
    }
    let (next_at, next_word) = next?;
    if text.get(at + word.len()..next_at) != Some(" ") {
        return None;
    }
    let unit = next_word.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']']);
    UNITS.contains(&unit).then_some(next_at + unit.len())
}

/// The length of the number `w` starts with: `20,000`, `2.5`, `128`, `200k`; `None` when it
/// does not start with a digit or the number runs into an identifier (`1.2.3`, `0x1f`).
fn number_len(w: &str) -> Option<usize> {
    let b = w.as_bytes();
    let digits = |from: usize| {
        b.iter()
            .skip(from)
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut len = digits(0);
    if len == 0 {
        return None;
    }
    // Thousands separators: `20,000`.
    if len <= 3 {
        while b.get(len) == Some(&b',') && digits(len + 1) == 3 {
            len += 4;
        }
    }
    if b.get(len) == Some(&b'.') && digits(len + 1) > 0 {
        len += 1 + digits(len + 1);
    }
    if matches!(b.get(len), Some(b'k' | b'K' | b'M'))
        && !matches!(b.get(len + 1), Some(c) if c.is_ascii_alphanumeric())
    {
        len += 1;
    }
    match b.get(len) {
        Some(b'.') if matches!(b.get(len + 1), Some(c) if c.is_ascii_digit()) => None,
        Some(b'_' | b'/') => None,
        _ => Some(len),
    }
}

// --- paths

const EXTENSIONS: &[&str] = &[
    "rs",
    "toml",
    "lock",
    "py",
    "pyi",
    "ipynb",
    "js",
    "mjs",
    "cjs",
    "jsx",
    "ts",
    "mts",
    "cts",
    "tsx",
    "json",
    "jsonl",
    "yaml",
    "yml",
    "md",
    "mdx",
    "rst",
    "txt",
    "cfg",
    "ini",
    "conf",
    "env",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cxx",
    "go",
    "mod",
    "java",
    "kt",
    "kts",
    "swift",
    "rb",
    "php",
    "cs",
    "fs",
    "scala",
    "sh",
    "bash",
    "zsh",
    "ps1",
    "html",
    "htm",
    "css",
    "scss",
    "vue",
    "svelte",
    "xml",
    "csv",
    "tsv",
    "log",
    "sql",
    "wasm",
    "proto",
    "patch",
    "diff",
    "gz",
    "zip",
    "tar",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "pdf",
    "traj",
    "lua",
    "pl",
    "r",
    "jl",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "dart",
    "tf",
    "gradle",
    "dockerfile",
    "makefile",
    "cmake",
    "bzl",
    "nix",
];

fn is_segment(seg: &str) -> bool {
    !seg.is_empty()
        && seg
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'+'))
}

/// Whether the last `.` of `name` starts a file extension (letters and digits, with a letter).
fn has_extension(name: &str) -> bool {
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && !stem.ends_with('.')
                && (1..=10).contains(&ext.len())
                && ext.bytes().all(|c| c.is_ascii_alphanumeric())
                && ext.bytes().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

fn known_extension(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && stem.bytes().any(|c| c.is_ascii_alphanumeric())
            && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
    })
}

/// `word` without a trailing line reference (`:120`, `:120:5`).
fn without_line_ref(word: &str) -> &str {
    let mut core = word;
    for _ in 0..2 {
        match core.rsplit_once(':') {
            Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|c| c.is_ascii_digit()) => {
                core = head;
            }
            _ => break,
        }
    }
    core
}

fn is_path(word: &str) -> bool {
    if word.contains(['(', ')', '#']) || word.contains("::") {
        return false;
    }
    let core = without_line_ref(word);
    if is_drive_path(core) {
        return true;
    }
    if core.contains(['\\', ':']) {
        return false;
    }
    if !core.contains('/') {
        return known_extension(core) && is_segment(core);
    }
    let (lead, rest) = if let Some(rest) = core.strip_prefix("~/") {
        ("~/", rest)
    } else if let Some(rest) = core.strip_prefix('/') {
        ("/", rest)
    } else {
        let rest = core.trim_start_matches("../").trim_start_matches("./");
        (if rest.len() < core.len() { "./" } else { "" }, rest)
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let segments: Vec<&str> = rest.split('/').collect();
    if !segments.iter().all(|s| is_segment(s)) {
        return false;
    }
    if !rest.bytes().any(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let n = segments.len();
    let ext = segments.last().is_some_and(|s| has_extension(s));
    match lead {
        "./" | "~/" => true,
        "/" => n >= 2 || ext,
        _ => n >= 3 || (n >= 2 && ext),
    }
}

// --- identifiers

/// Words with an inner capital that are names of products, not code.
const NOT_CODE: &[&str] = &[
    "GitHub",
    "GitLab",
    "JavaScript",
    "TypeScript",
    "OpenAI",
    "PyPI",
    "macOS",
    "iOS",
    "iPhone",
    "iPad",
    "YouTube",
    "LinkedIn",
    "PostgreSQL",
    "MySQL",
    "SQLite",
    "WebAssembly",
    "PowerShell",
    "ChatGPT",
    "NumPy",
    "SciPy",
    "PyTorch",
    "LaTeX",
    "DevOps",
    "OAuth",
    "GraphQL",
    "NodeJS",
    "VSCode",
    "WiFi",
    "PayPal",
    "WordPress",
    "JetBrains",
    "IntelliJ",
];

fn is_ident(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && bytes.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

fn is_hex(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// Whether a lone identifier carries information: `snake_case`, `_private`, `__dunder__`,
/// `camelCase`, `PascalCase`, `HTTPServer`, `Linear1D`; not a plain word.
fn informative(ident: &str) -> bool {
    if !is_ident(ident) || NOT_CODE.contains(&ident) {
        return false;
    }
    let b = ident.as_bytes();
    let letters = b.iter().filter(|c| c.is_ascii_alphabetic()).count();
    if letters == 0 {
        return false;
    }
    if ident.starts_with('_') {
        return ident.len() >= 3;
    }
    let inner = ident.trim_end_matches('_');
    if inner.contains('_') {
        return ident.len() >= 3;
    }
    let camel = b
        .windows(2)
        .any(|w| matches!(w, [l, u] if l.is_ascii_lowercase() && u.is_ascii_uppercase()))
        || b.windows(4).any(|w| {
            matches!(w, [a, b, c, d] if a.is_ascii_uppercase() && b.is_ascii_uppercase()
                && c.is_ascii_lowercase() && d.is_ascii_lowercase())
        });
    // NOTE: base64 and other random tokens have inner capitals too, with digits strewn in.
    let digit_edges = b
        .windows(2)
        .filter(|w| matches!(w, [x, y] if x.is_ascii_digit() != y.is_ascii_digit()))
        .count();
    if camel {
        // NOTE: `KiB`, `MiB` are units.
        return ident.len() >= 4 && !(ident.len() >= 16 && digit_edges >= 3);
    }
    // A digit inside (`Linear1D`, `o200k`), not only at the end (`python3`, `sha256`).
    let inner_digit = b
        .windows(2)
        .any(|w| matches!(w, [d, l] if d.is_ascii_digit() && l.is_ascii_alphabetic()));
    inner_digit && ident.len() >= 5 && letters >= 2 && digit_edges <= 3
}

fn is_version(word: &str) -> bool {
    let (core, prefixed) = match word.strip_prefix('v') {
        Some(rest) => (rest, true),
        None => (word, false),
    };
    let core = core.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    let numeric = parts
        .iter()
        .all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|c| c.is_ascii_digit()));
    numeric && parts.len() >= if prefixed { 2 } else { 3 }
}

fn is_uuid(word: &str) -> bool {
    let groups: Vec<&str> = word.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|c| c.is_ascii_hexdigit()))
}

fn is_identifier(word: &str) -> bool {
    if let Some(num) = word.strip_prefix('#') {
        return (1..=9).contains(&num.len()) && num.bytes().all(|c| c.is_ascii_digit());
    }
    if is_version(word) || is_uuid(word) {
        return true;
    }
    if (7..=64).contains(&word.len())
        && is_hex(word)
        && word.bytes().any(|c| c.is_ascii_digit())
        && word.bytes().any(|c| c.is_ascii_alphabetic())
    {
        return true;
    }
    if word.contains(['/', '\\', '~', '+', '#', '-']) {
        return false;
    }
    let (body, call) = match word.strip_suffix("()") {
        Some(body) => (body, true),
        None => (word, false),
    };
    if body.contains(['(', ')']) {
        return false;
    }
    if body.contains("::") {
        let segments: Vec<&str> = body.split("::").collect();
        return segments.len() >= 2 && segments.iter().all(|s| is_ident(s));
    }
    if body.contains(':') {
        return false;
    }
    let segments: Vec<&str> = body.split('.').collect();
    if !segments.iter().all(|s| is_ident(s)) {
        return false;
    }
    match segments.len() {
        0 => false,
        1 => informative(body),
        n => call || n >= 3 || segments.iter().any(|s| informative(s)),
    }
}

// --- commands

/// Programs whose name starts a command line.
const PROGRAMS: &[&str] = &[
    "cargo",
    "rustc",
    "rustup",
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "node",
    "tsc",
    "git",
    "gh",
    "python",
    "python3",
    "pip",
    "pip3",
    "pytest",
    "uv",
    "poetry",
    "tox",
    "ruby",
    "gem",
    "bundle",
    "go",
    "make",
    "cmake",
    "gcc",
    "g++",
    "clang",
    "javac",
    "java",
    "mvn",
    "gradle",
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "ls",
    "cd",
    "cat",
    "grep",
    "rg",
    "find",
    "sed",
    "awk",
    "head",
    "tail",
    "echo",
    "mkdir",
    "rm",
    "cp",
    "mv",
    "touch",
    "chmod",
    "curl",
    "wget",
    "tar",
    "unzip",
    "ssh",
    "scp",
    "bash",
    "sh",
    "zsh",
    "sudo",
    "apt",
    "apt-get",
    "brew",
    "diff",
    "patch",
    "wc",
    "sort",
    "xargs",
    "export",
    "source",
    "which",
    "env",
    "jq",
    "wasm-pack",
    "wasm-opt",
    "black",
    "ruff",
    "mypy",
    "flake8",
    "eslint",
    "prettier",
    "vitest",
    "jest",
    "nl",
];

/// Whether `line` reads as a shell command: a known program (or `./script`) and, unless a
/// script, at least one argument.
fn looks_like_command(line: &str) -> bool {
    let line = line.trim();
    let line = line.strip_prefix("$ ").unwrap_or(line);
    let mut parts = line.split_whitespace();
    let Some(program) = parts.next() else {
        return false;
    };
    if program.starts_with("./") && program.len() > 2 {
        return true;
    }
    PROGRAMS.contains(&program) && parts.next().is_some()
}

fn is_kebab(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() >= 2
        && s.bytes().next().is_some_and(|c| c.is_ascii_alphabetic())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

const SHELL_FENCES: &[&str] = &["bash", "sh", "shell", "console", "zsh", "terminal"];

/// Scanner 1: commands in inline code and shell code blocks; kebab-case names in inline code.
fn code<'t>(text: &'t str, sink: &mut Sink<'_, 't>) {
    if !text.contains('`') {
        return;
    }
    // None outside a block; Some(shell, first line still to come) inside one.
    let mut fence: Option<(bool, bool)> = None;
    for line in text.split('\n') {
        if sink.full() {
            return;
        }
        let trimmed = line.trim();
        if let Some(lang) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some((SHELL_FENCES.contains(&lang.trim()), true)),
            };
            continue;
        }
        match fence {
            Some((shell, first)) => {
                let command = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
                if command.is_empty() {
                    continue;
                }
                let counts = if shell && first {
                    command.split_whitespace().nth(1).is_some() || command.starts_with("./")
                } else {
                    (shell || trimmed.starts_with("$ ")) && looks_like_command(command)
                };
                if counts {
                    sink.push(
                        offset(text, command),
                        FactKind::Command,
                        Cow::Borrowed(cap(command)),
                    );
                }
                fence = Some((shell, false));
            }
            None => inline_code(text, line, sink),
        }
    }
}

fn inline_code<'t>(text: &'t str, line: &'t str, sink: &mut Sink<'_, 't>) {
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        let after = rest.get(open + 1..).unwrap_or_default();
        if after.starts_with('`') {
            // NOTE: double backticks are rare in prose; skip the run rather than misread it.
            rest = after.trim_start_matches('`');
            continue;
        }
        let Some(close) = after.find('`') else { return };
        let inner = after.get(..close).unwrap_or_default().trim();
        if looks_like_command(inner) {
            let command = inner.strip_prefix("$ ").unwrap_or(inner);
            sink.push(
                offset(text, command),
                FactKind::Command,
                Cow::Borrowed(cap(command)),
            );
        } else if is_kebab(inner) && inner.len() <= MAX_FACT_LEN {
            sink.push(
                offset(text, inner),
                FactKind::Identifier,
                Cow::Borrowed(inner),
            );
        }
        rest = after.get(close + 1..).unwrap_or_default();
    }
}

/// Scanner 2: the `command` (or `cmd`) string of a shell tool's JSON input, unescaped, its
/// first line.
fn json_commands<'t>(text: &'t str, sink: &mut Sink<'_, 't>) {
    for key in ["\"command\"", "\"cmd\""] {
        for (at, _) in text.match_indices(key) {
            if sink.full() {
                return;
            }
            let rest = text.get(at + key.len()..).unwrap_or_default().trim_start();
            let Some(rest) = rest.strip_prefix(':') else {
                continue;
            };
            let rest = rest.trim_start();
            let Some(body) = rest.strip_prefix('"') else {
                continue;
            };
            let command = json_string_line(body);
            let command = command.trim();
            if command.split_whitespace().nth(1).is_some() || command.starts_with("./") {
                let at = offset(text, body);
                let fact = cap(command).to_owned();
                sink.push(at, FactKind::Command, Cow::Owned(fact));
            }
        }
    }
}

/// The first line of the JSON string whose body (after the opening quote) `body` starts,
/// unescaped, read no further than a few times [`MAX_FACT_LEN`].
fn json_string_line(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars();
    while out.len() < 4 * MAX_FACT_LEN {
        let Some(c) = chars.next() else { break };
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n' | 'r') | None => break,
                Some('t') => out.push('\t'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let decoded = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    out.push(decoded.unwrap_or(char::REPLACEMENT_CHARACTER));
                }
                Some('b' | 'f') => {}
                Some(other) => out.push(other),
            },
            '\n' => break,
            c => out.push(c),
        }
    }
    out
}

/// `text` as it appears inside a JSON string, when that differs from `text`.
fn json_escaped(text: &str) -> Option<String> {
    if !text.contains(['"', '\\', '\t']) {
        return None;
    }
    let quoted = serde_json::to_string(text).ok()?;
    let inner = quoted.get(1..quoted.len().saturating_sub(1))?;
    (inner != text).then(|| inner.to_owned())
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
mod tests {
    use super::*;
    use crate::messages::{parse_messages, MessagesOptions};

    fn texts(text: &str) -> Vec<String> {
        extract_facts(text).into_iter().map(|f| f.text).collect()
    }

    fn kinds(text: &str) -> Vec<(FactKind, String)> {
        extract_facts(text)
            .into_iter()
            .map(|f| (f.kind, f.text))
            .collect()
    }

    fn fixture(name: &str) -> crate::messages::Conversation {
        let path = format!(
            "{}/tests/data/compaction/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        parse_messages(&value, &MessagesOptions::default()).unwrap()
    }

    #[test]
    fn paths_of_every_shape_and_not_fractions() {
        let text = "Edit src/context/mod.rs, then ./django/db/models/sql/where.py and /etc/hosts; \
            on Windows C:\\x\\y.txt. The bug is at pkg/foo.js:120. Read missing_colon.py too. \
            Not a/b, not and/or, not 1/2, not km/h, not 2024/01/02, not /tmp.";
        assert_eq!(
            kinds(text),
            [
                "src/context/mod.rs",
                "./django/db/models/sql/where.py",
                "/etc/hosts",
                "C:\\x\\y.txt",
                "pkg/foo.js:120",
                "missing_colon.py",
            ]
            .map(|t| (FactKind::Path, t.to_owned()))
        );
    }

    #[test]
    fn json_escapes_end_a_path_and_make_no_drive() {
        // a tool input is scanned as JSON text: `\n` there is a newline, not part of a word
        let input = serde_json::json!({"path": "app/io.py", "content":
            "try:\n    load()\nexcept OSError as e:\n    log(e)\nwith open(p) as f:\n\tpass\n# see app/io_util.py\nimport app/conf.py\n"});
        let text = serde_json::to_string(&input).unwrap();
        assert_eq!(
            kinds(&text),
            [
                (FactKind::Path, "app/io.py".to_owned()),
                (FactKind::Identifier, "OSError".to_owned()),
                (FactKind::Path, "app/io_util.py".to_owned()),
                (FactKind::Path, "app/conf.py".to_owned()),
            ]
        );
        // a Windows path stays whole, in plain text and escaped in JSON
        assert_eq!(
            texts("on C:\\new\\tmp.txt and (D:\\rust\\a.rs)"),
            ["C:\\new\\tmp.txt", "D:\\rust\\a.rs"]
        );
        assert_eq!(
            texts(r#"{"p":"C:\\\\new\\\\tmp.txt"}"#),
            [r"C:\\\\new\\\\tmp.txt"]
        );
    }

    #[test]
    fn urls_lose_trailing_punctuation_and_unbalanced_brackets() {
        let text = "See https://example.com/a?b=1&c=2. Also (http://x.org/y) and \
            [docs](https://docs.rs/serde/latest/serde/), ws://localhost:8080/socket, \
            file:///tmp/a.txt!";
        assert_eq!(
            texts(text),
            [
                "https://example.com/a?b=1&c=2",
                "http://x.org/y",
                "https://docs.rs/serde/latest/serde/",
                "ws://localhost:8080/socket",
                "file:///tmp/a.txt",
            ]
        );
    }

    #[test]
    fn identifiers_carry_information_and_english_does_not() {
        let text = "The get_prep_value method of SimpleLazyObject calls Foo::bar and \
            self.resolve_lookup_value() after obj.method(); see commit 35431298226165986ad07e91f9d3aca721ff38ec \
            (short 20edef5), id 123e4567-e89b-12d3-a456-426614174000, call toolu_01A09q90qw90lq917835lq9 \
            and call_abc123, issue #1234, release v1.2.3, __init__ and HTTPServer and Linear1D. \
            Plain words: The Model, decade, deadbeef, print(), e.g. i.e. GitHub IDs.";
        let found = texts(text);
        assert_eq!(
            found,
            [
                "get_prep_value",
                "SimpleLazyObject",
                "Foo::bar",
                "self.resolve_lookup_value()",
                "obj.method()",
                "35431298226165986ad07e91f9d3aca721ff38ec",
                "20edef5",
                "123e4567-e89b-12d3-a456-426614174000",
                "toolu_01A09q90qw90lq917835lq9",
                "call_abc123",
                "#1234",
                "v1.2.3",
                "__init__",
                "HTTPServer",
                "Linear1D",
            ]
        );
        assert!(extract_facts(text)
            .iter()
            .all(|f| f.kind == FactKind::Identifier));
    }

    #[test]
    fn numbers_need_a_unit() {
        let text = "Offload over 20,000 tokens (128 KiB), took 2.5 ms and 10 s, 95% done, \
            3 MB free, 42 files, 200k tokens, 1.5GB. Numbers alone: 42, 3.14, 2024, 1,000. \
            Not units: 5 apples, 7 and 8.";
        assert_eq!(
            texts(text),
            [
                "20,000 tokens",
                "128 KiB",
                "2.5 ms",
                "10 s",
                "95%",
                "3 MB",
                "42 files",
                "200k tokens",
                "1.5GB",
            ]
        );
    }

    #[test]
    fn commands_in_backticks_blocks_and_shell_tool_inputs() {
        let text = "Run `cargo test --locked` then `npm run build`; `git checkout -b x`. \
            Not `division` nor `the answer`. The crate `regex-lite` stays.\n\
            ```bash\ncd /testbed && python3 reproduce_issue.py\n```\n\
            {\"command\":\"grep -n \\\"def resolve\\\" django/db/models/sql/query.py\"}";
        assert_eq!(
            kinds(text),
            [
                (FactKind::Command, "cargo test --locked"),
                (FactKind::Command, "npm run build"),
                (FactKind::Command, "git checkout -b x"),
                (FactKind::Identifier, "regex-lite"),
                (
                    FactKind::Command,
                    "cd /testbed && python3 reproduce_issue.py"
                ),
                (FactKind::Path, "reproduce_issue.py"),
                (
                    FactKind::Command,
                    "grep -n \"def resolve\" django/db/models/sql/query.py"
                ),
                (FactKind::Path, "django/db/models/sql/query.py"),
            ]
            .map(|(k, t)| (k, t.to_owned()))
        );
    }

    #[test]
    fn facts_are_deduplicated_in_order_of_first_appearance() {
        let text = "b_var then a_var then b_var, src/x/y.rs and a_var and src/x/y.rs.";
        assert_eq!(texts(text), ["b_var", "a_var", "src/x/y.rs"]);
        let across = extract_facts_all(["one_two three", "four_five one_two"]);
        let across: Vec<_> = across.into_iter().map(|f| f.text).collect();
        assert_eq!(across, ["one_two", "four_five"]);
    }

    #[test]
    fn huge_input_is_capped_and_long_facts_cut_or_dropped() {
        let minified = format!(
            "x{}y https://a.io/{}",
            ")".repeat(200_000),
            "b".repeat(100_000)
        );
        let facts = extract_facts(&minified);
        assert_eq!(facts.len(), 1);
        assert!(facts[0].text.len() <= MAX_FACT_LEN);
        let many: String = (0..5_000).map(|i| format!("var_{i} ")).collect();
        assert_eq!(extract_facts(&many).len(), MAX_FACTS);
        let blob = format!("a_{}", "b".repeat(300));
        assert!(extract_facts(&blob).is_empty());
        let long = format!("`git commit -m {}`", "x".repeat(300));
        let facts = extract_facts(&long);
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].text.len(), MAX_FACT_LEN);
    }

    #[test]
    fn missing_facts_are_named_in_keep_and_lost_by_the_summary() {
        let span = [
            "Opened src/context/compact.rs and ran `cargo test --locked`; fn plan_compaction \
             takes 20,000 tokens. Also touched src/lib.rs and old_name.",
            "{\"command\": \"grep -rn \\\"x\\\" src\"}",
        ];
        let keep = [
            "Next: fix plan_compaction in src/context/compact.rs, run cargo test --locked",
            "the first request mentions src/lib.rs and 20,000 tokens and {\"command\": \"grep -rn \\\"x\\\" src\"}",
        ];
        let summary = "We changed src/lib.rs.";
        let missing = missing_facts(&span, &keep, &[], summary, 10);
        let got: Vec<_> = missing.iter().map(|f| (f.kind, f.text.as_str())).collect();
        // the latest text first, each in its order
        assert_eq!(
            got,
            [
                (FactKind::Command, "grep -rn \"x\" src"),
                (FactKind::Path, "src/context/compact.rs"),
                (FactKind::Command, "cargo test --locked"),
                (FactKind::Identifier, "plan_compaction"),
                (FactKind::Number, "20,000 tokens"),
            ]
        );
        // what the agent wrote goes first
        let written = ["I will rename plan_compaction next"];
        let used = missing_facts(&span, &keep, &written, summary, 2);
        let got: Vec<_> = used.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(got, ["plan_compaction", "grep -rn \"x\" src"]);
        assert_eq!(missing_facts(&span, &keep, &[], summary, 2).len(), 2);
        assert!(missing_facts(&span, &keep, &[], summary, 0).is_empty());
        assert!(missing_facts(&span, &[], &[], summary, 10).is_empty());
        // Pinned once, nothing is missing any more.
        let pinned = pin(summary, &missing);
        assert!(missing_facts(&span, &keep, &[], &pinned, 10).is_empty());
    }

    #[test]
    fn a_fact_contained_in_a_chosen_one_is_left_out() {
        let span = ["tests/missing_colon.py and missing_colon.py"];
        let keep = ["tests/missing_colon.py"];
        let got = missing_facts(&span, &keep, &[], "", 10);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].text, "tests/missing_colon.py");
    }

    #[test]
    fn pin_appends_a_short_list_or_nothing() {
        assert_eq!(pin("The summary.", &[]), "The summary.");
        let facts = [
            Fact {
                kind: FactKind::Path,
                text: "src/a.rs".to_owned(),
            },
            Fact {
                kind: FactKind::Command,
                text: "echo `x`".to_owned(),
            },
        ];
        assert_eq!(
            pin("The summary.\n", &facts),
            format!("The summary.\n\n{PIN_HEADING}\n- `src/a.rs`\n- `` echo `x` ``")
        );
        assert_eq!(
            serde_json::to_value(&facts[0]).unwrap(),
            serde_json::json!({"kind": "path", "text": "src/a.rs"})
        );
    }

    #[test]
    fn a_recorded_swe_agent_run_yields_its_paths_and_commands() {
        let conv = fixture("swe-agent-function-calling-simple.json");
        let texts: Vec<_> = conv.messages().iter().flat_map(message_texts).collect();
        let facts = extract_facts_all(texts.iter().map(|t| t.as_ref()));
        let has =
            |kind: FactKind, text: &str| facts.iter().any(|f| f.kind == kind && f.text == text);
        assert!(has(FactKind::Path, "tests/missing_colon.py"), "{facts:#?}");
        assert!(has(
            FactKind::Path,
            "/SWE-agent__test-repo/tests/missing_colon.py"
        ));
        assert!(has(FactKind::Command, "python tests/missing_colon.py"));
        assert!(has(FactKind::Identifier, "20edef5"));
        for word in [
            "SyntaxError:",
            "division",
            "colon",
            "file",
            "The",
            "issue",
            "bash",
        ] {
            assert!(facts.iter().all(|f| f.text != word), "{word} is not a fact");
        }
        assert!(facts
            .iter()
            .all(|f| f.text.len() <= MAX_FACT_LEN && !f.text.contains('\n')));
    }

    #[test]
    fn a_recorded_mini_swe_agent_run_yields_its_paths_identifiers_and_commands() {
        let conv = fixture("mini-swe-agent-django-12663.json");
        let texts: Vec<_> = conv.messages().iter().flat_map(message_texts).collect();
        let facts = extract_facts_all(texts.iter().map(|t| t.as_ref()));
        let has =
            |kind: FactKind, text: &str| facts.iter().any(|f| f.kind == kind && f.text == text);
        assert!(
            has(FactKind::Path, "django/db/models/fields/__init__.py"),
            "{facts:#?}"
        );
        assert!(has(FactKind::Path, "django/db/models/sql/query.py"));
        assert!(has(FactKind::Identifier, "SimpleLazyObject"));
        assert!(has(FactKind::Identifier, "get_prep_value"));
        assert!(has(
            FactKind::Identifier,
            "35431298226165986ad07e91f9d3aca721ff38ec"
        ));
        assert!(has(FactKind::Command, "python3 reproduce_issue.py"));
        assert!(has(
            FactKind::Command,
            "grep -n \"def resolve_lookup_value\" django/db/models/sql/query.py"
        ));
        for word in [
            "Django",
            "THOUGHT",
            "traceback",
            "regression",
            "Description",
            "root",
        ] {
            assert!(facts.iter().all(|f| f.text != word), "{word} is not a fact");
        }
    }
}
