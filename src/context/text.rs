//! Text helpers the tiers share: lines, lengths in UTF-16 code units (what a JS host's
//! `string.length` says), cuts that never split a character, and capped lines for previews.

/// The length of `text` in UTF-16 code units, as JavaScript's `length` counts it.
pub fn utf16_len(text: &str) -> usize {
    // NOTE: from the bytes, eight at a time (the tiers measure every old tool result on every
    // prepare, and wasm has no vector unit to do this for us): every byte but a continuation
    // byte (0b10xx_xxxx) starts a character, one unit; a four-byte character (lead byte
    // 0b1111_0xxx) is two, a surrogate pair.
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bytes = text.as_bytes();
    let mut chunks = bytes.chunks_exact(8);
    let mut units = bytes.len();
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        // bit 7 of each byte: of the byte itself, and of it shifted left by 1, 2, 3 (its bits
        // 6, 5, 4); a byte's bits never reach another byte's bit 7 through these shifts.
        let continuation = w & !(w << 1) & HIGH;
        let four = w & (w << 1) & (w << 2) & (w << 3) & HIGH;
        units = units + four.count_ones() as usize - continuation.count_ones() as usize;
    }
    for &b in chunks.remainder() {
        units = units + usize::from(b >= 0xF0) - usize::from((0x80..0xC0).contains(&b));
    }
    units
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

/// Counts the bytes written to it, as text or as bytes: a first pass that sizes a buffer
/// exactly (a 10 MB archive or transcript built in a growing buffer held up to three times
/// its size at once).
#[derive(Debug, Default)]
pub(crate) struct ByteCount(pub usize);

impl std::fmt::Write for ByteCount {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
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

    // NOTE: proptest is a host-only dev-dependency.
    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn utf16_len_is_the_length_js_sees(text in "\\PC{0,40}|[a\u{e9}\u{4e2d}\u{1f600}\u{10ffff}]{0,40}") {
            proptest::prop_assert_eq!(utf16_len(&text), text.encode_utf16().count());
        }
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
