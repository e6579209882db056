//! Text helpers the tiers share: lines, lengths in UTF-16 code units (what a JS host's
//! `string.length` says), cuts that never split a character, and capped lines for previews.

/// The length of `text` in UTF-16 code units, as JavaScript's `length` counts it.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The byte offset at which the first `units` UTF-16 code units of `text` end, rounded down
/// to a character boundary.
pub fn utf16_prefix(text: &str, units: usize) -> usize {
    let mut seen = 0;
    for (at, c) in text.char_indices() {
        seen += c.len_utf16();
        if seen > units {
            return at;
        }
    }
    text.len()
}

/// The byte offset at which the last `units` UTF-16 code units of `text` start, rounded up
/// to a character boundary.
pub fn utf16_suffix(text: &str, units: usize) -> usize {
    let mut seen = 0;
    for (at, c) in text.char_indices().rev() {
        seen += c.len_utf16();
        if seen > units {
            return at + c.len_utf8();
        }
    }
    0
}

/// How many lines `text` has: one more than its line feeds, unless it ends with one (which
/// closes its last line); 0 for the empty text. As many as `str::lines` yields.
pub fn line_count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let feeds = text.bytes().filter(|&b| b == b'\n').count();
    if text.ends_with('\n') {
        feeds
    } else {
        feeds + 1
    }
}

/// `line` cut to at most `cap` UTF-16 code units, with a note of how much was cut, so that one
/// minified line cannot flood a preview or a read.
pub fn cap_line(line: &str, cap: usize) -> std::borrow::Cow<'_, str> {
    let len = utf16_len(line);
    if len <= cap {
        return std::borrow::Cow::Borrowed(line);
    }
    let head = line.get(..utf16_prefix(line, cap)).unwrap_or_default();
    std::borrow::Cow::Owned(format!(
        "{head}… [{} more characters on this line]",
        group(len - utf16_len(head))
    ))
}

/// A number with thousands separators: `48,213`.
pub fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_cuts_keep_characters_whole() {
        let text = "a😀b"; // 1 + 2 + 1 units
        assert_eq!(utf16_len(text), 4);
        assert_eq!(&text[..utf16_prefix(text, 2)], "a"); // the emoji does not fit in 2
        assert_eq!(&text[..utf16_prefix(text, 3)], "a😀");
        assert_eq!(&text[utf16_suffix(text, 2)..], "b");
        assert_eq!(&text[utf16_suffix(text, 3)..], "😀b");
        assert_eq!(utf16_prefix(text, 99), text.len());
        assert_eq!(utf16_suffix(text, 99), 0);
    }

    #[test]
    fn lines_are_counted_as_an_editor_shows_them() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("\n\n"), 2);
    }

    #[test]
    fn long_lines_are_capped_with_a_note() {
        assert_eq!(cap_line("short", 10), "short");
        let long = "x".repeat(1000);
        let capped = cap_line(&long, 300);
        assert!(capped.starts_with(&"x".repeat(300)));
        assert!(
            capped.ends_with("[700 more characters on this line]"),
            "{capped}"
        );
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(12), "12");
    }
}
