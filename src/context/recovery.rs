//! Reading offloaded content back: the stored record, reads by lines, the list of a session's
//! offloads, a search in linear time, and the tools that hand these to the model.
//!
//! A record is one stored value: a JSON header line ([`RecordHeader`]: id, tool, size, the
//! SHA-256 of the text) and the text itself, so a read needs one `load` and a list or a search
//! one `loadRange`. The header's hash is checked on every read, so a store that hands back other
//! bytes is reported, never shown to the model as the output.
//!
//! The search runs a pattern the model wrote. It uses `regex-lite` (the small engine of the
//! Rust `regex` project), whose matching takes time linear in the text whatever the pattern
//! (a PikeVM, no backtracking), with a bound on the compiled program's size, so no pattern can
//! stall the host.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use sha2::{Digest, Sha256};

use super::text::{cap_line, group, line_count};

/// The tool that reads offloaded content by lines.
pub const READ_TOOL: &str = "read_offloaded";
/// The tool that lists a session's offloaded content.
pub const LIST_TOOL: &str = "list_offloaded";
/// The tool that searches offloaded content.
pub const GREP_TOOL: &str = "grep_offloaded";
/// The three, in the order they are defined.
pub const RECOVERY_TOOLS: [&str; 3] = [READ_TOOL, LIST_TOOL, GREP_TOOL];

/// A preview's, a read's and a match's lines are cut to this many characters (UTF-16 code
/// units).
pub const DEFAULT_LINE_CHARS: usize = 300;

/// The SHA-256 of `text`, as 64 lower-case hex digits: the checksum a record's header holds.
pub fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// Bytes as lower-case hex digits.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        for nibble in [b >> 4, b & 0x0f] {
            out.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    out
}

/// Lines a read returns when it names no limit.
pub const DEFAULT_READ_LINES: usize = 200;
/// The most lines one read returns.
pub const MAX_READ_LINES: usize = 2_000;
/// Matches a search returns when it names no limit.
pub const DEFAULT_MAX_MATCHES: usize = 100;
/// The most bytes a compiled pattern may take.
pub const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The header line of a stored record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct RecordHeader {
    /// The record format's version: 1.
    pub v: u32,
    /// The id the pointer names.
    pub id: String,
    /// The tool that produced the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_name: Option<String>,
    /// The call it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub tool_call_id: Option<String>,
    /// Its tokens when it was offloaded.
    pub tokens: u64,
    /// Whether `tokens` is an estimate.
    pub estimated: bool,
    /// Its lines.
    pub lines: usize,
    /// Its UTF-8 bytes.
    pub bytes: usize,
    /// The SHA-256 of the text, 64 hex digits.
    pub sha256: String,
}

impl RecordHeader {
    /// The stored bytes: the header as one line of JSON, a line feed, the text.
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let header = serde_json::to_string(self).unwrap_or_default();
        let mut bytes = Vec::with_capacity(header.len() + 1 + text.len());
        bytes.extend_from_slice(header.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(text.as_bytes());
        bytes
    }
}

/// Why stored content cannot be read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecoveryError {
    /// Nothing is stored under the id.
    #[error("no offloaded output has id {0:?}; list_offloaded shows the ids of this session")]
    NotFound(String),
    /// The stored bytes are not a record, or not the one that was saved.
    #[error("the stored output {id:?} is damaged: {reason}")]
    Corrupt {
        /// The id asked for.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// The search pattern does not compile, or compiles too large.
    #[error("invalid pattern: {0}")]
    Pattern(String),
}

/// A record read from its bytes: the header and the text, checked against each other.
pub fn decode<'a>(id: &str, bytes: &'a [u8]) -> Result<(RecordHeader, &'a str), RecoveryError> {
    let corrupt = |reason: &str| RecoveryError::Corrupt {
        id: id.to_owned(),
        reason: reason.to_owned(),
    };
    let split = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| corrupt("no header line"))?;
    let (head, rest) = bytes.split_at(split);
    let header: RecordHeader = crate::json::from_bytes(head)
        .ok_or_else(|| corrupt("the header is not a record header"))?;
    let text = std::str::from_utf8(rest.get(1..).unwrap_or_default())
        .map_err(|_| corrupt("the text is not UTF-8"))?;
    if header.bytes != text.len() || header.sha256 != sha256_hex(text) {
        return Err(corrupt(
            "its content does not match the hash it was saved with",
        ));
    }
    Ok((header, text))
}

/// Only the header of a record (for a list), without checking the text.
pub fn decode_header(bytes: &[u8]) -> Option<RecordHeader> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    crate::json::from_bytes(bytes.get(..end)?)
}

/// Lines of a record, read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct ReadResult {
    /// The id read.
    pub id: String,
    /// The lines, joined by line feeds, each cut to the line cap.
    pub text: String,
    /// The first line returned (from 1); past the end, `totalLines + 1` and no text.
    pub offset: usize,
    /// How many lines were returned.
    pub lines: usize,
    /// Lines in the whole output.
    pub total_lines: usize,
    /// How many returned lines were cut to the cap.
    pub capped_lines: usize,
    /// The offset of the next read, or `null` at the end.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "number | null"))]
    pub next_offset: Option<usize>,
}

/// Reads `limit` lines from line `offset` (from 1) of a record's text; lines are cut to
/// `line_chars` UTF-16 code units.
pub fn read_lines(
    id: &str,
    text: &str,
    offset: usize,
    limit: usize,
    line_chars: usize,
) -> ReadResult {
    let total = line_count(text);
    let offset = offset.max(1);
    let limit = limit.clamp(1, MAX_READ_LINES);
    let mut out = String::new();
    let (mut count, mut capped) = (0, 0);
    for line in text.lines().skip(offset - 1).take(limit) {
        let shown = cap_line(line, line_chars);
        capped += usize::from(shown.len() != line.len());
        if count > 0 {
            out.push('\n');
        }
        out.push_str(&shown);
        count += 1;
    }
    let end = offset - 1 + count;
    ReadResult {
        id: id.to_owned(),
        text: out,
        offset: offset.min(total + 1),
        lines: count,
        total_lines: total,
        capped_lines: capped,
        next_offset: (end < total).then_some(end + 1),
    }
}

/// A read as the model sees it: numbered lines and where to go next.
pub fn render_read(read: &ReadResult) -> String {
    if read.lines == 0 {
        return format!(
            "{} has {} lines; offset {} is past its end.",
            read.id,
            group(read.total_lines),
            read.offset
        );
    }
    let mut out = String::new();
    for (n, line) in (read.offset..).zip(read.text.split('\n')) {
        out.push_str(&format!("{n:>6}\t{line}\n"));
    }
    let last = read.offset + read.lines - 1;
    out.push_str(&format!(
        "[lines {}-{} of {} of {}",
        read.offset,
        last,
        group(read.total_lines),
        read.id
    ));
    match read.next_offset {
        Some(next) => out.push_str(&format!("; continue with offset {next}]")),
        None => out.push_str("; end of output]"),
    }
    out
}

/// One line that matched a search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct GrepMatch {
    /// The record's id.
    pub id: String,
    /// The line number, from 1.
    pub line: usize,
    /// The line, cut around the match to the line cap.
    pub text: String,
}

/// What a search found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct GrepResult {
    /// The matching lines, by record (in the order given) then line.
    pub matches: Vec<GrepMatch>,
    /// Whether more lines matched than were returned.
    pub truncated: bool,
    /// Records searched.
    pub searched: usize,
    /// Records skipped because they are damaged (their ids).
    pub damaged: Vec<String>,
}

/// Options of a search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct GrepOptions {
    /// Match letters of either case. Default false.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub ignore_case: bool,
    /// The most matching lines returned. Default 100.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub max_matches: usize,
    /// Each line is cut to this many characters around its first match. Default 300.
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub line_chars: usize,
}

impl Default for GrepOptions {
    fn default() -> Self {
        GrepOptions {
            ignore_case: false,
            max_matches: DEFAULT_MAX_MATCHES,
            line_chars: DEFAULT_LINE_CHARS,
        }
    }
}

/// A compiled search pattern.
#[derive(Clone, Debug)]
pub struct Pattern(regex_lite::Regex);

impl Pattern {
    /// Compiles `pattern` (Rust `regex` syntax, close to PCRE without look-around,
    /// back-references or Unicode classes), bounded to [`PATTERN_SIZE_LIMIT`].
    pub fn new(pattern: &str, ignore_case: bool) -> Result<Pattern, RecoveryError> {
        regex_lite::RegexBuilder::new(pattern)
            .case_insensitive(ignore_case)
            .size_limit(PATTERN_SIZE_LIMIT)
            .build()
            .map(Pattern)
            .map_err(|err| RecoveryError::Pattern(one_line(&err.to_string())))
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Searches records (`(id, bytes)`, as loaded) line by line.
pub fn grep<'a>(
    pattern: &Pattern,
    records: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    options: &GrepOptions,
) -> GrepResult {
    let mut search = Grep::new(pattern, options);
    for (id, bytes) in records {
        if !search.record(id, bytes) {
            break;
        }
    }
    search.finish()
}

/// A search over records handed one at a time: [`grep`] for a host that holds no more than one
/// record's bytes at once (the bindings copy each into wasm memory, which never shrinks, so a
/// session's records all copied in at once would stay its high-water mark).
#[derive(Debug)]
pub struct Grep<'a> {
    pattern: &'a Pattern,
    options: &'a GrepOptions,
    result: GrepResult,
}

impl<'a> Grep<'a> {
    /// A search with nothing searched yet.
    pub fn new(pattern: &'a Pattern, options: &'a GrepOptions) -> Self {
        Grep {
            pattern,
            options,
            result: GrepResult::default(),
        }
    }

    /// Searches the next record; false once more lines matched than `max_matches` (the
    /// result is truncated, and the records after this one need not be given).
    pub fn record(&mut self, id: &str, bytes: &[u8]) -> bool {
        let result = &mut self.result;
        if result.truncated {
            return false;
        }
        let text = match decode(id, bytes) {
            Ok((_, text)) => text,
            Err(_) => {
                result.damaged.push(id.to_owned());
                return true;
            }
        };
        let max = self.options.max_matches.max(1);
        result.searched += 1;
        for (n, line) in (1..).zip(text.lines()) {
            let Some(found) = self.pattern.0.find(line) else {
                continue;
            };
            if result.matches.len() == max {
                result.truncated = true;
                return false;
            }
            result.matches.push(GrepMatch {
                id: id.to_owned(),
                line: n,
                text: around(line, found.start(), self.options.line_chars),
            });
        }
        true
    }

    /// What was found.
    pub fn finish(self) -> GrepResult {
        self.result
    }
}

/// `line` cut to `cap` UTF-16 code units around byte offset `at` (a quarter of the cap before it).
fn around(line: &str, at: usize, cap: usize) -> String {
    use super::text::{utf16_len, utf16_suffix};
    let before = line.get(..at).unwrap_or_default();
    let lead = cap / 4;
    if utf16_len(before) <= lead {
        return cap_line(line, cap).into_owned();
    }
    let start = utf16_suffix(before, lead);
    let rest = line.get(start..).unwrap_or_default();
    format!("…{}", cap_line(rest, cap))
}

/// A search as the model sees it.
pub fn render_grep(result: &GrepResult, pattern: &str) -> String {
    if result.matches.is_empty() {
        let mut out = format!(
            "No line matches {pattern:?} in {} offloaded output{}.",
            result.searched,
            if result.searched == 1 { "" } else { "s" }
        );
        if !result.damaged.is_empty() {
            out.push_str(&format!(
                " Damaged, not searched: {}.",
                result.damaged.join(", ")
            ));
        }
        return out;
    }
    let mut out = String::new();
    for m in &result.matches {
        out.push_str(&format!("{}:{}: {}\n", m.id, m.line, m.text));
    }
    if result.truncated {
        out.push_str(&format!(
            "[only the first {} matching lines are shown; narrow the pattern or give an id]\n",
            result.matches.len()
        ));
    }
    if !result.damaged.is_empty() {
        out.push_str(&format!(
            "[damaged, not searched: {}]\n",
            result.damaged.join(", ")
        ));
    }
    out.push_str(&format!(
        "Read around a match with {READ_TOOL} {{\"id\": ..., \"offset\": <line - 20>}}."
    ));
    out
}

/// A list of offloads as the model sees it.
pub fn render_list(headers: &[RecordHeader]) -> String {
    if headers.is_empty() {
        return "Nothing has been offloaded in this session.".to_owned();
    }
    let mut out = String::new();
    for h in headers {
        out.push_str(&format!(
            "{}: {}{} tokens, {} lines",
            h.id,
            h.tool_name
                .as_deref()
                .map(|t| format!("{t}, "))
                .unwrap_or_default(),
            group(h.tokens as usize),
            group(h.lines)
        ));
        out.push('\n');
    }
    out.push_str(&format!("Read one with {READ_TOOL} {{\"id\": ...}}."));
    out
}

/// The recovery tools' definitions as JSON Schema: `(name, description, parameters)`.
pub fn tool_schemas() -> [(&'static str, &'static str, Value); 3] {
    [
        (
            READ_TOOL,
            "Read a tool output that was offloaded to save context, by lines. The pointer left \
             in its place gives its id. Returns numbered lines and the offset to continue from.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The id from the pointer."},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to read, from 1. Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_READ_LINES, "description": "Lines to read. Default 200."}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        ),
        (
            LIST_TOOL,
            "List the tool outputs offloaded in this conversation: id, tool, size.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        (
            GREP_TOOL,
            "Search offloaded tool outputs for lines matching a regular expression (Rust regex \
             syntax). Returns id:line: text for each match.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "id": {"type": "string", "description": "Search only this output. Default: all."},
                    "ignore_case": {"type": "boolean", "description": "Match either case. Default false."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        ),
    ]
}

/// The recovery tools in a format's shape: OpenAI `{type: "function", function: {...}}`,
/// Anthropic `{name, description, input_schema}`, or for the AI SDK `{name, description,
/// inputSchema}` (the JS driver turns these into an AI SDK tool set).
pub fn tool_definitions(format: crate::messages::Format) -> Vec<Value> {
    use crate::messages::Format;
    tool_schemas()
        .into_iter()
        .map(|(name, description, parameters)| match format {
            Format::OpenAi => json!({
                "type": "function",
                "function": {"name": name, "description": description, "parameters": parameters}
            }),
            Format::Anthropic => {
                json!({"name": name, "description": description, "input_schema": parameters})
            }
            Format::AiSdk => {
                json!({"name": name, "description": description, "inputSchema": parameters})
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str) -> Vec<u8> {
        RecordHeader {
            v: 1,
            id: "x".to_owned(),
            tool_name: Some("bash".to_owned()),
            tool_call_id: None,
            tokens: 3,
            estimated: false,
            lines: line_count(text),
            bytes: text.len(),
            sha256: sha256_hex(text),
        }
        .encode(text)
    }

    #[test]
    fn a_save_reads_its_key_first_and_keeps_only_an_intact_copy() {
        use crate::context::offload::{holds_copy, reads_before_write};
        let key = |kind: &str| -> Vec<String> {
            ["context-keeper", "s", kind, "x"]
                .map(str::to_owned)
                .to_vec()
        };
        let bytes = record("a\nb\nc");
        assert!(reads_before_write(&key("offload"), &bytes));
        assert!(reads_before_write(&key("archive"), b"{}"));
        assert!(
            !reads_before_write(&key("state"), &bytes),
            "other keys are written"
        );
        assert!(
            !reads_before_write(&key("offload"), b"no header"),
            "nothing to compare with"
        );
        assert!(!reads_before_write(&key("offload")[..3], &bytes), "no id");
        // the same record is the copy; a torn one, another text or nothing is not
        assert!(holds_copy(&key("offload"), &bytes, &bytes));
        let torn = bytes.get(..bytes.len() - 1).unwrap();
        assert!(!holds_copy(&key("offload"), &bytes, torn));
        assert!(!holds_copy(&key("offload"), &bytes, &record("a\nb")));
        assert!(!holds_copy(&key("offload"), &bytes, b""));
        // an archive: the same bytes
        assert!(holds_copy(&key("archive"), b"[1]", b"[1]"));
        assert!(!holds_copy(&key("archive"), b"[1]", b"[2]"));
    }

    #[test]
    fn a_record_reads_back_and_damage_is_caught() {
        let bytes = record("a\nb\nc");
        let (header, text) = decode("x", &bytes).unwrap();
        assert_eq!((header.lines, text), (3, "a\nb\nc"));
        let mut garbled = bytes.clone();
        *garbled.last_mut().unwrap() = b'z';
        assert!(matches!(
            decode("x", &garbled),
            Err(RecoveryError::Corrupt { .. })
        ));
        assert!(matches!(
            decode("x", b"no header"),
            Err(RecoveryError::Corrupt { .. })
        ));
        assert!(matches!(
            decode("x", &bytes[..bytes.len() - 1]),
            Err(RecoveryError::Corrupt { .. })
        ));
    }

    #[test]
    fn reads_page_by_lines() {
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        let read = read_lines("x", &text, 4, 3, 300);
        assert_eq!(read.text, "line 4\nline 5\nline 6");
        assert_eq!(
            (read.offset, read.lines, read.total_lines, read.next_offset),
            (4, 3, 10, Some(7))
        );
        let last = read_lines("x", &text, 9, 5, 300);
        assert_eq!((last.lines, last.next_offset), (2, None));
        let past = read_lines("x", &text, 50, 5, 300);
        assert_eq!((past.lines, past.offset), (0, 11));
        assert!(render_read(&read).starts_with("     4\tline 4\n"));
        assert!(render_read(&past).contains("past its end"));
    }

    #[test]
    fn grep_is_linear_on_a_pattern_that_backtracks_exponentially_elsewhere() {
        let text = format!("{}!\n", "a".repeat(50_000));
        let bytes = record(&text);
        let pattern = Pattern::new("(a+)+$", false).unwrap();
        let started = std::time::Instant::now();
        let found = grep(&pattern, [("x", bytes.as_slice())], &GrepOptions::default());
        assert!(found.matches.is_empty());
        // NOTE: a backtracking engine takes longer than the age of the universe here.
        assert!(started.elapsed().as_secs() < 5);
        assert!(matches!(
            Pattern::new("(", false),
            Err(RecoveryError::Pattern(_))
        ));
        assert!(matches!(
            Pattern::new("a{1000}{1000}", false),
            Err(RecoveryError::Pattern(_))
        ));
    }

    #[test]
    fn grep_reports_line_numbers_and_stops_at_the_limit() {
        let bytes = record("alpha\nbeta\nALPHA\n");
        let pattern = Pattern::new("alpha", true).unwrap();
        let options = GrepOptions {
            max_matches: 1,
            ..GrepOptions::default()
        };
        let found = grep(&pattern, [("x", bytes.as_slice())], &options);
        assert_eq!(found.matches.len(), 1);
        assert_eq!((found.matches[0].line, found.truncated), (1, true));
        let all = grep(
            &pattern,
            [("x", bytes.as_slice()), ("y", b"junk".as_slice())],
            &GrepOptions::default(),
        );
        assert_eq!(
            all.matches.iter().map(|m| m.line).collect::<Vec<_>>(),
            [1, 3]
        );
        assert_eq!(all.damaged, ["y"]);
    }

    #[test]
    fn a_search_given_one_record_at_a_time_stops_asking_once_truncated() {
        let (a, b) = (record("alpha\nalpha\n"), record("alpha\n"));
        let pattern = Pattern::new("alpha", false).unwrap();
        let options = GrepOptions {
            max_matches: 2,
            ..GrepOptions::default()
        };
        let mut search = Grep::new(&pattern, &options);
        assert!(search.record("a", &a), "two matches, at the limit: go on");
        assert!(search.record("junk", b"junk"), "a damaged record: go on");
        assert!(!search.record("b", &b), "a third match: truncated");
        assert!(!search.record("c", &b), "and after");
        let found = search.finish();
        assert_eq!((found.searched, found.truncated), (2, true));
        assert_eq!(found.damaged, ["junk"]);
        let whole = grep(
            &pattern,
            [
                ("a", a.as_slice()),
                ("junk", b"junk".as_slice()),
                ("b", b.as_slice()),
                ("c", b.as_slice()),
            ],
            &options,
        );
        assert_eq!(whole, found);
    }
}
