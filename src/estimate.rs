//! A token estimate that needs no tables: one pass over the characters, no allocation.
//!
//! The text is cut into the same kinds of pieces the o200k_base pre-tokenizer makes (words with
//! their leading space or punctuation, digit groups, punctuation runs, whitespace runs), and each
//! piece is priced by its script: a short Latin word is nearly always one token, long words and
//! non-Latin scripts cost by length, digits by groups of three. The coefficients were fitted
//! against exact o200k_base counts; `tests/estimate.rs` holds the accuracy bounds.

/// What kind of piece a character continues or starts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// ASCII letters, and apostrophes inside words.
    Latin,
    /// Letters of other alphabets priced by length (accented Latin, Cyrillic, Greek, ...).
    OtherLetter,
    /// Han, kana and Hangul: about one token per character.
    Cjk,
    Digit,
    Space,
    Newline,
    Punct,
    /// Emoji and other symbols outside the BMP's common blocks: several bytes, several tokens.
    Symbol,
}

fn classify(c: char) -> Class {
    match c {
        'a'..='z' | 'A'..='Z' => Class::Latin,
        '0'..='9' => Class::Digit,
        ' ' | '\t' => Class::Space,
        '\n' | '\r' => Class::Newline,
        c if c.is_ascii() => Class::Punct,
        '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' => Class::Cjk,
        '\u{ac00}'..='\u{d7af}' | '\u{f900}'..='\u{faff}' | '\u{20000}'..='\u{2ffff}' => Class::Cjk,
        c if c.is_alphabetic() => Class::OtherLetter,
        c if c.is_numeric() => Class::Digit,
        c if c.is_whitespace() => Class::Space,
        c if (c as u32) >= 0x1f000 => Class::Symbol,
        _ => Class::Punct,
    }
}

/// Running totals, in hundredths of a token to keep the arithmetic in integers.
#[derive(Default)]
struct Tally {
    centi: u64,
}

impl Tally {
    fn add(&mut self, centi: u64) {
        self.centi = self.centi.saturating_add(centi);
    }
}

/// Prices one run of same-class characters, in hundredths of a token. `chars` and `bytes`
/// measure the run; `humps` counts its lower-to-upper case changes (`parseJSON` has one), where
/// the o200k pre-tokenizer starts a new piece.
fn price(class: Class, chars: u64, bytes: u64, humps: u64) -> u64 {
    match class {
        // Up to 6 letters is almost always one token in o200k; beyond, about 5 letters a token.
        Class::Latin => {
            let pieces = humps + 1;
            let per_piece = chars / pieces;
            pieces
                * if per_piece <= 6 {
                    100
                } else {
                    100 + (per_piece - 6) * 100 / 5
                }
        }
        Class::OtherLetter => 40 + bytes * 100 / 7,
        Class::Cjk => chars * 60,
        Class::Digit => chars.div_ceil(3) * 100,
        // A single space or tab joins the next piece; a long run costs one token per 8.
        Class::Space => {
            if chars <= 1 {
                0
            } else {
                chars.div_ceil(8) * 100
            }
        }
        Class::Newline => chars.div_ceil(4) * 100,
        Class::Punct => chars.div_ceil(2) * 100,
        Class::Symbol => bytes * 100 / 3,
    }
}

/// Estimates the number of o200k_base tokens in `text` without any tables.
///
/// It is fast (a single pass, no allocation) and usually within a few percent of the exact
/// count on prose, code and JSON; use [`crate::count_tokens`] when the exact number matters.
///
/// ```
/// use context_keeper::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// assert!((8..=12).contains(&estimate_tokens("The quick brown fox jumps over the lazy dog.")));
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    let mut tally = Tally::default();
    // The current run: its class, characters, bytes and case humps.
    let mut run: Option<(Class, u64, u64, u64)> = None;
    let mut prev: Option<(Class, char)> = None;
    for c in text.chars() {
        let class = classify(c);
        // An apostrophe between letters continues the word, as in "don't".
        let class = match prev {
            Some((Class::Latin, _)) if c == '\'' => Class::Latin,
            _ => class,
        };
        match &mut run {
            Some((current, chars, bytes, humps)) if *current == class => {
                *chars += 1;
                *bytes += c.len_utf8() as u64;
                if matches!(prev, Some((_, p)) if p.is_ascii_lowercase()) && c.is_ascii_uppercase()
                {
                    *humps += 1;
                }
            }
            _ => {
                if let Some((current, mut chars, bytes, humps)) = run {
                    // The o200k pieces `[^\r\n\p{L}\p{N}]?\p{L}+`: one punctuation character
                    // before a word joins it, and often merges into one token with it.
                    if current == Class::Punct && matches!(class, Class::Latin | Class::OtherLetter)
                    {
                        chars -= 1;
                        tally.add(30);
                    }
                    tally.add(price(current, chars, bytes, humps));
                    // A single space joins a following word or punctuation, but digits stand
                    // alone: " 42" is two tokens.
                    if current == Class::Space && chars == 1 && class == Class::Digit {
                        tally.add(100);
                    }
                }
                run = Some((class, 1, c.len_utf8() as u64, 0));
            }
        }
        prev = Some((class, c));
    }
    if let Some((current, chars, bytes, humps)) = run {
        tally.add(price(current, chars, bytes, humps));
    }
    usize::try_from(tally.centi.div_ceil(100)).unwrap_or(usize::MAX)
}
