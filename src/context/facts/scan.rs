//! The scanner's frame: the candidates each scanner finds, the sink that keeps each text once,
//! and the splitting of a text into words and sub-words; and the scanners of commands (shell
//! fences, inline code, JSON command fields).

use std::borrow::Cow;
use std::collections::HashSet;

use super::kind::{FactKind, MAX_FACTS, MAX_FACT_LEN};
use super::shapes::*;

/// A fact found at a byte offset, by one scanner.
pub(super) struct Candidate<'t> {
    pub(super) at: usize,
    pub(super) scanner: u8,
    pub(super) kind: FactKind,
    pub(super) text: Cow<'t, str>,
}

/// Where a scanner puts what it finds: each text once, at most [`MAX_FACTS`].
pub(super) struct Sink<'s, 't> {
    out: &'s mut Vec<Candidate<'t>>,
    seen: HashSet<Cow<'t, str>>,
    scanner: u8,
}

impl<'s, 't> Sink<'s, 't> {
    pub(super) fn new(out: &'s mut Vec<Candidate<'t>>, scanner: u8) -> Self {
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
pub(super) fn cap(text: &str) -> &str {
    if text.len() <= MAX_FACT_LEN {
        return text;
    }
    cap_bytes(text, MAX_FACT_LEN).trim_end()
}

/// The byte offset of `part` inside `whole` (`part` is a subslice of it).
pub(super) fn offset(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

/// The runs of non-whitespace in `text`, with their offsets.
pub(super) fn ws_words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(char::is_whitespace)
        .filter(|w| !w.is_empty())
        .map(move |w| (offset(text, w), w))
}

/// Scanner 0: URLs, numbers with units, paths and identifiers, word by word.
pub(super) fn words<'t>(text: &'t str, sink: &mut Sink<'_, 't>) {
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
pub(super) fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '_' | '/' | '\\' | '.' | ':' | '-' | '#' | '~' | '+' | '(' | ')'
        )
}

pub(super) fn subwords<'t>(text: &'t str, word: &'t str, sink: &mut Sink<'_, 't>) {
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
pub(super) fn unescaped(piece: &str) -> impl Iterator<Item = &str> {
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

/// A word without the punctuation around it: leading `(`, `:`, `-`; trailing sentence
/// punctuation and unbalanced closing parentheses.
pub(super) fn strip(word: &str) -> &str {
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

pub(super) fn classify(word: &str) -> Option<FactKind> {
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

// --- commands

/// Programs whose name starts a command line.
pub(super) const PROGRAMS: &[&str] = &[
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
pub(super) fn looks_like_command(line: &str) -> bool {
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

pub(super) fn is_kebab(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() >= 2
        && s.bytes().next().is_some_and(|c| c.is_ascii_alphabetic())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

pub(super) const SHELL_FENCES: &[&str] = &["bash", "sh", "shell", "console", "zsh", "terminal"];

/// Scanner 1: commands in inline code and shell code blocks; kebab-case names in inline code.
pub(super) fn code<'t>(text: &'t str, sink: &mut Sink<'_, 't>) {
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

pub(super) fn inline_code<'t>(text: &'t str, line: &'t str, sink: &mut Sink<'_, 't>) {
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
pub(super) fn json_commands<'t>(text: &'t str, sink: &mut Sink<'_, 't>) {
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
pub(super) fn json_string_line(body: &str) -> String {
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
pub(super) fn json_escaped(text: &str) -> Option<String> {
    if !text.contains(['"', '\\', '\t']) {
        return None;
    }
    let quoted = serde_json::to_string(text).ok()?;
    let inner = quoted.get(1..quoted.len().saturating_sub(1))?;
    (inner != text).then(|| inner.to_owned())
}
