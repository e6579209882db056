//! The summary compaction writes when the host gave no summarizer (DESIGN.md, "The
//! operations", 6), so that compaction works offline: a deterministic Markdown digest of what
//! the archived messages did (the task, tools used, files touched, commands run, errors, the
//! last state, exact details), marked as such. It lists; it does not interpret.

use std::collections::HashMap;

use serde_json::Value;

use super::facts::{
    by_use, extract_facts_all, message_texts, push_code, written_texts, FactKind, MAX_FACT_LEN,
};
use super::result;
use super::text::{utf16_len, utf16_prefix};
use crate::messages::{Message, PartKind, Role, ToolInput};

/// The first line of every heuristic summary.
// NOTE: worded as information, not as an error: a reader (the model, or a person opening the
// marker) should see what kind of summary this is, not that something went wrong.
pub const HEURISTIC_HEADER: &str =
    "[heuristic summary of the earlier turns, made without a model: \
it lists what the archived messages did, not what they meant]";

/// The input fields that name a file.
const PATH_FIELDS: [&str; 5] = ["path", "file_path", "filePath", "filename", "file"];
/// The input fields that hold a shell command.
const COMMAND_FIELDS: [&str; 3] = ["command", "cmd", "script"];
/// Words in a tool name (or its one-word `command` input) that say it writes or reads a file.
const WRITE_WORDS: [&str; 7] = [
    "write", "edit", "create", "replace", "insert", "patch", "delete",
];
const READ_WORDS: [&str; 5] = ["read", "cat", "view", "open", "show"];

const MAX_TOOLS: usize = 30;
const MAX_FILES: usize = 40;
const MAX_COMMANDS: usize = 10;
const MAX_ERRORS: usize = 5;
const MAX_DETAILS: usize = 20;
/// A prose section shorter than this after a cut is dropped rather than kept as a stub.
const MIN_PROSE: usize = 40;

/// A deterministic Markdown summary of `span` (the messages being archived), at most
/// `budget_chars` UTF-16 code units and never longer than the span's own text. It starts with
/// [`HEURISTIC_HEADER`], then: Task (`first_request`, cut), Earlier summary
/// (`previous_summary`, folded in, cut), Tools used, Files touched, Commands run, Errors seen,
/// Last state (the span's last assistant text, cut) and Key details. Over budget, the lower
/// sections go first. Linear in the size of the span.
pub fn heuristic_summary(
    span: &[Message],
    first_request: Option<&str>,
    previous_summary: Option<&str>,
    budget_chars: usize,
) -> String {
    let span_chars: usize = span
        .iter()
        .flat_map(message_texts)
        .map(|t| utf16_len(&t))
        .sum();
    let limit = budget_chars.min(span_chars);
    let digest = Digest::of(span);

    let mut sections: Vec<Section> = Vec::new();
    let prose = |title, text: Option<&str>, share: usize| {
        let text = text.map(str::trim).filter(|t| !t.is_empty())?;
        Some(Section {
            title,
            items: vec![cut(text, (limit / share).max(MIN_PROSE))],
            prose: true,
        })
    };
    sections.extend(prose("Task", first_request, 4));
    sections.extend(prose("Earlier summary", previous_summary, 4));
    let list = |title, items: Vec<String>| Section {
        title,
        items,
        prose: false,
    };
    sections.push(list(
        "Tools used",
        (digest.tools.iter().take(MAX_TOOLS))
            .map(|(name, n)| {
                let mut line = String::from("- ");
                push_code(&mut line, name);
                line.push_str(&format!(" x{n}"));
                line
            })
            .collect(),
    ));
    sections.push(list(
        "Files touched",
        (digest.files.iter().take(MAX_FILES))
            .map(|f| {
                let mut line = String::from("- ");
                push_code(&mut line, &f.path);
                match (f.written, f.read) {
                    (true, _) => line.push_str(" (written)"),
                    (false, true) => line.push_str(" (read)"),
                    _ => {}
                }
                line
            })
            .collect(),
    ));
    let last = |items: &[String], n: usize| -> Vec<String> {
        let skip = items.len().saturating_sub(n);
        (items.iter().skip(skip))
            .map(|c| {
                let mut line = String::from("- ");
                push_code(&mut line, c);
                line
            })
            .collect()
    };
    sections.push(list("Commands run", last(&digest.commands, MAX_COMMANDS)));
    sections.push(list("Errors seen", last(&digest.errors, MAX_ERRORS)));
    sections.extend(prose("Last state", digest.last_state.as_deref(), 5));
    let listed: std::collections::HashSet<&str> = (digest.files.iter().map(|f| f.path.as_str()))
        .chain(digest.commands.iter().map(String::as_str))
        .collect();
    // NOTE: the details the agent itself used first, then the rest, each latest first.
    let texts: Vec<_> = span.iter().flat_map(message_texts).collect();
    let written: Vec<_> = span.iter().flat_map(written_texts).collect();
    let facts: Vec<_> = by_use(
        &texts.iter().map(|t| t.as_ref()).collect::<Vec<_>>(),
        &written.iter().map(|t| t.as_ref()).collect::<Vec<_>>(),
    )
    .into_iter()
    .filter(|f| !listed.contains(f.text.as_str()))
    .collect();
    sections.push(list(
        "Key details",
        (facts.iter().take(MAX_DETAILS))
            .map(|f| {
                let mut line = String::from("- ");
                push_code(&mut line, &f.text);
                line
            })
            .collect(),
    ));
    render(sections, limit)
}

/// A titled part of the summary: prose (one paragraph, cut to fit) or a list (lines dropped
/// from the end to fit).
struct Section {
    title: &'static str,
    items: Vec<String>,
    prose: bool,
}

impl Section {
    fn heading_len(&self) -> usize {
        // "\n\n## " + title + "\n"
        6 + self.title.len()
    }
}

/// The sections under the header, trimmed from the bottom up until they fit `limit`.
fn render(mut sections: Vec<Section>, limit: usize) -> String {
    sections.retain(|s| !s.items.is_empty());
    let item_len = |item: &String| utf16_len(item) + 1;
    let mut total = utf16_len(HEURISTIC_HEADER)
        + sections
            .iter()
            .map(|s| s.heading_len() - 1 + s.items.iter().map(item_len).sum::<usize>())
            .sum::<usize>();
    while total > limit {
        let Some(section) = sections.last_mut() else {
            break;
        };
        let excess = total - limit;
        if section.prose {
            if let Some(item) = section.items.last_mut() {
                let len = utf16_len(item);
                if len > excess + MIN_PROSE {
                    let shorter = cut(item, len - excess);
                    total = total - len + utf16_len(&shorter);
                    *item = shorter;
                    continue;
                }
            }
        }
        if let Some(item) = section.items.pop() {
            total -= item_len(&item);
        }
        if section.items.is_empty() {
            total -= section.heading_len() - 1;
            sections.pop();
        }
    }
    let mut out = String::from(HEURISTIC_HEADER);
    for section in &sections {
        out.push_str("\n\n## ");
        out.push_str(section.title);
        for item in &section.items {
            out.push('\n');
            out.push_str(item);
        }
    }
    if utf16_len(&out) > limit {
        out.truncate(utf16_prefix(&out, limit));
    }
    out
}

/// `text` cut to at most `max` UTF-16 code units, ending with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if utf16_len(text) <= max {
        return text.to_owned();
    }
    let head = text
        .get(..utf16_prefix(text, max.saturating_sub(1)))
        .unwrap_or_default();
    format!("{}…", head.trim_end())
}

/// One file the span's tool calls named.
struct File {
    path: String,
    written: bool,
    read: bool,
}

/// What the span did, in one pass.
#[derive(Default)]
struct Digest {
    tools: Vec<(String, usize)>,
    files: Vec<File>,
    commands: Vec<String>,
    errors: Vec<String>,
    last_state: Option<String>,
}

impl Digest {
    fn of(span: &[Message]) -> Digest {
        let mut d = Digest::default();
        let mut tool_at: HashMap<String, usize> = HashMap::new();
        let mut file_at: HashMap<String, usize> = HashMap::new();
        for message in span {
            let mut text = String::new();
            for part in message.parts() {
                match part.kind() {
                    PartKind::Text if message.role() == Role::Assistant => {
                        if let Some(t) = part.text() {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                            for command in fenced_commands(t) {
                                d.command(command, &mut file_at);
                            }
                        }
                    }
                    PartKind::ToolCall => {
                        let name = part.tool_name().unwrap_or("(unnamed)");
                        match tool_at.get(name).and_then(|&i| d.tools.get_mut(i)) {
                            Some((_, n)) => *n += 1,
                            None => {
                                tool_at.insert(name.to_owned(), d.tools.len());
                                d.tools.push((name.to_owned(), 1));
                            }
                        }
                        d.call(name, part.tool_input(), &mut file_at);
                        if part.is_error() {
                            d.error(part.result_slot());
                        }
                    }
                    PartKind::ToolResult if part.is_error() => d.error(part.result_slot()),
                    _ => {}
                }
            }
            if !text.trim().is_empty() {
                d.last_state = Some(text);
            }
        }
        d
    }

    fn call(
        &mut self,
        name: &str,
        input: Option<ToolInput<'_>>,
        file_at: &mut HashMap<String, usize>,
    ) {
        let parsed;
        let value = match input {
            Some(ToolInput::Json(v)) => v,
            Some(ToolInput::Text(t)) => {
                parsed = serde_json::from_str::<Value>(t).unwrap_or(Value::Null);
                &parsed
            }
            None => return,
        };
        let Value::Object(fields) = value else { return };
        let string = |key: &str| fields.get(key).and_then(Value::as_str);
        // NOTE: an editor tool's one-word `command` (`view`, `create`, `str_replace`) says what
        // it does, like its name.
        let verb = COMMAND_FIELDS
            .iter()
            .filter_map(|k| string(k))
            .find(|c| !c.trim().contains(char::is_whitespace));
        let name = name.to_ascii_lowercase();
        let verb = verb.map(str::to_ascii_lowercase);
        let has = |text: &str, words: &[&str]| words.iter().any(|w| text.contains(w));
        // The verb, when it says something, wins over the name (`str_replace_editor` views).
        let says = |words: &[&str]| match &verb {
            Some(v) if has(v, &WRITE_WORDS) || has(v, &READ_WORDS) => has(v, words),
            _ => has(&name, words),
        };
        let (written, read) = (says(&WRITE_WORDS), says(&READ_WORDS));
        for key in PATH_FIELDS {
            if let Some(path) = string(key) {
                self.file(path, written, read && !written, file_at);
            }
        }
        for key in COMMAND_FIELDS {
            if let Some(command) = string(key) {
                if command.trim().contains(char::is_whitespace) {
                    self.command(command, file_at);
                }
            }
        }
    }

    fn command(&mut self, command: &str, file_at: &mut HashMap<String, usize>) {
        let first = command.trim().lines().next().unwrap_or_default().trim();
        if first.is_empty() {
            return;
        }
        let more = command.trim().lines().nth(1).is_some();
        let mut line = cut(first, MAX_FACT_LEN);
        if more && !line.ends_with('…') {
            line.push_str(" …");
        }
        // NOTE: the last run of a repeated command is the one that matters; keep it there.
        self.commands.retain(|c| *c != line);
        self.commands.push(line);
        for fact in extract_facts_all([command]) {
            if fact.kind == FactKind::Path {
                self.file(&fact.text, false, false, file_at);
            }
        }
    }

    fn file(
        &mut self,
        path: &str,
        written: bool,
        read: bool,
        file_at: &mut HashMap<String, usize>,
    ) {
        let path = path.trim();
        if path.is_empty() || path.len() > MAX_FACT_LEN || path.contains('\n') {
            return;
        }
        match file_at.get(path).and_then(|&i| self.files.get_mut(i)) {
            Some(f) => {
                f.written |= written;
                f.read |= read;
            }
            None => {
                file_at.insert(path.to_owned(), self.files.len());
                self.files.push(File {
                    path: path.to_owned(),
                    written,
                    read,
                });
            }
        }
    }

    fn error(&mut self, slot: Option<(crate::messages::ResultShape, &Value)>) {
        let Some(read) = slot.and_then(|(shape, value)| result::read(shape, value)) else {
            self.errors.push("(no text)".to_owned());
            return;
        };
        let line = read.text.lines().map(str::trim).find(|l| !l.is_empty());
        self.errors
            .push(cut(line.unwrap_or("(no text)"), MAX_FACT_LEN));
    }
}

/// The first line of each shell code block in `text` (how text-only agents run commands).
fn fenced_commands(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut fence: Option<bool> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(lang) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(
                    lang.trim(),
                    "bash" | "sh" | "shell" | "console" | "zsh"
                )),
            };
            continue;
        }
        if fence == Some(true) && !trimmed.is_empty() {
            out.push(trimmed.strip_prefix("$ ").unwrap_or(trimmed));
            fence = Some(false);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{parse_messages, MessagesOptions};
    use serde_json::json;

    fn read(value: &Value) -> crate::messages::Conversation {
        parse_messages(value, &MessagesOptions::default()).unwrap()
    }

    fn fixture(name: &str) -> crate::messages::Conversation {
        let path = format!(
            "{}/tests/data/compaction/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        read(&serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
    }

    fn span_chars(span: &[Message]) -> usize {
        span.iter()
            .flat_map(message_texts)
            .map(|t| utf16_len(&t))
            .sum()
    }

    #[test]
    fn a_recorded_run_is_listed_tools_files_commands_and_last_state() {
        let conv = fixture("swe-agent-function-calling-simple.json");
        let span = &conv.messages()[1..];
        let first = conv.messages()[1].parts()[0].text();
        let summary = heuristic_summary(span, first, None, 4_000);
        assert!(summary.starts_with(HEURISTIC_HEADER), "{summary}");
        for expected in [
            "## Task\nWe're currently solving the following issue",
            "## Tools used\n- `find_file` x1\n- `open` x1\n- `edit` x1\n- `bash` x1\n- `submit` x1",
            "- `tests/missing_colon.py` (read)",
            "## Commands run\n- `python tests/missing_colon.py`",
            "## Last state\nThe script ran successfully",
            "## Key details",
        ] {
            assert!(
                summary.contains(expected),
                "{expected:?} missing from\n{summary}"
            );
        }
        assert!(utf16_len(&summary) <= 4_000);
        // Deterministic.
        assert_eq!(summary, heuristic_summary(span, first, None, 4_000));
    }

    #[test]
    fn text_only_agents_have_their_shell_blocks_listed_as_commands() {
        let conv = fixture("mini-swe-agent-django-12663.json");
        let summary = heuristic_summary(conv.messages(), None, None, 3_000);
        assert!(summary.contains("## Commands run\n- `ls -la`\n- `python3 reproduce_issue.py`"));
        assert!(summary.contains("- `django/db/models/sql/query.py`"));
        assert!(!summary.contains("## Tools used"));
    }

    #[test]
    fn files_are_labelled_by_what_the_tool_name_says_and_errors_listed() {
        let body = "fn a() { let total = 1 + 2; }\n".repeat(100);
        let input = json!([
            {"role": "user", "content": "fix it"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/a.rs"}},
                {"type": "tool_use", "id": "t2", "name": "write_file", "input": {"file_path": "src/b.rs", "content": "x"}},
                {"type": "tool_use", "id": "t3", "name": "str_replace_editor", "input": {"command": "view", "path": "/repo/c.py"}},
                {"type": "tool_use", "id": "t4", "name": "run", "input": {"command": "cargo test --locked -p core"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": body},
                {"type": "tool_result", "tool_use_id": "t2", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t3", "content": "print(1)"},
                {"type": "tool_result", "tool_use_id": "t4", "is_error": true,
                 "content": "\nerror[E0425]: cannot find value `x` in this scope\n  --> src/b.rs:1:1"}
            ]},
            {"role": "assistant", "content": "The test fails at src/b.rs:1:1; next I fix `x`."}
        ]);
        let conv = read(&input);
        let summary = heuristic_summary(
            conv.messages(),
            Some("fix it"),
            Some("Earlier: set up the repo."),
            5_000,
        );
        for expected in [
            "## Earlier summary\nEarlier: set up the repo.",
            "- `src/a.rs` (read)\n- `src/b.rs` (written)\n- `/repo/c.py` (read)",
            "## Commands run\n- `cargo test --locked -p core`",
            "## Errors seen\n- ``error[E0425]: cannot find value `x` in this scope``",
            "## Last state\nThe test fails at src/b.rs:1:1",
            "- `src/b.rs:1:1`",
        ] {
            assert!(
                summary.contains(expected),
                "{expected:?} missing from\n{summary}"
            );
        }
    }

    #[test]
    fn the_budget_trims_lower_sections_first_and_the_span_bounds_the_length() {
        let conv = fixture("swe-agent-function-calling-simple.json");
        let span = &conv.messages()[1..];
        let first = conv.messages()[1].parts()[0].text();
        let full = heuristic_summary(span, first, None, 100_000);
        assert!(utf16_len(&full) <= span_chars(span));
        let mut previous = usize::MAX;
        for budget in [2_000, 1_200, 600, 300, 150, 60, 10, 0] {
            let summary = heuristic_summary(span, first, None, budget);
            let len = utf16_len(&summary);
            assert!(len <= budget, "{len} > {budget}:\n{summary}");
            assert!(len <= previous);
            previous = len;
            if budget >= 600 {
                assert!(summary.contains("## Task"), "{summary}");
                assert!(summary.starts_with(HEURISTIC_HEADER));
            }
        }
        let small = heuristic_summary(span, first, None, 600);
        assert!(!small.contains("## Key details"), "{small}");

        // A tiny span gets a summary no longer than itself.
        let tiny = read(&json!([{"role": "assistant", "content": "done"}]));
        assert!(utf16_len(&heuristic_summary(tiny.messages(), None, None, 1_000)) <= 4);
        assert_eq!(heuristic_summary(&[], None, None, 1_000), "");
    }
}
