//! What makes one word a fact by its shape: URLs, numbers with units, paths, identifiers.

use super::kind::MAX_FACT_LEN;

// --- URLs

pub(super) const SCHEMES: [&str; 5] = ["https://", "http://", "wss://", "ws://", "file://"];

/// Where a URL starts in `word`, if one does.
pub(super) fn url_start(word: &str) -> Option<usize> {
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
pub(super) fn url_at(rest: &str) -> &str {
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

pub(super) const UNITS: &[&str] = &[
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
pub(super) fn number_with_unit(
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
pub(super) fn number_len(w: &str) -> Option<usize> {
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

pub(super) const EXTENSIONS: &[&str] = &[
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

pub(super) fn is_segment(seg: &str) -> bool {
    !seg.is_empty()
        && seg
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b'+'))
}

/// Whether the last `.` of `name` starts a file extension (letters and digits, with a letter).
pub(super) fn has_extension(name: &str) -> bool {
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

pub(super) fn known_extension(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && stem.bytes().any(|c| c.is_ascii_alphanumeric())
            && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
    })
}

/// `word` without a trailing line reference (`:120`, `:120:5`).
pub(super) fn without_line_ref(word: &str) -> &str {
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

pub(super) fn is_path(word: &str) -> bool {
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
pub(super) const NOT_CODE: &[&str] = &[
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

pub(super) fn is_ident(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && bytes.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

pub(super) fn is_hex(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// Whether a lone identifier carries information: `snake_case`, `_private`, `__dunder__`,
/// `camelCase`, `PascalCase`, `HTTPServer`, `Linear1D`; not a plain word.
pub(super) fn informative(ident: &str) -> bool {
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

pub(super) fn is_version(word: &str) -> bool {
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

pub(super) fn is_uuid(word: &str) -> bool {
    let groups: Vec<&str> = word.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|c| c.is_ascii_hexdigit()))
}

pub(super) fn is_identifier(word: &str) -> bool {
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

/// `text` cut to at most `max` bytes at a character boundary.
pub(super) fn cap_bytes(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// Whether `word` starts like a Windows path: a drive letter, `:\`, then a name, which is
/// more than the one letter of an escape (`e:\n` is `except OSError as e:` then a newline,
/// in JSON text).
pub(super) fn is_drive_path(word: &str) -> bool {
    match word.as_bytes() {
        [drive, b':', b'\\', rest @ ..] => {
            drive.is_ascii_alphabetic()
                && !matches!(rest, [b'n' | b'r' | b't'])
                && rest.iter().any(u8::is_ascii_alphanumeric)
        }
        _ => false,
    }
}
