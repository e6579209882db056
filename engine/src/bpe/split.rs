//! The pre-tokenizers: hand-written scanners that cut text into the same pieces as the
//! reference's regexes, without backtracking.
//!
//! Each scanner mirrors one alternative of the pattern at a time, in the pattern's order, and
//! resolves by hand the backtracking the pattern relies on. The reasoning for each step is in
//! the comments; `tests/bpe_equality.rs` holds them to the reference on corpora and fuzz runs.

use super::class::{LETTER, LOWERISH, NUMBER, SPACE, UPPERISH};

/// Which pattern to cut with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
    Cl100k,
    /// The o200k pattern (casing-aware words with optional contractions, 1-3 digits,
    /// punctuation runs, then the same white-space rules in another order).
    O200k,
}

/// One decoded character.
#[derive(Clone, Copy)]
struct Ch {
    cp: u32,
    cls: u8,
    len: usize,
}

/// Decodes the character starting at `i` of valid UTF-8 (the bytes of a `&str`).
#[inline(always)]
fn at(t: &[u8], i: usize) -> Option<Ch> {
    let b0 = *t.get(i)?;
    if b0 < 0x80 {
        let cls = super::class::ASCII
            .get(usize::from(b0))
            .copied()
            .unwrap_or(0);
        return Some(Ch {
            cp: u32::from(b0),
            cls,
            len: 1,
        });
    }
    Some(non_ascii_at(t, i, b0))
}

/// [`at`] for a character that is not ASCII, whose first byte is `b0`.
// NOTE: out of line. `at` is inlined into every loop of the scanners; with this decode in
// each copy the counting function's code doubled, and V8 compiles all of it on a module's
// first count. Characters that are not ASCII cost a call, small next to their merges.
#[inline(never)]
fn non_ascii_at(t: &[u8], i: usize, b0: u8) -> Ch {
    let cont = |k: usize| u32::from(t.get(i + k).copied().unwrap_or(0x80) & 0x3f);
    let (cp, len) = if b0 < 0xe0 {
        ((u32::from(b0 & 0x1f) << 6) | cont(1), 2)
    } else if b0 < 0xf0 {
        ((u32::from(b0 & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            (u32::from(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    };
    Ch {
        cp,
        cls: super::class::of(cp),
        len,
    }
}

const CR: u32 = '\r' as u32;
const LF: u32 = '\n' as u32;
const SP: u32 = ' ' as u32;
const APOS: u32 = '\'' as u32;

/// `[^\r\n\p{L}\p{N}]`
#[inline(always)]
fn is_p(c: Ch) -> bool {
    c.cls & (LETTER | NUMBER) == 0 && c.cp != CR && c.cp != LF
}

/// `[^\s\p{L}\p{N}]`
#[inline(always)]
fn is_q(c: Ch) -> bool {
    c.cls & (SPACE | LETTER | NUMBER) == 0
}

/// The end of the run of characters that have any of `bits`, from `i`.
#[inline(always)]
fn skip_class(t: &[u8], mut i: usize, bits: u8) -> usize {
    while let Some(c) = at(t, i) {
        if c.cls & bits == 0 {
            break;
        }
        i += c.len;
    }
    i
}

/// The end of the run of `[^\s\p{L}\p{N}]` from `i`.
#[inline(always)]
fn skip_q(t: &[u8], mut i: usize) -> usize {
    while let Some(c) = at(t, i) {
        if !is_q(c) {
            break;
        }
        i += c.len;
    }
    i
}

/// The end of the run of `\r` and `\n` from `i`.
#[inline(always)]
fn skip_newlines(t: &[u8], mut i: usize) -> usize {
    while matches!(t.get(i), Some(b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// `\p{N}{1,3}` from `i`, whose character is a number.
#[inline(always)]
fn digits(t: &[u8], mut i: usize) -> usize {
    for _ in 0..3 {
        match at(t, i) {
            Some(c) if c.cls & NUMBER != 0 => i += c.len,
            _ => break,
        }
    }
    i
}

/// `(?i:[sdmt]|ll|ve|re)` after the apostrophe at `i`: the end, if it matches. Under the
/// regex's Unicode simple case folding `s` also matches U+017F (build.rs checks the folds).
/// o200k's `(?i:'s|'t|'re|'ve|'m|'ll|'d)` is the same language.
#[inline]
fn contraction(t: &[u8], i: usize) -> Option<usize> {
    let c1 = at(t, i + 1)?;
    let second = |want: u8| {
        t.get(i + 2)
            .is_some_and(|b| b.eq_ignore_ascii_case(&want))
            .then_some(i + 3)
    };
    match c1.cp {
        0x17f => Some(i + 3),
        _ if c1.cp > 0x7f => None,
        _ => match (c1.cp as u8).to_ascii_lowercase() {
            b's' | b'd' | b'm' | b't' => Some(i + 2),
            b'l' => second(b'l'),
            b'v' | b'r' => second(b'e'),
            _ => None,
        },
    }
}

/// A white-space run from `i`.
struct SpaceRun {
    /// Its end.
    end: usize,
    /// Where its last character starts.
    last: usize,
    /// Just past its last `\r` or `\n`, if it has one.
    newline_end: Option<usize>,
}

#[inline]
fn space_run(t: &[u8], i: usize) -> SpaceRun {
    let mut run = SpaceRun {
        end: i,
        last: i,
        newline_end: None,
    };
    while let Some(c) = at(t, run.end) {
        if c.cls & SPACE == 0 {
            break;
        }
        run.last = run.end;
        run.end += c.len;
        if c.cp == CR || c.cp == LF {
            run.newline_end = Some(run.end);
        }
    }
    run
}

/// Whether `b` is ASCII and `[^\r\n\p{L}\p{N}]`.
#[inline(always)]
fn is_ascii_p(b: u8) -> bool {
    super::class::ASCII
        .get(usize::from(b))
        .is_some_and(|&cls| cls & (LETTER | NUMBER) == 0)
        && b != b'\r'
        && b != b'\n'
}

/// The common cl100k piece, all ASCII up to its end: `[^\r\n\p{L}\p{N}]?+\p{L}++` from
/// `i`, if `t[i]` starts one and is not an apostrophe (which may start a contraction). A
/// byte loop, where the general scanner decodes characters; past a non-ASCII byte the
/// letter run goes on in the general way.
#[inline(always)]
fn cl100k_ascii_word(t: &[u8], i: usize) -> Option<usize> {
    let b0 = *t.get(i)?;
    let s = if b0.is_ascii_alphabetic() {
        i
    } else if is_ascii_p(b0) && b0 != b'\'' {
        i + 1
    } else {
        return None;
    };
    let mut p = s;
    while t.get(p).is_some_and(u8::is_ascii_alphabetic) {
        p += 1;
    }
    if p == s {
        return None;
    }
    if t.get(p).is_some_and(|&b| b >= 0x80) {
        return Some(skip_class(t, p, LETTER));
    }
    Some(p)
}

/// The end of the cl100k piece that starts at `i` (`i` < `t.len()`).
fn cl100k_end(t: &[u8], i: usize) -> usize {
    if let Some(end) = cl100k_ascii_word(t, i) {
        return end;
    }
    let Some(c0) = at(t, i) else {
        return t.len();
    };
    // '(?i:[sdmt]|ll|ve|re)
    if c0.cp == APOS {
        if let Some(end) = contraction(t, i) {
            return end;
        }
    }
    // [^\r\n\p{L}\p{N}]?+\p{L}++ : the optional character is taken whenever it is there
    // (possessive), and cannot be a letter anyway.
    let s = if is_p(c0) { i + c0.len } else { i };
    if at(t, s).is_some_and(|c| c.cls & LETTER != 0) {
        return skip_class(t, s, LETTER);
    }
    // \p{N}{1,3}+
    if c0.cls & NUMBER != 0 {
        return digits(t, i);
    }
    // ' ?[^\s\p{L}\p{N}]++[\r\n]*+' : giving the space back cannot help (a space is \s).
    let s = if c0.cp == SP { i + 1 } else { i };
    if at(t, s).is_some_and(is_q) {
        return skip_newlines(t, skip_q(t, s));
    }
    if c0.cls & SPACE == 0 {
        // Unreachable for valid input: every character is a letter, number, space or other.
        return i + c0.len;
    }
    let run = space_run(t, i);
    // \s++$
    if run.end == t.len() {
        return run.end;
    }
    // \s*[\r\n] : the longest prefix of the run that ends with a newline.
    if let Some(end) = run.newline_end {
        return end;
    }
    // \s+(?!\S) : the run but its last character, which precedes the \S; else \s.
    if run.last > i {
        run.last
    } else {
        run.end
    }
}

/// o200k's first word alternative from `s`:
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` then an optional contraction.
/// The star is greedy with backtracking: the match uses the longest upper-ish prefix after
/// which a lower-ish character follows. Inside the upper-ish run the only lower-ish characters
/// are those in both classes (Lm, Lo, M), so if the run is not followed by a lower-ish
/// character, the plus takes exactly the last both-class character of the run.
#[inline]
fn o200k_word_lower(t: &[u8], s: usize) -> Option<usize> {
    let mut p = s;
    let mut last_both_end = None;
    while let Some(c) = at(t, p) {
        if c.cls & UPPERISH == 0 {
            break;
        }
        p += c.len;
        if c.cls & LOWERISH != 0 {
            last_both_end = Some(p);
        }
    }
    let end = if at(t, p).is_some_and(|c| c.cls & LOWERISH != 0) {
        skip_class(t, p, LOWERISH)
    } else {
        last_both_end?
    };
    Some(optional_contraction(t, end))
}

/// o200k's second word alternative from `s`:
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` then an optional contraction.
#[inline]
fn o200k_word_upper(t: &[u8], s: usize) -> Option<usize> {
    if at(t, s).is_none_or(|c| c.cls & UPPERISH == 0) {
        return None;
    }
    let end = skip_class(t, skip_class(t, s, UPPERISH), LOWERISH);
    Some(optional_contraction(t, end))
}

#[inline(always)]
fn optional_contraction(t: &[u8], end: usize) -> usize {
    if t.get(end) == Some(&b'\'') {
        contraction(t, end).unwrap_or(end)
    } else {
        end
    }
}

/// The common o200k piece, all ASCII: an optional `[^\r\n\p{L}\p{N}]`, then
/// `[A-Z]*[a-z]*` (at least one letter), then an optional contraction, from `i`. None
/// whenever the general scanner is needed: no letter, or a non-ASCII character (which may be
/// a letter of either casing class) ends the letters.
///
/// Among ASCII characters the casing classes are the cases, and letters are never
/// `[^\r\n\p{L}\p{N}]`. If a lower-case letter follows, this is the general scanner's
/// first word alternative (tried with the leading character if there is one, as the greedy
/// `?` does). If not, both lower-case alternatives fail (no ASCII letter is in both casing
/// classes, so `+` has nothing to take), and the upper-case one takes the same letters.
#[inline(always)]
fn o200k_ascii_word(t: &[u8], i: usize) -> Option<usize> {
    let b0 = *t.get(i)?;
    let s = if b0.is_ascii_alphabetic() {
        i
    } else if is_ascii_p(b0) {
        i + 1
    } else {
        return None;
    };
    let mut p = s;
    while t.get(p).is_some_and(u8::is_ascii_uppercase) {
        p += 1;
    }
    while t.get(p).is_some_and(u8::is_ascii_lowercase) {
        p += 1;
    }
    if p == s || t.get(p).is_some_and(|&b| b >= 0x80) {
        return None;
    }
    Some(optional_contraction(t, p))
}

/// The end of the o200k piece that starts at `i` (`i` < `t.len()`).
fn o200k_end(t: &[u8], i: usize) -> usize {
    if let Some(end) = o200k_ascii_word(t, i) {
        return end;
    }
    let Some(c0) = at(t, i) else {
        return t.len();
    };
    // The two word alternatives, each tried first with the optional leading
    // [^\r\n\p{L}\p{N}] taken (greedy), then without it, as backtracking would. Either
    // needs a character of a casing class where it starts, so the leading character is
    // only worth taking if one follows it (punctuation skips all four tries).
    let after_p = is_p(c0)
        .then_some(i + c0.len)
        .filter(|&s| at(t, s).is_some_and(|c| c.cls & (UPPERISH | LOWERISH) != 0));
    if after_p.is_some() || c0.cls & (UPPERISH | LOWERISH) != 0 {
        if let Some(end) = after_p.and_then(|s| o200k_word_lower(t, s)) {
            return end;
        }
        if let Some(end) = o200k_word_lower(t, i) {
            return end;
        }
        if let Some(end) = after_p.and_then(|s| o200k_word_upper(t, s)) {
            return end;
        }
        if let Some(end) = o200k_word_upper(t, i) {
            return end;
        }
    }
    // \p{N}{1,3}
    if c0.cls & NUMBER != 0 {
        return digits(t, i);
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n/]*' ('/' cannot follow the run: it belongs to it).
    let s = if c0.cp == SP { i + 1 } else { i };
    if at(t, s).is_some_and(is_q) {
        let mut end = skip_q(t, s);
        while matches!(t.get(end), Some(b'\r' | b'\n' | b'/')) {
            end += 1;
        }
        return end;
    }
    if c0.cls & SPACE == 0 {
        // Unreachable for valid input: every character is a letter, number, space or other.
        return i + c0.len;
    }
    let run = space_run(t, i);
    // \s*[\r\n]+ : the longest prefix of the run that ends with a newline.
    if let Some(end) = run.newline_end {
        return end;
    }
    // \s+(?!\S) : the whole run at the end of the text, else all but its last character.
    if run.end == t.len() {
        return run.end;
    }
    if run.last > i {
        return run.last;
    }
    // \s+
    run.end
}

/// The pieces of `text`, in order.
#[derive(Debug)]
pub(crate) struct Pieces<'a> {
    text: &'a [u8],
    pos: usize,
    pattern: Pattern,
}

impl<'a> Pieces<'a> {
    pub(crate) fn new(text: &'a str, pattern: Pattern) -> Self {
        Pieces {
            text: text.as_bytes(),
            pos: 0,
            pattern,
        }
    }
}

impl Pieces<'_> {
    /// If the next piece starts with an ASCII digit, skips the pieces of the ASCII digits from
    /// here, as far as the pattern's grouping can be known without looking further, and
    /// returns how many pieces that was (0 if none: the caller then takes the next piece).
    ///
    /// Both patterns cut a run of `\p{N}` into pieces of three from its start, the last of
    /// one to three: no other alternative of either pattern takes a `\p{N}`, so a piece that
    /// starts at a number is `\p{N}{1,3}`, and so is the piece after it while the run goes
    /// on. From a piece boundary inside a run, then, `k` ASCII digits are `k / 3` pieces of
    /// three and a shorter last one, if the run ends after them. If a non-ASCII number (such
    /// as `٣` or `²`) follows them, only the whole groups of three are skipped here; the
    /// group that takes the non-ASCII number is left to the scanner.
    #[inline]
    pub(crate) fn ascii_digits(&mut self) -> usize {
        let start = self.pos;
        let mut end = start;
        while self.text.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let mut k = end - start;
        if k == 0 {
            return 0;
        }
        if at(self.text, end).is_some_and(|c| c.cls & NUMBER != 0) {
            k -= k % 3;
        }
        self.pos = start + k;
        k.div_ceil(3)
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.pos;
        if start >= self.text.len() {
            return None;
        }
        let end = match self.pattern {
            Pattern::Cl100k => cl100k_end(self.text, start),
            Pattern::O200k => o200k_end(self.text, start),
        };
        // Always make progress, even if a scanner returned something odd.
        let end = end.clamp(start + 1, self.text.len());
        self.pos = end;
        self.text.get(start..end)
    }
}
