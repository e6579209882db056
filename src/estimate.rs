//! A token estimate that needs no tables: one pass over the characters, no allocation.
//!
//! The text is cut into the pieces the o200k_base pre-tokenizer makes (words with an optional
//! leading space or punctuation character and a case split, contractions, digit groups of up to
//! three, punctuation runs with trailing newlines, whitespace runs), and each piece adds to a
//! handful of counters ([`features`]): ASCII words by length, letters of each script, digit
//! groups, punctuation and whitespace runs by length. The estimate is those counters weighted by
//! [`WEIGHTS`], a constant array fitted against exact o200k_base counts by
//! `examples/estimate_fit.rs` (see there for the method and the corpora); no vocabulary or rank
//! data is involved.

/// Longest ASCII word (in letters) with a weight of its own; longer ones add [`W_LONG`].
const WORD_BUCKETS: usize = 16;
/// Longest punctuation run with a weight of its own; longer ones add [`P_LONG`].
const PUNCT_BUCKETS: usize = 4;
/// Standalone space runs of 1..=SPACE_BUCKETS have a weight each; [`S_LONG`] adds the length.
const SPACE_BUCKETS: usize = 4;

/// The scripts priced separately, for letters outside ASCII.
const SCRIPTS: usize = 16;

// Feature indices. ASCII word pieces of 1..=WORD_BUCKETS letters come first.
const W_FIRST: usize = 0;
/// ASCII letters beyond [`WORD_BUCKETS`] in a word piece.
const W_LONG: usize = W_FIRST + WORD_BUCKETS;
/// Letters of all-capital ASCII word pieces of two letters or more (`HTTP`, `JSON`).
const CAPS: usize = W_LONG + 1;
/// Word pieces led by a punctuation character (`.foo`, `(bar`).
const PUNCT_LED: usize = CAPS + 1;
/// Word pieces mixing ASCII and other letters (`Declaración`), and their ASCII letters.
const MIXED: usize = PUNCT_LED + 1;
const MIXED_ASCII: usize = MIXED + 1;
/// Word pieces with no ASCII letter, by the script of their first letter.
const PIECES: usize = MIXED_ASCII + 1;
/// Letters outside ASCII, by script.
const LETTERS: usize = PIECES + SCRIPTS;
/// Groups of up to three digits.
const DIGITS: usize = LETTERS + SCRIPTS;
/// Punctuation pieces of 1..=PUNCT_BUCKETS characters.
const P_FIRST: usize = DIGITS + 1;
const P_LONG: usize = P_FIRST + PUNCT_BUCKETS;
/// UTF-8 bytes of punctuation and symbols outside ASCII (emoji, dashes, quotes).
const P_BYTES: usize = P_LONG + 1;
/// Punctuation pieces carrying trailing newlines (`{\n`).
const P_NEWLINE: usize = P_BYTES + 1;
/// Whitespace pieces that end in a newline, and their characters beyond the first.
const NEWLINES: usize = P_NEWLINE + 1;
const NEWLINE_CHARS: usize = NEWLINES + 1;
/// Standalone runs of 1..=SPACE_BUCKETS spaces (indentation, alignment).
const S_FIRST: usize = NEWLINE_CHARS + 1;
const S_LONG: usize = S_FIRST + SPACE_BUCKETS;
/// A space before a digit group, which stands alone (" 42" is two tokens).
const SPACE_DIGIT: usize = S_LONG + 1;

/// ASCII word pieces of four letters or more that end in `a`, `i`, `o` or `u`, and their
/// letters: rare in English and code, common in the many languages o200k_base splits finer.
const VOWEL_END: usize = SPACE_DIGIT + 1;
const VOWEL_END_LETTERS: usize = VOWEL_END + 1;

/// The number of counters [`features`] fills.
pub(crate) const FEATURES: usize = VOWEL_END_LETTERS + 1;

/// The weight of each counter, in tokens.
///
/// Fitted by `examples/estimate_fit.rs --fit` (`FIT_ITERS=10 FIT_RIDGE=0.01 FIT_ABS=0.001`) on
/// the even-numbered messages of the bench corpora (english, code, json, multilingual, each
/// class weighted equally), minimising the mean relative error per message; the odd-numbered
/// messages are held out. One weight was set by hand: [`P_LONG`] (the fit gave 0.01, as long
/// rules like `-----` are few tokens), kept at 0.1 so a huge run of punctuation is not free.
#[rustfmt::skip]
pub(crate) const WEIGHTS: [f64; FEATURES] = [
    // ASCII word pieces of 1..=16 letters.
    0.861, 0.807, 1.111, 0.875, 1.087, 1.002, 1.154, 1.305,
    1.334, 1.379, 1.658, 2.655, 2.516, 2.826, 3.341, 3.705,
    // Letters beyond 16, all-capital letters, punctuation-led pieces.
    0.210, 0.102, 0.276,
    // Mixed ASCII and other letters: pieces, their ASCII letters.
    1.262, 0.258,
    // Pieces without ASCII, by script: Latin with diacritics, IPA and marks, Greek, Cyrillic,
    // Armenian and Hebrew, Arabic, Devanagari, other Indic, Thai and Lao, kana, Han, Hangul,
    // Georgian and Ethiopic, Tibetan/Myanmar/Khmer, Cherokee and syllabics, other.
    0.111, 0.399, 0.784, 0.373, 0.696, 0.458, 0.320, 0.735,
    0.559, 0.424, 0.468, 0.495, 0.054, 1.293, 0.983, 0.690,
    // Letters outside ASCII, by script (same order).
    0.311, 1.011, 0.690, 0.363, 0.295, 0.251, 0.290, 0.306,
    0.428, 0.697, 0.729, 0.628, 0.311, 0.856, 2.771, 2.895,
    // Digit groups.
    1.143,
    // Punctuation runs of 1..=4, characters beyond, bytes outside ASCII, with newlines.
    1.007, 1.121, 0.941, 1.598, 0.100, 0.554, 0.000,
    // Newline pieces, their characters beyond the first.
    1.000, 0.332,
    // Space runs of 1..=4, runs of 80 beyond the first, a space before digits.
    0.947, 0.979, 1.010, 0.928, 0.892, 0.820,
    // Words ending in a vowel, their letters.
    0.576, 0.156,
];

/// Adds `n` to counter `i`.
#[inline(always)]
fn bump(f: &mut [u64; FEATURES], i: usize, n: u64) {
    if let Some(x) = f.get_mut(i) {
        *x = x.wrapping_add(n);
    }
}

/// The script bucket of a letter outside ASCII.
pub(crate) fn script(c: char) -> usize {
    match c as u32 {
        0x00c0..=0x024f | 0x1e00..=0x1eff => 0, // Latin with diacritics
        0x0250..=0x036f | 0x1d00..=0x1dff => 1, // IPA, spacing and combining marks
        0x0370..=0x03ff | 0x1f00..=0x1fff => 2, // Greek
        0x0400..=0x052f | 0x1c80..=0x1c8f => 3, // Cyrillic
        0x0530..=0x05ff | 0xfb00..=0xfb4f => 4, // Armenian, Hebrew
        0x0600..=0x08ff | 0xfb50..=0xfeff => 5, // Arabic, Syriac, Thaana
        0x0900..=0x097f => 6,                   // Devanagari
        0x0980..=0x0dff => 7,                   // Other Indic scripts
        0x0e00..=0x0eff => 8,                   // Thai, Lao
        0x3040..=0x30ff | 0x31f0..=0x31ff => 9, // Kana
        0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff | 0x20000.. => 10, // Han
        0x1100..=0x11ff | 0x3130..=0x318f | 0xac00..=0xd7af => 11, // Hangul
        0x10a0..=0x10ff | 0x1200..=0x139f | 0x2d80..=0x2ddf => 12, // Georgian, Ethiopic
        0x0f00..=0x109f | 0x1780..=0x17ff => 13, // Tibetan, Myanmar, Khmer
        0x13a0..=0x167f => 14,                  // Cherokee, Canadian syllabics
        _ => 15,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lower,
    Upper,
    /// Letters without case (most scripts but Latin, Greek, Cyrillic, Armenian), and marks.
    Caseless,
    Digit,
    Space,
    Newline,
    Punct,
}

/// The kind of an ASCII byte.
#[inline(always)]
const fn ascii_kind(b: u8) -> Kind {
    match b {
        b'a'..=b'z' => Kind::Lower,
        b'A'..=b'Z' => Kind::Upper,
        b'0'..=b'9' => Kind::Digit,
        b'\n' | b'\r' => Kind::Newline,
        b' ' | b'\t' | 0x0b | 0x0c => Kind::Space,
        _ => Kind::Punct,
    }
}

/// The kind of a character outside ASCII.
fn kind_of(c: char) -> Kind {
    match c as u32 {
        // Fast paths for the big caseless blocks: Han, Hangul syllables.
        0x4e00..=0x9fff | 0xac00..=0xd7a3 => Kind::Caseless,
        _ if c.is_alphabetic() || is_mark(c) => {
            if c.is_lowercase() {
                Kind::Lower
            } else if c.is_uppercase() {
                Kind::Upper
            } else {
                Kind::Caseless
            }
        }
        _ if c.is_numeric() => Kind::Digit,
        _ if c.is_whitespace() => Kind::Space,
        _ => Kind::Punct,
    }
}

/// Combining marks (`\p{M}`) that are not `Alphabetic`, which the pattern keeps inside words.
fn is_mark(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036f | 0x0483..=0x0489 | 0x0591..=0x05c7 | 0x0610..=0x061a | 0x064b..=0x065f
        | 0x0900..=0x0963 | 0x0966..=0x0dff | 0x0e31..=0x0e4e | 0x0eb1..=0x0ecd
        | 0x0f00..=0x0f03 | 0x0f18..=0x0f39 | 0x0f3e..=0x109f | 0x1780..=0x17d3
        | 0x1ab0..=0x1aff | 0x1dc0..=0x1dff | 0x20d0..=0x20ff | 0xfe20..=0xfe2f)
}

/// One character of the text: its kind, its UTF-8 length, and the character itself.
#[derive(Clone, Copy)]
struct Unit {
    kind: Kind,
    len: usize,
    c: char,
}

impl Unit {
    fn is_letter(self) -> bool {
        matches!(self.kind, Kind::Lower | Kind::Upper | Kind::Caseless)
    }
}

/// What joins the front of a word piece.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lead {
    None,
    Space,
    Punct,
}

/// One word piece being read.
struct Word {
    /// The last ASCII byte.
    last: u8,
    ascii: u64,
    upper: u64,
    other: u64,
    first_script: usize,
}

impl Word {
    const fn new() -> Self {
        Word {
            last: 0,
            ascii: 0,
            upper: 0,
            other: 0,
            first_script: 0,
        }
    }

    fn finish(&self, f: &mut [u64; FEATURES], lead: Lead) {
        if self.other == 0 {
            let n = self.ascii;
            let bucket = usize::try_from(n.min(WORD_BUCKETS as u64)).unwrap_or(WORD_BUCKETS);
            bump(f, W_FIRST + bucket.saturating_sub(1), 1);
            bump(f, W_LONG, n.saturating_sub(WORD_BUCKETS as u64));
            if self.upper == n && n >= 2 {
                bump(f, CAPS, n);
            }
            if n >= 4 && matches!(self.last, b'a' | b'i' | b'o' | b'u') {
                bump(f, VOWEL_END, 1);
                bump(f, VOWEL_END_LETTERS, n);
            }
        } else if self.ascii > 0 {
            bump(f, MIXED, 1);
            bump(f, MIXED_ASCII, self.ascii);
        } else {
            bump(f, PIECES + self.first_script, 1);
        }
        if lead == Lead::Punct {
            bump(f, PUNCT_LED, 1);
        }
    }
}

/// A cursor over the text's bytes that fills the counters.
struct Scan<'a> {
    text: &'a str,
    at: usize,
    f: [u64; FEATURES],
}

impl Scan<'_> {
    /// The character at the cursor.
    #[inline(always)]
    fn peek(&self) -> Option<Unit> {
        let b = *self.text.as_bytes().get(self.at)?;
        if b < 0x80 {
            let kind = ascii_kind(b);
            return Some(Unit {
                kind,
                len: 1,
                c: char::from(b),
            });
        }
        let c = self.text.get(self.at..)?.chars().next()?;
        Some(Unit {
            kind: kind_of(c),
            len: c.len_utf8(),
            c,
        })
    }

    /// The ASCII byte `ahead` bytes past the cursor, lowercased (0 if none).
    fn byte(&self, ahead: usize) -> u8 {
        self.text
            .as_bytes()
            .get(self.at + ahead)
            .map_or(0, u8::to_ascii_lowercase)
    }

    fn bump(&mut self, i: usize, n: u64) {
        bump(&mut self.f, i, n);
    }

    /// Reads word pieces from the cursor (at a letter) on.
    fn word(&mut self, mut lead: Lead) {
        let mut w = Word::new();
        let mut prev_lower = false;
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            // ASCII letters first: most of the text.
            if b.is_ascii_lowercase() {
                w.ascii += 1;
                w.last = b;
                prev_lower = true;
                self.at += 1;
                continue;
            }
            if b.is_ascii_uppercase() {
                if prev_lower {
                    // camelCase: the pattern starts a new piece at a capital after a small one.
                    w.finish(&mut self.f, lead);
                    w = Word::new();
                    lead = Lead::None;
                }
                w.ascii += 1;
                w.upper += 1;
                prev_lower = false;
                self.at += 1;
                continue;
            }
            if b < 0x80 {
                if b == b'\'' {
                    // Contractions: 's 't 'm 'd 're 've 'll join the word.
                    let take = match (self.byte(1), self.byte(2)) {
                        (b'r', b'e') | (b'v', b'e') | (b'l', b'l') => 3,
                        (b's' | b't' | b'm' | b'd', _) => 2,
                        _ => 0,
                    };
                    self.at += take;
                }
                break;
            }
            let Some(u) = self.peek() else { break };
            if !u.is_letter() {
                break;
            }
            if u.kind == Kind::Upper && prev_lower {
                w.finish(&mut self.f, lead);
                w = Word::new();
                lead = Lead::None;
            }
            prev_lower = u.kind == Kind::Lower;
            let s = script(u.c);
            if w.other == 0 {
                w.first_script = s;
            }
            w.other += 1;
            self.bump(LETTERS + s, 1);
            self.at += u.len;
        }
        w.finish(&mut self.f, lead);
    }

    /// Reads a run of punctuation from the cursor on; `spaced` if a space leads it.
    fn punct(&mut self, spaced: bool) {
        let mut chars: u64 = 0;
        let mut next = None;
        while let Some(u) = self.peek() {
            if u.kind != Kind::Punct {
                next = Some(u);
                break;
            }
            chars += 1;
            if u.len > 1 {
                self.bump(P_BYTES, u.len as u64);
            }
            self.at += u.len;
        }
        match next {
            // A lone punctuation character leads the word after it.
            Some(u) if chars == 1 && !spaced && u.is_letter() => return self.word(Lead::Punct),
            _ => {}
        }
        let bucket = usize::try_from(chars.min(PUNCT_BUCKETS as u64)).unwrap_or(PUNCT_BUCKETS);
        self.bump(P_FIRST + bucket.saturating_sub(1), 1);
        self.bump(P_LONG, chars.saturating_sub(PUNCT_BUCKETS as u64));
        // Trailing newlines join the piece.
        if matches!(next, Some(u) if u.kind == Kind::Newline) {
            self.bump(P_NEWLINE, 1);
            while matches!(self.byte(0), b'\n' | b'\r') {
                self.at += 1;
            }
        }
    }

    /// A standalone run of `n` spaces.
    fn spaces(&mut self, n: u64) {
        if n == 0 {
            return;
        }
        let bucket = usize::try_from(n.min(SPACE_BUCKETS as u64)).unwrap_or(SPACE_BUCKETS);
        self.bump(S_FIRST + bucket.saturating_sub(1), 1);
        // o200k_base has one token for up to 79 spaces; longer runs take about one per 80 more.
        self.bump(S_LONG, n.saturating_sub(1) / 80);
    }

    /// Reads a whitespace run from the cursor on, and the piece its last space leads.
    fn whitespace(&mut self) {
        // Characters up to the last newline, and spaces after it.
        let mut to_newline: u64 = 0;
        let mut tail: u64 = 0;
        let mut next = None;
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            if b == b' ' {
                tail += 1;
                self.at += 1;
                continue;
            }
            let Some(u) = self.peek() else { break };
            match u.kind {
                Kind::Newline => {
                    to_newline += tail + 1;
                    tail = 0;
                }
                Kind::Space => tail += 1,
                _ => {
                    next = Some(u);
                    break;
                }
            }
            self.at += u.len;
        }
        if to_newline > 0 {
            self.bump(NEWLINES, 1);
            self.bump(NEWLINE_CHARS, to_newline - 1);
        }
        let Some(u) = next else {
            return self.spaces(tail);
        };
        if tail == 0 {
            return;
        }
        // The last space joins the next piece, except before digits.
        self.spaces(tail - 1);
        match u.kind {
            Kind::Digit => self.bump(SPACE_DIGIT, 1),
            Kind::Punct => self.punct(true),
            _ => self.word(Lead::Space),
        }
    }

    /// Reads a run of digits from the cursor on.
    fn digits(&mut self) {
        let mut n: u64 = 0;
        while let Some(u) = self.peek() {
            if u.kind != Kind::Digit {
                break;
            }
            n += 1;
            self.at += u.len;
        }
        self.bump(DIGITS, n.div_ceil(3));
    }
}

/// The counters the estimate weighs: see the feature indices above.
pub(crate) fn features(text: &str) -> [u64; FEATURES] {
    let mut scan = Scan {
        text,
        at: 0,
        f: [0; FEATURES],
    };
    while let Some(u) = scan.peek() {
        match u.kind {
            Kind::Digit => scan.digits(),
            Kind::Space | Kind::Newline => scan.whitespace(),
            Kind::Punct => scan.punct(false),
            _ => scan.word(Lead::None),
        }
    }
    scan.f
}

/// Estimates the number of o200k_base tokens in `text` without any tables.
///
/// It is fast (a single pass, no allocation) and usually within a few percent of the exact
/// count on prose, code and JSON; use [`crate::count_tokens`] when the exact number matters.
/// It is 0 only for the empty string.
///
/// ```
/// use context_keeper::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert!((8..=12).contains(&estimate_tokens("The quick brown fox jumps over the lazy dog.")));
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let f = features(text);
    let total: f64 = f
        .iter()
        .zip(WEIGHTS.iter())
        .map(|(&n, &w)| n as f64 * w)
        .sum();
    // `as` saturates; a non-empty text is at least one token.
    (total.round() as usize).max(1)
}
