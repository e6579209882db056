//! A token estimate that needs no vocabulary: one pass over the bytes, no allocation.
//!
//! The text is cut into the runs the o200k_base pre-tokenizer sees: words (a run of letters, cut
//! where a small letter meets a capital, as in camelCase), digits, spaces, newlines and
//! punctuation. Each byte has a class (`TABLES.class`); each class, with the two before it, either
//! continues a run or ends it with an event (`TABLES.event`): "a word ending in a vowel ended",
//! "spaces ended before a digit", "a lone punctuation character after a space ended before a
//! letter", ... An event and the run's length name a cell. The counters the estimate weighs
//! ([`features`]: words by length, digit groups, punctuation and space runs by length, letters
//! of each script, ...) are sums over the cells, so the estimate adds one weight per cell
//! (`TABLES.cell`, computed from [`WEIGHTS`] at compile time) as it goes, in fixed point.
//! Runs of [`LONG_RUN`] characters or more are priced one by one instead.
//!
//! The hot loop takes ASCII eight bytes at a time with no branch on the text but the (rare)
//! long-run one: an event lookup by the byte and the one before it (which holds the letter-pair
//! bit, [`RARE`]; whether a space came before that one comes from a mask of the block's spaces)
//! and a cell weight added, two loads and about a dozen instructions a byte. Bytes outside ASCII
//! (and the letters of a word holding any) go through a per-character path that decodes them
//! (tables for those of two bytes and the first of three) and adds the counters of their script.
//!
//! [`WEIGHTS`] is a constant array fitted against exact o200k_base counts by
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

/// Letter pairs inside ASCII word pieces that are rare in English and code (see [`RARE`]):
/// words of other Latin-script languages, which o200k_base cuts into more tokens.
const RARE_PAIRS: usize = VOWEL_END_LETTERS + 1;
/// Cyrillic letters outside the Russian alphabet (Ukrainian, Kazakh, Bashkir, ...), which
/// o200k_base covers less well than Russian.
const CYRILLIC_EXT: usize = RARE_PAIRS + 1;
/// Arabic-script letters outside the Arabic alphabet (Persian, Urdu, Uyghur, Pashto, ...).
const ARABIC_EXT: usize = CYRILLIC_EXT + 1;
/// Latin letters beyond Latin-1 (`ő`, `ș`, `ạ`): the languages o200k_base covers less well.
const LATIN_EXT: usize = ARABIC_EXT + 1;
/// Letters beyond the [`LONG_PIECE_FROM`]th in word pieces without ASCII, by script.
const PIECE_LONG: usize = LATIN_EXT + 1;
/// The letter count from which a piece without ASCII counts into [`PIECE_LONG`].
const LONG_PIECE_FROM: u64 = 6;

/// Newline runs of two newlines or more (blank lines).
const BLANK_LINES: usize = PIECE_LONG + SCRIPTS;
/// Spaces before a newline (trailing whitespace, blank lines with indentation).
const SPACES_NEWLINE: usize = BLANK_LINES + 1;
/// A lone punctuation character after a space and before a letter (` "foo`, ` (bar`).
const SPACED_PUNCT: usize = SPACES_NEWLINE + 1;

/// ASCII letters beyond the 32nd in a word piece (never in real words: runs like `aaaa...`).
const W_HUGE: usize = SPACED_PUNCT + 1;

/// Pairs of Latin letters, one of them at least outside ASCII, and pairs of Cyrillic letters,
/// that are rare in the widely used languages written in them (see [`FAMILIAR`]): words
/// of the many languages o200k_base covers less well than Spanish, Polish or Russian.
const LATIN_PAIRS: usize = W_HUGE + 1;
const CYRILLIC_PAIRS: usize = LATIN_PAIRS + 1;

/// A lone punctuation character before a word (as [`PUNCT_LED`] and [`SPACED_PUNCT`]), by the
/// group of the character ([`C_PUNCT_MID`], [`C_PUNCT_TAG`], [`C_PUNCT_SEP`],
/// [`C_PUNCT_PATH`]): o200k_base has `_name`, `.py`, `(self` and `,null` as one token, but cuts `<`
/// (`<` `output`), `` ` ``, `[`, `"`, `:` off most words, `-`, `=` off about a third of them,
/// and has most path segments (`/models`) as one token. Paths, tags, flags and quoted names in
/// agent traffic are made of these.
const LED_MID: usize = CYRILLIC_PAIRS + 1;
const SPACED_MID: usize = LED_MID + 5;

/// [`RARE_PAIRS`] among the first three letters of a word piece: short pieces such as `db`,
/// `sql`, `nl` or `xr` (abbreviations in paths, commands and code) are one token however rare
/// their letter pairs, where a rare pair further in a word is a sign of a word o200k_base cuts.
const RARE_EARLY: usize = SPACED_MID + 5;
/// The last letter count (before the second letter of the pair) of [`RARE_EARLY`].
const EARLY: usize = 2;

/// Taken back (counted -1) for a word piece of three small letters or more right before `<`:
/// in code, the angle bracket of a generic type, which o200k_base joins to the name after it
/// (`Vec<u32>`: `<u`), where a tag's `<` after a newline, a space or `>` stands alone
/// ([`LED_MID`]'s group of `<`). (Shorter words before `<` are mostly comparisons, `i<n`.)
const GENERIC: usize = RARE_EARLY + 1;

/// Taken back (counted -1) for a run of ASCII punctuation whose eighth character repeats its
/// seventh, one that o200k_base has long runs of ([`rule_char`]): a rule (`=====` around
/// pytest's headers, `-----` under a table, `#####`, `.....`, `|---------|`), which it has as
/// one token per 16 to 80 characters, where mixed punctuation (`"]}),`) or a bracket repeated
/// is a token per two to four ([`P_MIX`]). [`P_LONG`] prices its length. (Counted at that
/// eighth character, so a run of mixed punctuation never costs less than a shorter one.)
const P_RULE: usize = GENERIC + 1;
/// The run length (before the character) at which a repeated character makes a rule
/// ([`P_RULE`]): the eighth character.
const RULE_AT: usize = 7;

/// Taken back (counted -1) for an apostrophe between two letters (`don't`, `you're`, `it's`,
/// `Django's`): o200k_base's pre-tokenizer keeps `'s`, `'t`, `'re`, `'ve`, `'m`, `'ll` and `'d`
/// inside the word before them, and most such words are one token, where the estimator would
/// price the letters after the apostrophe as a word of their own ([`LED_MID`]'s group of `'`).
/// (cl100k_base cuts them off: there it is a token more each.)
const CONTRACTION: usize = P_RULE + 1;

/// Each ASCII punctuation character from the ninth of a run on ([`MIX_FROM`]) that is unlike
/// the one before it, or repeats one that makes no rule ([`rule_char`]): o200k_base merges a
/// rule into few tokens ([`P_RULE`]) and has many short runs of mixed punctuation whole
/// (`"}},{"`, `})();`, `-->`; the fit prices those by their length alone, [`P_FIRST`] and
/// [`P_LONG`]), but a long one (`,},},},}`, `"]}"]}"]}`, `]]]]]]]]]`) is a token per two to
/// four characters.
const P_MIX: usize = CONTRACTION + 1;
/// The run length (before the character) from which [`P_MIX`] counts.
const MIX_FROM: usize = 8;

/// ASCII control characters other than whitespace ([`is_control`]): the escape of ANSI colour
/// codes (`\x1b[32m.\x1b[0m`, pytest's and git's coloured output), NUL, backspace. o200k_base
/// merges none of them with the punctuation next to them (`\x1b[` is two tokens), where the
/// estimate prices a run of punctuation by its length; each is about a token more.
const CONTROL: usize = P_MIX + 1;

/// The number of counters [`features`] fills.
pub(crate) const FEATURES: usize = CONTROL + 1;

/// For each small ASCII letter (and a 27th "no letter"), the letters that rarely follow it in
/// English and code, as a bit set (bit 0 = `a`): pairs under 0.02% of all letter pairs in the
/// fit half of the english and code corpora, and under 0.02% of those of the fit runs of the
/// recorded coding-agent runs (`examples/estimate_fit.rs --pairs` prints it). The second
/// condition keeps pairs of common technical words out (`nm` of `environment`, `bm` of
/// `submit`, `fy` of `modify`, `sn` of `doesn't`, `db`, `sql`, `rw` of `drwxr-xr-x`): o200k_base
/// has those words whole, and each rare pair cost them 1.2 tokens more.
///
// NOTE: this is a letter-pair class table of 104 bytes, not a vocabulary: it holds no token.
// It measures how far a word is from English spelling, which is what decides whether
// o200k_base has it as one token.
#[rustfmt::skip]
const RARE: [u32; 32] = [
    0x14291, 0x2e8a4ea, 0x2e1b24a, 0x2e194a4, 0x2100680, 0x2e1868e, 0x3e1962e, 0x3e1aeee,
    0x1510280, 0x3fbbfee, 0x3abfeee, 0x2c136c4, 0x2e326a4, 0x2030282, 0x3010080, 0x2e13266,
    0x3eff7ff, 0x2818282, 0x2c0024a, 0x2a12640, 0x3610680, 0x3ffbeae, 0x3799e6e, 0x2f57eea,
    0x3f306f9, 0x2ffbfee, 0, 0, 0, 0, 0, 0,
];

/// The weight of each counter, in tokens.
///
/// Fitted by `examples/estimate_fit.rs --fit` (`FIT_MULTI=2 FIT_AGENT=2 FIT_MAJOR=5
/// FIT_ITERS=10 FIT_RIDGE=0.01 FIT_ABS=0.001`, starting from the previous weights) on the fit
/// half of the bench corpora (english, code, json, multilingual, each class weighted equally but
/// multilingual twice, and inside multilingual the widely used languages five times the others;
/// blocks of 8 consecutive messages alternate between the halves, so no language is in both)
/// and on the fit runs of the recorded coding-agent runs of `bench/agent/` (each string of a
/// message on its own, the class weighted twice), minimising the mean relative error per
/// message; the other half, the held-out agent runs, and TypeScript's translated diagnostic
/// messages, are held out.
///
/// Five weights were set by hand, for runs the corpora hold too few of: [`P_LONG`] (the fit
/// gives about 0, as long rules like `-----` are few tokens), 1/32 so that a huge run of
/// punctuation is not free (o200k_base has one character repeated 16 to 80 times as one
/// token); [`W_HUGE`], 0.25 so that a word of hundreds of letters is not
/// priced like one of 16 (o200k_base cuts long words into pieces of about four letters);
/// [`S_LONG`] (the fit gave 1.14), 0.8: a run of 1000 spaces is about 10 tokens in o200k_base;
/// [`NEWLINE_CHARS`] (the fit gives 0, as most newline runs are one token), 0.066: a run of
/// 1000 newlines is 66 tokens; and [`P_MIX`] (the fit gives 0.25 pulled from 0.4, and 0 for
/// the same from the fifth character on), 0.4, from o200k_base's counts of long runs of mixed
/// punctuation (`,}` repeated is one token per two characters, `"]}` two per three, `});` one
/// per three, `]` one per two), which the corpora hold too few of to fit.
///
/// The estimate itself adds these weights per run through `TABLES.cell` and
/// [`FIXED_WEIGHTS`], which are computed from this array at compile time.
#[rustfmt::skip]
pub(crate) const WEIGHTS: [f64; FEATURES] = [
    // ASCII word pieces of 1..=16 letters.
    1.030, 0.900, 1.068, 0.995, 1.075, 0.901, 0.994, 0.976,
    1.120, 1.194, 1.824, 1.428, 1.391, 0.671, 4.542, 5.605,
    // Letters beyond 16, all-capital letters, punctuation-led pieces.
    0.000, 0.095, 0.117,
    // Mixed ASCII and other letters: pieces, their ASCII letters.
    0.722, 0.029,
    // Pieces without ASCII, by script: Latin with diacritics, IPA and marks, Greek, Cyrillic,
    // Armenian, Hebrew and Georgian, Arabic, Devanagari, other Indic, Thai, kana, Han,
    // Hangul, Ethiopic, Lao/Tibetan/Myanmar/Khmer, Cherokee and syllabics, other (Syriac,
    // Thaana, ...).
    1.272, 0.000, 0.584, 0.382, 1.361, 0.648, 0.486, 0.773,
    0.831, 0.054, 0.674, 0.379, 0.821, 2.302, 1.112, 0.000,
    // Letters outside ASCII, by script (same order).
    0.431, 1.890, 0.307, 0.216, 0.153, 0.210, 0.227, 0.299,
    0.427, 0.620, 0.439, 0.644, 2.061, 0.891, 2.963, 3.306,
    // Digit groups.
    1.020,
    // Punctuation runs of 1..=4, characters beyond, bytes outside ASCII, with newlines.
    1.032, 1.076, 1.181, 1.766, 0.031, 0.272, 0.031,
    // Newline pieces, their characters beyond the first.
    1.149, 0.066,
    // Space runs of 1..=4, runs of 80 beyond the first, a space before digits.
    0.682, 0.714, 0.743, 0.873, 0.800, 1.146,
    // Words ending in a vowel, their letters.
    0.018, 0.097,
    // Rare letter pairs; Cyrillic, Arabic and Latin letters outside the core alphabets.
    1.422, 0.272, 0.000, 0.067,
    // Letters of long pieces without ASCII, by script (same order).
    0.000, 0.000, 0.000, 0.000, 0.000, 0.014, 0.267, 0.000,
    0.000, 0.082, 0.555, 0.306, 0.026, 0.000, 0.002, 0.000,
    // Blank lines, spaces before a newline, a lone space-led punctuation before a letter,
    // letters beyond 32.
    0.000, 0.260, 0.480, 0.250,
    // Rare pairs of Latin letters with diacritics, of Cyrillic letters.
    0.791, 0.855,
    // A lone `-` or `=`, a lone `<`, another lone ASCII punctuation character, a lone `/`,
    // a lone `'`, before a word; the same after a space.
    0.478, 1.707, 0.960, 0.497, 0.847, 1.037, 0.699, 1.165,
    1.117, 0.760,
    // Rare letter pairs among the first letters of a word; a word right before `<` (taken
    // back); a punctuation run of eight or more, a rule (taken back); an apostrophe between
    // letters (taken back); mixed punctuation from the ninth character of a run on; an ASCII
    // control character.
    0.857, 1.543, 0.697, 1.547, 0.400, 1.239,
];

/// The script bucket of a code point outside ASCII.
#[inline(always)]
pub(crate) const fn script_of(cp: u32) -> usize {
    match cp {
        0x00c0..=0x024f | 0x1e00..=0x1eff => 0, // Latin with diacritics
        0x0250..=0x036f | 0x1d00..=0x1dff => 1, // IPA, spacing and combining marks
        0x0370..=0x03ff | 0x1f00..=0x1fff => 2, // Greek
        0x0400..=0x052f | 0x1c80..=0x1c8f => 3, // Cyrillic
        0x0530..=0x05ff | 0xfb00..=0xfb4f | 0x10a0..=0x10ff | 0x1c90..=0x1cbf => 4, // Armenian, Hebrew, Georgian
        0x0600..=0x06ff | 0x0750..=0x077f | 0x08a0..=0x08ff | 0xfb50..=0xfeff => 5, // Arabic
        0x0900..=0x097f => 6,                                                       // Devanagari
        0x0980..=0x0dff => 7,                   // Other Indic scripts
        0x0e00..=0x0e7f => 8,                   // Thai
        0x3040..=0x30ff | 0x31f0..=0x31ff => 9, // Kana
        0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff | 0x20000.. => 10, // Han
        0x1100..=0x11ff | 0x3130..=0x318f | 0xac00..=0xd7af => 11, // Hangul
        0x1200..=0x139f | 0x2d80..=0x2ddf => 12, // Ethiopic
        0x0e80..=0x109f | 0x1780..=0x17ff => 13, // Lao, Tibetan, Myanmar, Khmer
        0x13a0..=0x167f => 14,                  // Cherokee, Canadian syllabics
        _ => 15,
    }
}

/// The letters [`FAMILIAR`] knows, each folded to one number
/// for its small and capital forms: ASCII letters (0 to 25), then those of Latin-1 (from 26)
/// and Latin Extended-A (from 59), and Cyrillic letters from U+0400 to U+045F (128 to 175);
/// [`NO_LETTER`] for any other character.
pub(crate) const fn pair_letter(cp: u32) -> u8 {
    match cp {
        0x41..=0x5a => (cp - 0x41) as u8,
        0x61..=0x7a => (cp - 0x61) as u8,
        // Capitals 0xc0..=0xde are 0x20 below their small letters (from 0xe0; 0xdf is `ß`).
        0xc0..=0xd6 | 0xd8..=0xde => 27 + (cp - 0xc0) as u8,
        0xdf..=0xf6 | 0xf8..=0xff => 26 + (cp - 0xdf) as u8,
        // Latin Extended-A pairs capital and small: the capital first, or (in two runs) second.
        0x0139..=0x0148 | 0x0179..=0x017e => 59 + (cp - 0x0100).div_ceil(2) as u8,
        0x0100..=0x017f => 59 + ((cp - 0x0100) / 2) as u8,
        // `ё` is written as `е` as often as not: its pairs are those of `е`.
        0x0401 | 0x0451 => CYRILLIC_LETTER + 5,
        0x0400..=0x040f => 128 + 32 + (cp - 0x0400) as u8,
        0x0410..=0x042f => 128 + (cp - 0x0410) as u8,
        0x0430..=0x044f => 128 + (cp - 0x0430) as u8,
        0x0450..=0x045f => 128 + 32 + (cp - 0x0450) as u8,
        _ => NO_LETTER,
    }
}

/// For each [`pair_letter`] `a`, in two words (`a << 1`, then the half of `b >> 6 & 1`), the
/// letters `b` of its script that follow it in at least 0.02% of the letter pairs of
/// TypeScript's diagnostic messages in one of Czech, German, Spanish, French, Italian, Polish,
/// Portuguese and Turkish (Latin), or in Russian (Cyrillic: one word a row, from row 256).
/// Pairs of two ASCII letters are [`RARE`]'s, not here. `examples/estimate_fit.rs --familiar`
/// prints it.
///
// NOTE: a letter-pair table of 2.8 KB, not a vocabulary: it tells a word of a widely used
// language from one of the hundreds of others written in the same letters, which o200k_base
// cuts finer.
#[rustfmt::skip]
const FAMILIAR: [u64; FAMILIAR_WORDS] = [
    0x4000030400000000, 0x600050010000402, 0x100010000000000, 0x10000180,
    0x2000413800000000, 0x80000, 0x2082013810000000, 0x8010080100,
    0x4000000404000000, 0x6000d8020000402, 0x80001000000000, 0x80000,
    0x2082001000000000, 0x10000000, 0x82001890000000, 0x0,
    0x6010401c10000000, 0x200048010000480, 0x2000010000000000, 0x10000000080,
    0x82401010000000, 0x10080000, 0x182011890000000, 0x80080,
    0x82411810000000, 0x4000000080100, 0x2180011450000000, 0x80180,
    0x0, 0x600058030000402, 0x20401400000000, 0x4008000080100,
    0x0, 0x0, 0x1804134f8000000, 0x4000000080082,
    0x2083411850000000, 0x10080000, 0x2082413818000000, 0x4008000080180,
    0x211400000000, 0x6000c0030000402, 0x100011010000000, 0x404080000000100,
    0x2000000080000000, 0x10000080, 0x0, 0x0,
    0x4082000000000000, 0x600098010080000, 0x2080010010000000, 0x80010080080,
    0x10, 0x0, 0x0, 0x0,
    0x22e3c0c, 0x8000000000, 0x1000, 0x0,
    0x4000, 0x0, 0x62840, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x3000040004911, 0x80000, 0xf0808, 0x0,
    0x1eb8fc, 0x0, 0x82000, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x22cbc8d, 0x400000000000002, 0x82000, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x42200a, 0x0, 0x0, 0x0,
    0x10, 0x0, 0x20624e0, 0x400,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x62002, 0x0,
    0x0, 0x0, 0x30e3c46, 0x40000000400,
    0xe1004, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x2008044, 0x200000000000000,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x10010082d10, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x208800c, 0x0,
    0x2082a00, 0x80000000000, 0x0, 0x0,
    0x80000000120910, 0x80000, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x3063c2c, 0x40000000400,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x2000400001104011, 0x80, 0x4, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x10000000111, 0x0,
    0x4000000000020804, 0x0, 0x0, 0x0,
    0x381d11, 0x80000, 0x10000002110, 0x80000000000,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x400000000000000, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x20000, 0x0, 0x1042411, 0x0,
    0x10010086119, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0xc2e7befe, 0x0, 0x8e0b6d21, 0x0,
    0x80f7d21, 0x0, 0x96911, 0x0,
    0x96921, 0x0, 0x83a7ffff, 0x0,
    0x2131, 0x0, 0x88097435, 0x0,
    0xc0f7bfbf, 0x0, 0x60800, 0x0,
    0x4f4921, 0x0, 0xd8886561, 0x0,
    0x8808d125, 0x0, 0x883e6531, 0x0,
    0x387fffe, 0x0, 0x8096921, 0x0,
    0x881e656d, 0x0, 0x990edd25, 0x0,
    0x180b6525, 0x0, 0x4287bef8, 0x0,
    0x80921, 0x0, 0x14000, 0x0,
    0x120, 0x0, 0x42121, 0x0,
    0x2121, 0x0, 0x10000121, 0x0,
    0x80000020, 0x0, 0x259aa4, 0x0,
    0x41062480, 0x0, 0x40c00, 0x0,
    0x2840000, 0x0, 0x426510a4, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
    0x0, 0x0, 0x0, 0x0,
];

/// The length of [`FAMILIAR`]: two words for each of the 176 [`pair_letter`]s.
pub(crate) const FAMILIAR_WORDS: usize = 352;

/// [`pair_letter`] of a character it knows no pairs of.
const NO_LETTER: u8 = 0xff;
/// The first Cyrillic [`pair_letter`].
const CYRILLIC_LETTER: u8 = 128;

/// Where [`FAMILIAR`] holds the pair of letters `a` then `b` ([`pair_letter`]): its word and bit;
/// `None` if either is [`NO_LETTER`] or they are letters of two scripts (Latin below 128,
/// Cyrillic from it), which make no pair.
#[inline(always)]
pub(crate) fn familiar_bit(a: u8, b: u8) -> Option<(usize, u32)> {
    if (a ^ b) & CYRILLIC_LETTER != 0 || b == NO_LETTER {
        return None;
    }
    // NOTE: the row of an `a` of NO_LETTER is past the end.
    let word = usize::from(a) << 1 | usize::from(b >> 6 & 1);
    (word < FAMILIAR_WORDS).then_some((word, u32::from(b & 63)))
}

/// Whether the pair of letters `a` then `b` ([`pair_letter`], one of them at least outside
/// ASCII) is one [`LATIN_PAIRS`] or [`CYRILLIC_PAIRS`] counts: the counter, if so.
#[inline(always)]
fn rare_pair(a: u8, b: u8) -> Option<usize> {
    let (word, bit) = familiar_bit(a, b)?;
    let row = FAMILIAR.get(word)?;
    (row >> bit & 1 == 0).then_some(LATIN_PAIRS + usize::from(a >> 7))
}

/// What a character is to the pre-tokenizer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lower,
    Upper,
    /// Letters without case (most scripts but Latin, Greek, Cyrillic, Armenian), and marks.
    Caseless,
    Digit,
    Space,
    Punct,
}

/// The kind of a code point outside ASCII, by block; `None` where the standard library's
/// lookups decide ([`wide_kind_slow`]). `const`, for `TABLES.wide2`.
///
// NOTE: the blocks most text outside ASCII is written in are matched by range first; only the
// rest goes to the standard library's Unicode property lookups, which cost a search each.
#[inline(always)]
const fn wide_kind_known(cp: u32) -> Option<Kind> {
    match cp {
        0x00c0..=0x00d6 | 0x00d8..=0x00de | 0x0391..=0x03a9 | 0x0400..=0x042f => Some(Kind::Upper),
        0x00df..=0x00f6 | 0x00f8..=0x00ff | 0x03ac..=0x03ce | 0x0430..=0x045f => Some(Kind::Lower),
        // Hebrew and Arabic letters and vowel marks, Devanagari letters and signs, kana, Han,
        // Hangul syllables, Ethiopic syllables.
        0x05d0..=0x05ea
        | 0x0620..=0x065f
        | 0x0900..=0x0963
        | 0x3041..=0x3096
        | 0x30a1..=0x30fa
        | 0x4e00..=0x9fff
        | 0xac00..=0xd7a3
        | 0x1200..=0x135a => Some(Kind::Caseless),
        // Other Indic blocks: digits sit at offsets 0x66..=0x6f of each 128-code-point block.
        0x0980..=0x0dff if !matches!(cp & 0x7f, 0x66..=0x6f) => Some(Kind::Caseless),
        // General punctuation (dashes, quotes, ellipsis), CJK and fullwidth punctuation.
        0x2010..=0x2027 | 0x2030..=0x205e | 0x3001..=0x3003 | 0x3008..=0x3011 => Some(Kind::Punct),
        _ => wide_kind_blocks(cp),
    }
}

/// [`wide_kind_known`] for the other blocks text is often written in, by block layout: letters and
/// marks with their digits and punctuation picked out, and case by the parity of the code point
/// where the block pairs capital and small letters.
///
// NOTE: a few code points in these ranges (unassigned ones, rare symbols) get a kind that the
// Unicode tables would not give them: this is an estimate, and the standard library's lookups
// below cost a search each.
const fn wide_kind_blocks(cp: u32) -> Option<Kind> {
    let parity = if cp & 1 == 0 {
        Kind::Upper
    } else {
        Kind::Lower
    };
    let odd_upper = if cp & 1 == 1 {
        Kind::Upper
    } else {
        Kind::Lower
    };
    match cp {
        // Latin Extended-A and -B, Latin Extended Additional, Cyrillic beyond Russian.
        0x0100..=0x0137 | 0x014a..=0x0177 | 0x0200..=0x0233 | 0x1e00..=0x1e95 => Some(parity),
        0x0460..=0x0481 | 0x048a..=0x04bf | 0x04d0..=0x052f | 0x1ea0..=0x1eff => Some(parity),
        0x0139..=0x0148 | 0x0179..=0x017e | 0x04c1..=0x04ce => Some(odd_upper),
        0x0138 | 0x0149 | 0x017f | 0x0250..=0x02af | 0x0390 | 0x04cf => Some(Kind::Lower),
        0x0178 | 0x0386 | 0x0388..=0x038f | 0x04c0 | 0x0531..=0x0556 => Some(Kind::Upper),
        0x0560..=0x0588 | 0x13f8..=0x13fd | 0x10d0..=0x10fa | 0x10fd..=0x10ff => Some(Kind::Lower),
        0x10a0..=0x10c5 | 0x13a0..=0x13f5 | 0x1c90..=0x1cbf => Some(Kind::Upper),
        // Digits of Arabic, NKo, Devanagari, Thai, Lao, Tibetan, Myanmar, Ethiopic, Khmer.
        0x0660..=0x0669
        | 0x06f0..=0x06f9
        | 0x07c0..=0x07c9
        | 0x0966..=0x096f
        | 0x0e50..=0x0e59
        | 0x0ed0..=0x0ed9
        | 0x0f20..=0x0f33
        | 0x1040..=0x1049
        | 0x1090..=0x1099
        | 0x1369..=0x137c
        | 0x17e0..=0x17e9
        | 0xff10..=0xff19 => Some(Kind::Digit),
        // Their punctuation.
        0x055a..=0x055f
        | 0x0589..=0x058a
        | 0x05be
        | 0x05c0
        | 0x05c3
        | 0x05c6
        | 0x05f3..=0x05f4
        | 0x0600..=0x060f
        | 0x061b..=0x061f
        | 0x066a..=0x066d
        | 0x06d4
        | 0x06dd..=0x06de
        | 0x06e9
        | 0x06fd..=0x06fe
        | 0x0700..=0x070d
        | 0x07f6..=0x07f9
        | 0x0964..=0x0965
        | 0x0970
        | 0x0e3f
        | 0x0e4f
        | 0x0e5a..=0x0e5b
        | 0x0f01..=0x0f17
        | 0x0f1a..=0x0f1f
        | 0x0f34
        | 0x0f36
        | 0x0f38
        | 0x0f3a..=0x0f3d
        | 0x0fbe..=0x0fff
        | 0x104a..=0x104f
        | 0x10fb
        | 0x1360..=0x1368
        | 0x1400
        | 0x166d..=0x166e
        | 0x17d4..=0x17d6
        | 0x17d8..=0x17db
        | 0xff01..=0xff0f
        | 0xff1a..=0xff20
        | 0xff3b..=0xff40
        | 0xff5b..=0xff65 => Some(Kind::Punct),
        // Letters and marks without case: combining marks, Hebrew, Arabic, Syriac, Thaana,
        // NKo, Devanagari, Thai, Lao, Tibetan, Myanmar, Ethiopic, syllabics, Khmer, Tifinagh,
        // CJK extensions, halfwidth kana.
        0x0300..=0x036f
        | 0x0483..=0x0489
        | 0x0591..=0x05c7
        | 0x05ef..=0x05f2
        | 0x0610..=0x061a
        | 0x0660..=0x06ff
        | 0x070f..=0x07ff
        | 0x08a0..=0x08ff
        | 0x0964..=0x097f
        | 0x0e01..=0x0e4e
        | 0x0e80..=0x0eff
        | 0x0f00..=0x0fbc
        | 0x1000..=0x109f
        | 0x1380..=0x139f
        | 0x1401..=0x167f
        | 0x1780..=0x17dc
        | 0x2d30..=0x2d7f
        | 0x3400..=0x4dbf
        | 0xf900..=0xfaff
        | 0xff66..=0xff9f
        | 0x20000..=0x3134f => Some(Kind::Caseless),
        0xff21..=0xff3a => Some(Kind::Upper),
        0xff41..=0xff5a => Some(Kind::Lower),
        0x3000 => Some(Kind::Space),
        _ => None,
    }
}

/// What the per-character path needs of a code point outside ASCII, in one `u16`: its class
/// (low four bits), its script ([`script_of`], the next four), whether it is a letter
/// ([`W_LETTER`]) and whether it is outside the alphabet of its script's best-covered
/// language ([`W_EXT`]).
const fn info_of(class: u8, cp: u32) -> u16 {
    let s = script_of(cp);
    // NOTE: `cp` is below 0x80 only for bytes that are no UTF-8 (an overlong encoding), which
    // never reach here from a `str`: they are counted as before, with no script.
    let letter = matches!(class, C_WIDE_LOWER | C_WIDE_UPPER | C_WIDE_CASELESS) && cp >= 0x80;
    // Letters outside the alphabet of the script's best-covered language.
    let ext = letter
        && match (s, cp) {
            (0, 0x0100..) => true,
            (3, _) => !matches!(cp, 0x0401 | 0x0410..=0x044f | 0x0451),
            (5, _) => !matches!(cp, 0x0621..=0x0652),
            _ => false,
        };
    class as u16 | ((s as u16) << 4) | ((letter as u16) * W_LETTER) | ((ext as u16) * W_EXT)
}

/// [`info_of`]: a letter outside ASCII, counted in [`LETTERS`] by script.
const W_LETTER: u16 = 1 << 8;
/// [`info_of`]: a letter counted in the [`ext_counter`] of its script.
const W_EXT: u16 = 1 << 9;
/// The counter of letters outside the core alphabet of script `s`, for the scripts [`W_EXT`]
/// applies to: Latin (0), Cyrillic (3), Arabic (5).
#[inline(always)]
const fn ext_counter(s: usize) -> usize {
    match s {
        3 => CYRILLIC_EXT,
        5 => ARABIC_EXT,
        _ => LATIN_EXT,
    }
}

/// The class of a [`Kind`] on the per-character path.
const fn kind_class(kind: Kind) -> u8 {
    match kind {
        Kind::Lower => C_WIDE_LOWER,
        Kind::Upper => C_WIDE_UPPER,
        Kind::Caseless => C_WIDE_CASELESS,
        Kind::Digit => C_DIGIT,
        Kind::Space => C_SPACE,
        Kind::Punct => C_PUNCT,
    }
}

/// [`info_of`] a code point outside ASCII, by [`wide_kind_known`]; class [`W_SLOW`] where
/// only the standard library's lookups know.
const fn wide_info_known(cp: u32) -> u16 {
    match wide_kind_known(cp) {
        Some(kind) => info_of(kind_class(kind), cp),
        None => W_SLOW as u16,
    }
}

/// The class [`wide_info_known`] gives where [`wide_kind_slow`] decides.
const W_SLOW: u8 = 15;

/// The code points of two UTF-8 bytes (`TABLES.wide2`).
const WIDE2: usize = 0x800;
const WIDE2_CP: u32 = WIDE2 as u32;

// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn wide2_table() -> [u16; WIDE2] {
    let mut t = [0; WIDE2];
    let mut cp = 0;
    while cp < WIDE2 {
        t[cp] = wide_info_known(cp as u32);
        cp += 1;
    }
    t
}

/// The code points of three UTF-8 bytes from 0x800 below this one (Indic scripts, Thai, Lao,
/// Tibetan, Myanmar, Georgian, Ethiopic, syllabics, Khmer, Latin and Greek extended, general
/// punctuation) are looked up in `TABLES.wide3`.
const WIDE3_END: u32 = 0x2070;
const WIDE3: usize = (WIDE3_END - WIDE2_CP) as usize;

/// [`info_of`] a code point of `TABLES.wide3` in one byte: its class and its script (the low
/// eight bits of [`info_of`]); [`wide3_info`] gives back the rest.
// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn wide3_table() -> [u8; WIDE3] {
    let mut t = [0; WIDE3];
    let mut i = 0;
    while i < WIDE3 {
        t[i] = wide_info_known(WIDE2_CP + i as u32) as u8;
        i += 1;
    }
    t
}

/// [`info_of`] from its low eight bits, for the code points of `TABLES.wide3`: above 0x7ff all
/// letters are outside ASCII, and all of Latin (Latin extended), Cyrillic (Cyrillic extended-C)
/// and Arabic (Arabic extended-A) there are outside the core alphabets.
#[inline(always)]
const fn wide3_info(low: u8) -> u16 {
    /// The classes of letters, and the scripts with a [`W_EXT`] counter (see [`ext_counter`]).
    const LETTER_CLASSES: u16 = 1 << C_WIDE_LOWER | 1 << C_WIDE_UPPER | 1 << C_WIDE_CASELESS;
    const EXT_SCRIPTS: u16 = 1 << 0 | 1 << 3 | 1 << 5;
    let (class, script) = (low & 15, low >> 4);
    let letter = (LETTER_CLASSES >> class) & 1;
    let ext = letter & (EXT_SCRIPTS >> script) & 1;
    low as u16 | (letter * W_LETTER) | (ext * W_EXT)
}

/// [`info_of`] a code point outside ASCII.
///
// NOTE: code points of two UTF-8 bytes (Latin with diacritics, Greek, Cyrillic, Armenian,
// Hebrew, Arabic), and those of three up to 0x1fff, are looked up in a table: the ranges of
// [`wide_kind_known`] and [`script_of`] cost a chain of compares and branches each, per
// character.
#[inline(always)]
fn wide_info(cp: u32) -> u16 {
    // Han ideographs and Hangul syllables: most of the text outside ASCII of the languages
    // written in them, each a letter without case of one script.
    const HAN: u16 = wide_info_known(0x4e00);
    const HANGUL: u16 = wide_info_known(0xac00);
    let info = match cp {
        0..WIDE2_CP => {
            let i = cp as usize & (WIDE2 - 1);
            TABLES.wide2.get(i).copied().unwrap_or(W_SLOW as u16)
        }
        WIDE2_CP..WIDE3_END => {
            let i = (cp - WIDE2_CP) as usize;
            wide3_info(TABLES.wide3.get(i).copied().unwrap_or(W_SLOW))
        }
        0x4e00..=0x9fff => HAN,
        0xac00..=0xd7a3 => HANGUL,
        _ => wide_info_known(cp),
    };
    if info & 15 == W_SLOW as u16 {
        return info_of(kind_class(wide_kind_slow(cp)), cp);
    }
    info
}

/// The kind of a code point outside ASCII through the standard library's Unicode properties.
#[cold]
#[inline(never)]
fn wide_kind_slow(cp: u32) -> Kind {
    let Some(c) = char::from_u32(cp) else {
        return Kind::Punct;
    };
    if c.is_alphabetic() || is_mark(cp) {
        if c.is_lowercase() {
            Kind::Lower
        } else if c.is_uppercase() {
            Kind::Upper
        } else {
            Kind::Caseless
        }
    } else if c.is_numeric() {
        Kind::Digit
    } else if c.is_whitespace() {
        Kind::Space
    } else {
        Kind::Punct
    }
}

/// Combining marks (`\p{M}`) that are not `Alphabetic`, which the pattern keeps inside words.
const fn is_mark(cp: u32) -> bool {
    matches!(cp,
        0x0300..=0x036f | 0x0483..=0x0489 | 0x0591..=0x05c7 | 0x0610..=0x061a | 0x064b..=0x065f
        | 0x0900..=0x0963 | 0x0966..=0x0dff | 0x0e31..=0x0e4e | 0x0eb1..=0x0ecd
        | 0x0f00..=0x0f03 | 0x0f18..=0x0f39 | 0x0f3e..=0x109f | 0x1780..=0x17d3
        | 0x1ab0..=0x1aff | 0x1dc0..=0x1dff | 0x20d0..=0x20ff | 0xfe20..=0xfe2f)
}

// Byte classes. The ASCII ones fit in three bits (`TABLES.class` packs a letter column above them);
// the others come from the per-character path only.

/// A small ASCII letter other than `a`, `i`, `o`, `u`.
const C_LOWER: u8 = 0;
/// `a`, `i`, `o`, `u`: a word ending in one is priced apart ([`VOWEL_END`]).
const C_VOWEL: u8 = 1;
const C_UPPER: u8 = 2;
const C_DIGIT: u8 = 3;
/// Space, tab, vertical tab, form feed, and whitespace outside ASCII.
const C_SPACE: u8 = 4;
/// `\n` and `\r`.
const C_NEWLINE: u8 = 5;
/// Everything else: punctuation, symbols, controls, and their kin outside ASCII.
const C_PUNCT: u8 = 6;
/// Letters outside ASCII (and ASCII letters inside a word holding one): small, capital, and
/// without case (most scripts, and combining marks).
const C_WIDE_LOWER: u8 = 7;
const C_WIDE_UPPER: u8 = 8;
const C_WIDE_CASELESS: u8 = 9;
/// Before the start and after the end of the text.
const C_EDGE: u8 = 10;
/// ASCII punctuation that o200k_base joins to a word after it otherwise than `_`, `.`, `(`,
/// `'` and `,` (which stay [`C_PUNCT`], nearly always joined): `-` and `=` about a third of the
/// time ([`C_PUNCT_MID`]), `<` (tags; [`C_PUNCT_TAG`]), the rest of ASCII punctuation hardly
/// ever ([`C_PUNCT_SEP`]), and `/` (paths; [`C_PUNCT_PATH`]). Runs of punctuation go on across
/// all five; only the last character of a run decides its event. In `TABLES.class` they read
/// as [`C_PUNCT`] in the low three bits, their group in the five above ([`PUNCT_GROUP`]).
const C_PUNCT_MID: u8 = 11;
const C_PUNCT_TAG: u8 = 12;
const C_PUNCT_SEP: u8 = 13;
const C_PUNCT_PATH: u8 = 14;
/// `'`, apart from the rest of [`C_PUNCT`] for [`CONTRACTION`]: between two letters it is part
/// of the word before it; otherwise it joins the word after it, as [`C_PUNCT`] does.
const C_PUNCT_APOS: u8 = 15;

/// The high five bits of the `TABLES.class` entry of punctuation of [`C_PUNCT_MID`] (then
/// [`C_PUNCT_TAG`], [`C_PUNCT_SEP`], [`C_PUNCT_PATH`]): letter columns from 27 on, which
/// `TABLES.rare_after` never holds (26 letters), so they never make a rare letter pair.
const PUNCT_GROUP: u8 = 27;

/// What a byte says of the pair it ends beyond its event: the bank of its cell (`TABLES.cell`).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Pair {
    None = 0,
    /// A rare letter pair ([`RARE_PAIRS`], [`RARE_EARLY`]).
    Rare = 1,
    /// ASCII punctuation unlike the punctuation before it, in a run that goes on ([`P_MIX`]).
    Mixed = 2,
    /// ASCII punctuation of a rule ([`rule_char`]) repeating the one before it, in a run that
    /// goes on ([`P_RULE`]).
    Repeated = 3,
}

/// The [`Pair`] of ASCII byte `b` (of `TABLES.class` entry `cb`) after byte `p` (of `cp`),
/// with `event` between them: [`Pair::Mixed`] or [`Pair::Repeated`] if both are punctuation and
/// the run goes on (no event). Bytes from 0x80 on never are (the fast path never sees them,
/// and the per-character path counts ASCII bytes only).
const fn punct_pair(event: u8, cp: u8, p: usize, cb: u8, b: usize) -> Pair {
    if event != 0
        || p >= 0x80
        || b >= 0x80
        || !is_punct(step_class(cp))
        || !is_punct(step_class(cb))
    {
        Pair::None
    } else if p == b && rule_char(b) {
        Pair::Repeated
    } else {
        Pair::Mixed
    }
}

/// The counter a punctuation pair of bank `bank` adds to (and how much) at run length `len`
/// before its second character: [`P_MIX`] from [`MIX_FROM`] on for [`Pair::Mixed`], [`P_RULE`]
/// taken back at [`RULE_AT`] for [`Pair::Repeated`]. The one rule for both paths: the cell
/// table weighs it in (`cell_weights`), the per-character path adds it ([`step`]).
const fn pair_add(bank: Pair, len: usize) -> Option<(usize, i64)> {
    match bank {
        Pair::Mixed if len >= MIX_FROM => Some((P_MIX, 1)),
        Pair::Repeated if len == RULE_AT => Some((P_RULE, -1)),
        _ => None,
    }
}

/// Whether o200k_base has long runs of ASCII punctuation byte `b` as few tokens (32 of them
/// in one to six), so that a run of it repeated is a rule ([`P_RULE`]). The rest (brackets,
/// quotes, `,`, `|`, `&`, `$`, `@`, `\`, `^`, a backtick) it merges in twos or fours at most,
/// so repeated they count as mixed ([`P_MIX`]).
const fn rule_char(b: usize) -> bool {
    matches!(
        b as u8,
        b'#' | b'*'
            | b'-'
            | b'.'
            | b'/'
            | b'='
            | b'_'
            | b'~'
            | b'!'
            | b'%'
            | b'+'
            | b':'
            | b';'
            | b'<'
            | b'>'
            | b'?'
    )
}

const fn is_punct(c: u8) -> bool {
    matches!(
        c,
        C_PUNCT | C_PUNCT_MID | C_PUNCT_TAG | C_PUNCT_SEP | C_PUNCT_PATH | C_PUNCT_APOS
    )
}

/// The class the scanner steps with for a `TABLES.class` entry: its low three bits, but the
/// group for punctuation of [`C_PUNCT_MID`] to [`C_PUNCT_PATH`].
#[inline(always)]
const fn step_class(c: u8) -> u8 {
    let group = c >> 3;
    if c & 7 == C_PUNCT && group >= PUNCT_GROUP {
        C_PUNCT_MID + (group - PUNCT_GROUP)
    } else {
        c & 7
    }
}

const fn is_letter(c: u8) -> bool {
    matches!(
        c,
        C_LOWER | C_VOWEL | C_UPPER | C_WIDE_LOWER | C_WIDE_UPPER | C_WIDE_CASELESS
    )
}

// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn class_table() -> [u8; 256] {
    let mut t = [C_PUNCT; 256];
    let mut b = 0;
    while b < 128 {
        let x = b as u8;
        t[b] = match x {
            b'a' | b'i' | b'o' | b'u' => C_VOWEL | (x & 31) << 3,
            b'a'..=b'z' => C_LOWER | (x & 31) << 3,
            b'A'..=b'Z' => C_UPPER,
            b'0'..=b'9' => C_DIGIT,
            b' ' | b'\t' | 0x0b | 0x0c => C_SPACE,
            b'\n' | b'\r' => C_NEWLINE,
            b'-' | b'=' => C_PUNCT | PUNCT_GROUP << 3,
            b'/' => C_PUNCT | (PUNCT_GROUP + 3) << 3,
            b'<' => C_PUNCT | (PUNCT_GROUP + 1) << 3,
            // NOTE: APOS_AFTER_LETTER is the fast path's stand-in for an apostrophe after a
            // letter (see [`apostrophes_after_letters`]): the same class.
            b'\'' | APOS_AFTER_LETTER => C_PUNCT | (PUNCT_GROUP + 4) << 3,
            b'_' | b'.' | b'(' | b')' | b'\\' | b'%' | b',' => C_PUNCT,
            0..=0x1f | 0x7f => C_PUNCT,
            _ => C_PUNCT | (PUNCT_GROUP + 2) << 3,
        };
        b += 1;
    }
    t
}

// Events: what ends when a class follows another (0: the run goes on).

/// The start of the text, and the end of a word holding letters outside ASCII (the
/// per-character path prices those).
const E_NONE: u8 = 1;
/// A word of ASCII letters ended: on a small letter, on `a` `i` `o` `u`, on a capital (so all
/// capitals).
const E_WORD: u8 = 2;
const E_WORD_VOWEL: u8 = 3;
const E_WORD_CAPS: u8 = 4;
const E_DIGITS: u8 = 5;
/// Spaces ended: before a letter, a digit, punctuation, a newline, the end of the text.
const E_SPACES_WORD: u8 = 6;
const E_SPACES_DIGIT: u8 = 7;
const E_SPACES_PUNCT: u8 = 8;
const E_SPACES_NEWLINE: u8 = 9;
const E_SPACES_END: u8 = 10;
const E_NEWLINES: u8 = 11;
/// Punctuation ended: before a letter (with no space, or a space, before it), before a newline,
/// before anything else.
const E_PUNCT_WORD: u8 = 12;
const E_PUNCT_WORD_SPACED: u8 = 13;
const E_PUNCT_NEWLINE: u8 = 14;
const E_PUNCT: u8 = 15;
/// A lone punctuation character of [`C_PUNCT_MID`] to [`C_PUNCT_PATH`] ended before a letter,
/// with no space before it (four events, one a group), then with one (four more); longer runs
/// ending in one are priced as [`E_PUNCT_WORD`]'s and [`E_PUNCT_WORD_SPACED`]'s.
const E_LED_MID: u8 = 16;
const E_SPACED_MID: u8 = E_LED_MID + 5;
const E_SPACED_END: u8 = E_SPACED_MID + 5;
/// A word of ASCII letters ended on a small letter, on `a` `i` `o` `u`, before `<` ([`GENERIC`]).
const E_WORD_LT: u8 = E_SPACED_END;
const E_WORD_VOWEL_LT: u8 = E_WORD_LT + 1;
/// A lone `'` ended between two letters ([`CONTRACTION`]).
const E_APOS_WORD: u8 = E_WORD_VOWEL_LT + 1;

/// The event when `next` follows `prev`, with `before` before `prev`.
const fn event(before: u8, prev: u8, next: u8) -> u8 {
    if is_letter(prev) && is_letter(next) {
        let small = matches!(prev, C_LOWER | C_VOWEL | C_WIDE_LOWER);
        let capital = matches!(next, C_UPPER | C_WIDE_UPPER);
        // A capital after a small letter starts a new word (camelCase); the rest goes on.
        if !(small && capital) {
            return 0;
        }
    } else if prev == next && matches!(prev, C_DIGIT | C_SPACE | C_NEWLINE)
        || is_punct(prev) && is_punct(next)
    {
        return 0;
    }
    match prev {
        C_LOWER if next == C_PUNCT_TAG => E_WORD_LT,
        C_VOWEL if next == C_PUNCT_TAG => E_WORD_VOWEL_LT,
        C_LOWER => E_WORD,
        C_VOWEL => E_WORD_VOWEL,
        C_UPPER => E_WORD_CAPS,
        C_DIGIT => E_DIGITS,
        C_SPACE if is_letter(next) => E_SPACES_WORD,
        C_SPACE => match next {
            C_DIGIT => E_SPACES_DIGIT,
            C_PUNCT | C_PUNCT_MID | C_PUNCT_TAG | C_PUNCT_SEP | C_PUNCT_PATH | C_PUNCT_APOS => {
                E_SPACES_PUNCT
            }
            C_NEWLINE => E_SPACES_NEWLINE,
            _ => E_SPACES_END,
        },
        C_NEWLINE => E_NEWLINES,
        // `before` is what came before the run only when the run is one character long, which
        // is the only case it matters for (see [`run_adds`]).
        C_PUNCT if is_letter(next) && before == C_SPACE => E_PUNCT_WORD_SPACED,
        C_PUNCT if is_letter(next) => E_PUNCT_WORD,
        // `before` is a letter only for a lone one.
        C_PUNCT_APOS if is_letter(next) && is_letter(before) => E_APOS_WORD,
        // The group of the last character of a run; `before` is a space only for a lone one.
        C_PUNCT_MID | C_PUNCT_TAG | C_PUNCT_SEP | C_PUNCT_PATH | C_PUNCT_APOS
            if is_letter(next) =>
        {
            let group = prev - C_PUNCT_MID;
            if before == C_SPACE {
                E_SPACED_MID + group
            } else {
                E_LED_MID + group
            }
        }
        _ if is_punct(prev) && next == C_NEWLINE => E_PUNCT_NEWLINE,
        _ if is_punct(prev) => E_PUNCT,
        _ => E_NONE,
    }
}

// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn event_table() -> [u8; 4096] {
    let mut t = [0; 4096];
    let mut i = 0;
    while i < 4096 {
        let e = event((i >> 8) as u8, ((i >> 4) & 15) as u8, (i & 15) as u8);
        t[i] = e;
        i += 1;
    }
    t
}

/// Runs of this length or longer are priced one by one ([`long_run`]); shorter ones by cell.
const LONG_RUN: usize = 31;
/// Cells: event (32) x run length (0..=31; long runs are priced apart).
const CELLS: usize = 32 * 32;

/// The counters one run adds: up to six (counter, amount) pairs, amount 0 for none.
#[derive(Clone, Copy)]
struct Adds {
    at: [usize; 6],
    n: [i64; 6],
}

impl Adds {
    const NONE: Adds = Adds {
        at: [0; 6],
        n: [0; 6],
    };

    /// One counter.
    const fn one(at: usize, n: i64) -> Adds {
        Adds {
            at: [at, 0, 0, 0, 0, 0],
            n: [n, 0, 0, 0, 0, 0],
        }
    }
}

/// The bucket of a run of `n` (at least 1) with `buckets` buckets: `n - 1`, at most
/// `buckets - 1`.
const fn bucket(n: i64, buckets: usize) -> usize {
    if n < buckets as i64 {
        (n - 1) as usize
    } else {
        buckets - 1
    }
}

/// The counters a run of `n` characters (at least 1) ending in `event` adds.
const fn run_adds(event: u8, n: i64) -> Adds {
    match event {
        E_WORD | E_WORD_VOWEL | E_WORD_CAPS | E_WORD_LT | E_WORD_VOWEL_LT => {
            let caps = if event == E_WORD_CAPS && n >= 2 { n } else { 0 };
            let vowel_end = matches!(event, E_WORD_VOWEL | E_WORD_VOWEL_LT);
            let vowel = (vowel_end && n >= 4) as i64;
            // A word before `<` is never all capitals: the slot of CAPS takes GENERIC.
            let lt = matches!(event, E_WORD_LT | E_WORD_VOWEL_LT) && n >= 3;
            let (caps_at, caps) = if lt { (GENERIC, -1) } else { (CAPS, caps) };
            Adds {
                at: [
                    W_FIRST + bucket(n, WORD_BUCKETS),
                    W_LONG,
                    caps_at,
                    VOWEL_END,
                    VOWEL_END_LETTERS,
                    W_HUGE,
                ],
                n: [1, sub(n, WORD_BUCKETS), caps, vowel, vowel * n, sub(n, 32)],
            }
        }
        E_DIGITS => Adds::one(DIGITS, (n + 2) / 3),
        E_SPACES_WORD | E_SPACES_PUNCT | E_SPACES_DIGIT | E_SPACES_END => {
            // The last space leads the next piece, except at the end; before digits it stands
            // alone (" 42" is two tokens).
            let alone = if event == E_SPACES_END { n } else { n - 1 };
            let digit = (event == E_SPACES_DIGIT) as i64;
            if alone == 0 {
                return Adds::one(SPACE_DIGIT, digit);
            }
            // o200k_base has one token for up to 79 spaces, and about one per 80 more.
            Adds {
                at: [
                    S_FIRST + bucket(alone, SPACE_BUCKETS),
                    S_LONG,
                    SPACE_DIGIT,
                    0,
                    0,
                    0,
                ],
                n: [1, (alone - 1) / 80, digit, 0, 0, 0],
            }
        }
        // Spaces before a newline join its piece.
        E_SPACES_NEWLINE => Adds {
            at: [NEWLINE_CHARS, SPACES_NEWLINE, 0, 0, 0, 0],
            n: [n, 1, 0, 0, 0, 0],
        },
        E_NEWLINES => Adds {
            at: [NEWLINES, NEWLINE_CHARS, BLANK_LINES, 0, 0, 0],
            n: [1, n - 1, (n >= 2) as i64, 0, 0, 0],
        },
        // A lone punctuation character leads the word after it, unless a space leads it.
        E_PUNCT_WORD if n == 1 => Adds::one(PUNCT_LED, 1),
        E_PUNCT_WORD_SPACED if n == 1 => Adds::one(SPACED_PUNCT, 1),
        // The same, by the group of the character (E_LED_MID.. and E_SPACED_MID.. are in the
        // order of LED_MID.. and SPACED_MID..).
        E_LED_MID..E_SPACED_MID if n == 1 => Adds::one(LED_MID + (event - E_LED_MID) as usize, 1),
        // An apostrophe between letters: priced as one before a word, the word's price taken
        // back (the event is only ever of a lone one).
        E_APOS_WORD => Adds {
            at: [LED_MID + 4, CONTRACTION, 0, 0, 0, 0],
            n: [1, -1, 0, 0, 0, 0],
        },
        E_SPACED_MID..E_SPACED_END if n == 1 => {
            Adds::one(SPACED_MID + (event - E_SPACED_MID) as usize, 1)
        }
        E_LED_MID..E_SPACED_END
        | E_PUNCT_WORD
        | E_PUNCT_WORD_SPACED
        | E_PUNCT_NEWLINE
        | E_PUNCT => {
            // Newlines right after punctuation join its piece: the newline run that follows
            // takes back its [`NEWLINES`].
            let newline = (event == E_PUNCT_NEWLINE) as i64;
            Adds {
                at: [
                    P_FIRST + bucket(n, PUNCT_BUCKETS),
                    P_LONG,
                    P_NEWLINE,
                    NEWLINES,
                    0,
                    0,
                ],
                n: [1, sub(n, PUNCT_BUCKETS), newline, -newline, 0, 0],
            }
        }
        _ => Adds::NONE,
    }
}

/// `n - k`, at least 0.
const fn sub(n: i64, k: usize) -> i64 {
    if n > k as i64 {
        n - k as i64
    } else {
        0
    }
}

/// The fixed-point scale of `TABLES.cell` and [`FIXED_WEIGHTS`]: 2^20 per token.
const SHIFT: u32 = 20;

/// `w` tokens in fixed point, rounded half away from zero.
const fn fixed(w: f64) -> i64 {
    let x = w * (1u64 << SHIFT) as f64;
    if x < 0.0 {
        (x - 0.5) as i64
    } else {
        (x + 0.5) as i64
    }
}

/// [`WEIGHTS`] in fixed point.
static FIXED_WEIGHTS: [i64; FEATURES] = fixed_weights();

// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn fixed_weights() -> [i64; FEATURES] {
    let mut t = [0; FEATURES];
    let mut i = 0;
    while i < FEATURES {
        t[i] = fixed(WEIGHTS[i]);
        i += 1;
    }
    t
}

// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn cell_weights() -> [i32; 4 * CELLS] {
    let mut t = [0i64; 4 * CELLS];
    let mut i = 0;
    while i < CELLS {
        let (event, len) = ((i >> 5) as u8, (i & 31) as i64);
        if event != 0 && len != 0 {
            let adds = run_adds(event, len);
            let mut w = 0.0;
            let mut j = 0;
            while j < 6 {
                w += WEIGHTS[adds.at[j]] * adds.n[j] as f64;
                j += 1;
            }
            t[i] = fixed(w);
        }
        // The same cell with a rare letter pair ([`RARE_PAIRS`], or [`RARE_EARLY`] after the
        // first letters of a word) at its last byte.
        let rare = if i & 31 <= EARLY {
            RARE_EARLY
        } else {
            RARE_PAIRS
        };
        t[CELLS + i] = t[i].wrapping_add(fixed(WEIGHTS[rare]));
        // The same cell with ASCII punctuation unlike, or repeating, the one before it at its
        // last byte (the pair table marks those only where the run goes on, event 0).
        let mut bank = 2;
        while bank < 4 {
            let pair = if bank == 2 {
                Pair::Mixed
            } else {
                Pair::Repeated
            };
            let add = match pair_add(pair, i & 31) {
                Some((at, n)) => fixed(WEIGHTS[at] * n as f64),
                None => 0,
            };
            t[bank * CELLS + i] = t[i].wrapping_add(add);
            bank += 1;
        }
        i += 1;
    }
    // In 32 bits (a cell weighs far less than 2^11 tokens), to keep the table small.
    let mut small = [0i32; 4 * CELLS];
    let mut i = 0;
    while i < 4 * CELLS {
        small[i] = t[i] as i32;
        i += 1;
    }
    small
}

// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn rare_after() -> [u32; 256] {
    let mut t = [0; 256];
    let mut b = 0;
    while b < 128 {
        let x = (b as u8).to_ascii_lowercase();
        if x.is_ascii_lowercase() {
            // NOTE: a letter after itself is never counted rare: a run such as `aaaa` is a
            // few long tokens, not one per pair (it is priced by its length instead).
            t[b] = (RARE[(x - b'a') as usize] << 1) & !(1 << (x & 31));
        }
        b += 1;
    }
    t
}

/// The tables of the hot loop, in one place so that one register addresses them all.
struct Tables {
    /// The class of each byte (low three bits; bytes from 0x80 on read as punctuation, the
    /// fast path never sees them) and, for small letters, its letter column (`b & 31`, 1 for
    /// `a`) above, for `rare_after`; for punctuation, its group ([`step_class`]).
    class: [u8; 256],
    /// Letter pairs: for each byte, the small letters that rarely follow it (bit `b & 31`
    /// set), from [`RARE`]; 0 for bytes that are no ASCII letter.
    rare_after: [u32; 256],
    /// For each three classes in a row (`before << 8 | prev << 4 | next`), the event ending at
    /// `prev` (its row of `cell` is 32 times that).
    event: [u8; 4096],
    /// The weight of each cell in fixed point: what one run of that cell adds to the estimate.
    /// Cells of no event and of length 0 weigh 0. The fast path adds [`CELLS`] to a cell for
    /// a rare letter pair: those cells weigh one [`RARE_PAIRS`] more; `2 * CELLS` for an ASCII
    /// punctuation character unlike the one before it in a run that goes on: those weigh one
    /// [`P_MIX`] more from [`MIX_FROM`] on; and `3 * CELLS` for one that repeats the one
    /// before it: the cell of the eighth weighs one [`P_RULE`] less.
    cell: [i32; 4 * CELLS],
    /// For each two ASCII bytes `p` then `b` (at `p | b << 8`, with [`SPACED`] added when a
    /// space came before `p`), the event ending at `p` (low five bits, as in `event`) and, in
    /// bits 5 and 6, the bank of its cell ([`Pair`]). Bit 7 is free.
    pair: [u8; PAIRS],
    /// [`info_of`] each code point of two UTF-8 bytes (0x80 to 0x7ff, and those below for
    /// bytes that are no UTF-8).
    wide2: [u16; WIDE2],
    /// [`info_of`] each code point of three UTF-8 bytes up to [`WIDE3_END`], in a byte
    /// ([`wide3_table`]).
    wide3: [u8; WIDE3],
    /// [`pair_letter`] of each code point below 0x800 (those above are no letter it knows).
    letter: [u8; WIDE2],
}

static TABLES: Tables = Tables {
    class: class_table(),
    rare_after: rare_after(),
    event: event_table(),
    cell: cell_weights(),
    pair: pair_table(),
    wide2: wide2_table(),
    wide3: wide3_table(),
    letter: letter_table(),
};

// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn letter_table() -> [u8; WIDE2] {
    let mut t = [NO_LETTER; WIDE2];
    let mut cp = 0;
    while cp < WIDE2 {
        t[cp] = pair_letter(cp as u32);
        cp += 1;
    }
    t
}

/// [`pair_letter`] by `TABLES.letter`.
#[inline(always)]
fn letter_of(cp: u32) -> u8 {
    TABLES.letter.get(cp as usize).copied().unwrap_or(NO_LETTER)
}

// The fast path ([`ascii_run`]) reads ASCII bytes without a class lookup: the event ending at a
// byte depends on that byte and the next, and, when it is punctuation, on whether a space came
// before it (the one case in which `event` looks back that far); the rare letter pair bit on the
// byte and the next. So one table indexed by two bytes and a flag gives both, and the flag comes
// from a mask of the spaces of a block of eight bytes.

/// The size of `TABLES.pair`: a byte (seven bits), the [`SPACED`] flag, the next byte (seven
/// bits), so that two bytes in a row (the first flagged) read as one little-endian `u16` index it.
const PAIRS: usize = 1 << 15;
/// The flag above the first byte of a `TABLES.pair` index: a space came before that byte.
const SPACED: u64 = 0x80;

/// The fast path's table of events and rare pairs, for each ASCII byte after each ASCII byte.
// Indexing is checked at compile time here: the table is built by const evaluation.
#[allow(clippy::indexing_slicing)]
const fn pair_table() -> [u8; PAIRS] {
    let class = class_table();
    let rare = rare_after();
    let mut t = [0; PAIRS];
    let mut i = 0;
    while i < PAIRS {
        let (p, b) = (i & 0x7f, (i >> 8) & 0x7f);
        let prev = step_class(class[p]);
        // `event` looks at the class before `prev` only to tell a space from the rest, and,
        // for an apostrophe, a letter (which APOS_AFTER_LETTER stands for) from the rest.
        let before = if i as u64 & SPACED != 0 {
            C_SPACE
        } else if p == APOS_AFTER_LETTER as usize && contraction_letter(b as u8) {
            C_LOWER
        } else {
            prev
        };
        let c = class[b];
        let pair = (rare[p] >> (c >> 3)) & 1;
        let e = event(before, prev, step_class(c));
        // APOS_AFTER_LETTER is an apostrophe.
        let last = if p == APOS_AFTER_LETTER as usize {
            b'\'' as usize
        } else {
            p
        };
        let bank = if pair != 0 {
            Pair::Rare
        } else {
            punct_pair(e, class[last], last, class[b], b)
        };
        t[i] = e | (bank as u8) << 5;
        i += 1;
    }
    t
}

/// 1 in each byte of a block of eight (SWAR: bytes in a `u64`, little-endian).
const ONES: u64 = 0x0101_0101_0101_0101;
/// Bit 7 of each byte of a block.
const HIGHS: u64 = ONES * 0x80;

/// Bit 7 set in each byte of `x` that is `k` or more, for bytes below 0x80 (the others, and the
/// bytes above them, may read as anything); the other bits are noise.
// NOTE: adding 0x80 - k to a byte below 0x80 carries no byte into the next.
#[inline(always)]
fn at_least(x: u64, k: u8) -> u64 {
    x.wrapping_add(u64::from(0x80 - k) * ONES)
}

/// [`SPACED`] (bit 7) in each byte of `x` that is a space, a tab, a vertical tab or a form feed,
/// for bytes below 0x80 (the others, and the bytes above them, may read as anything).
#[inline(always)]
fn space_mask(x: u64) -> u64 {
    // Bit 7 clear in each byte equal to `c`.
    let not = |c: u8| (x ^ (u64::from(c) * ONES)).wrapping_add(0x7f * ONES);
    let tab_to_ff = at_least(x, 0x09) & !at_least(x, 0x0d) & not(b'\n');
    (!not(b' ') | tab_to_ff) & HIGHS
}

/// Bit 7 set in each byte of `x` equal to `c` (below 0x80), for bytes below 0x80; the other bits
/// clear.
#[inline(always)]
fn equal(x: u64, c: u8) -> u64 {
    !(x ^ (u64::from(c) * ONES)).wrapping_add(0x7f * ONES) & HIGHS
}

/// The fast path's stand-in for an apostrophe right after a letter ([`CONTRACTION`]), which
/// `TABLES.pair` knows as one: the one place where the event at a byte depends on more than
/// whether a space came before it. A control character that text holds next to never; the
/// fast path leaves it to the per-character path, which sees it as an apostrophe too.
const APOS_AFTER_LETTER: u8 = 0x01;

/// Whether ASCII byte `b` is a control character other than whitespace ([`CONTROL`]; tab, line
/// feed, vertical tab, form feed and carriage return are whitespace). [`APOS_AFTER_LETTER`] is
/// one: the fast path leaves them all to the per-character path.
#[inline(always)]
const fn is_control(b: u8) -> bool {
    matches!(b, 0x00..=0x08 | 0x0e..=0x1f)
}

/// Bit 7 set in each byte of block `w` that is a control character ([`is_control`]), for bytes
/// below 0x80 (the others, and the bytes above them, may read as anything).
#[inline(always)]
fn control_mask(w: u64) -> u64 {
    !at_least(w, 0x20) & (!at_least(w, 0x09) | at_least(w, 0x0e)) & HIGHS
}

/// Block `w` (all ASCII, after byte `p`, as from [`fast_state`]) with each apostrophe right
/// after an ASCII letter replaced by [`APOS_AFTER_LETTER`].
#[inline(always)]
fn apostrophes_after_letters(w: u64, p: u64) -> u64 {
    let apostrophes = equal(w, b'\'');
    // NOTE: most blocks hold none: one well-predicted branch instead of the letter mask.
    if apostrophes == 0 {
        return w;
    }
    // Each byte's byte before it, folded to small letters (no byte reaches 0x80).
    let before = (w << 8 | (p & 0x7f)) | (0x20 * ONES);
    let letter = at_least(before, b'a') & !at_least(before, b'z' + 1);
    let at = letter & apostrophes;
    w - (at >> 7) * u64::from(b'\'' - APOS_AFTER_LETTER)
}

/// Where the counters go: the estimate adds weights as it goes, [`features`] keeps counts.
trait Sink {
    /// A run ended (or not, `cell` of event 0): one byte or character passed; from
    /// [`CELLS`] on, with a rare letter pair ([`RARE_PAIRS`]); from `2 * CELLS` and
    /// `3 * CELLS` on, with punctuation unlike or like the last ([`Pair`]).
    fn cell(&mut self, cell: usize);
    /// Takes back a [`Sink::cell`].
    fn uncell(&mut self, cell: usize);
    /// Adds `n` to counter `at`.
    fn add(&mut self, at: usize, n: i64);
}

/// The estimate in fixed point (two's complement: cells may weigh less than 0).
struct Total(u64);

impl Sink for Total {
    #[inline(always)]
    fn cell(&mut self, cell: usize) {
        let w = TABLES.cell.get(cell).copied().unwrap_or(0);
        self.0 = self.0.wrapping_add(w as u64);
    }

    #[inline(always)]
    fn uncell(&mut self, cell: usize) {
        let w = TABLES.cell.get(cell).copied().unwrap_or(0);
        self.0 = self.0.wrapping_sub(w as u64);
    }

    #[inline(always)]
    fn add(&mut self, at: usize, n: i64) {
        let w = FIXED_WEIGHTS.get(at).copied().unwrap_or(0);
        self.0 = self.0.wrapping_add(w.wrapping_mul(n) as u64);
    }
}

/// The counters, and the cells still to turn into counters.
// NOTE: only `examples/estimate_fit.rs` (which compiles this file in) reads the counters.
#[allow(dead_code)]
struct Counts<'a> {
    cells: &'a mut [u64; CELLS],
    f: &'a mut [u64; FEATURES],
}

impl Sink for Counts<'_> {
    #[inline(always)]
    fn cell(&mut self, cell: usize) {
        if (CELLS..2 * CELLS).contains(&cell) {
            let early = cell % 32 <= EARLY;
            self.add(if early { RARE_EARLY } else { RARE_PAIRS }, 1);
        }
        let pair = match cell / CELLS {
            2 => Pair::Mixed,
            3 => Pair::Repeated,
            _ => Pair::None,
        };
        if let Some((at, n)) = pair_add(pair, cell % 32) {
            self.add(at, n);
        }
        if let Some(x) = self.cells.get_mut(cell % CELLS) {
            *x = x.wrapping_add(1);
        }
    }

    #[inline(always)]
    fn uncell(&mut self, cell: usize) {
        if let Some(x) = self.cells.get_mut(cell) {
            *x = x.wrapping_sub(1);
        }
    }

    #[inline(always)]
    fn add(&mut self, at: usize, n: i64) {
        if let Some(x) = self.f.get_mut(at) {
            *x = x.wrapping_add(n as u64);
        }
    }
}

/// A long run's counters, priced one by one (short ones are in their cell's weight); none
/// if it goes on (`row` 0).
#[cold]
#[inline(never)]
fn long_run(row: usize, len: usize) -> Adds {
    run_adds((row >> 5) as u8, len as i64)
}

/// At a character after `len` >= [`LONG_RUN`] of a run: if the run ended (`row` not 0), takes
/// back the cell it was counted in and prices it one by one.
///
// NOTE: the sink is not passed to the cold function, so that the hot loop keeps it in
// registers.
#[inline(always)]
fn long(sink: &mut impl Sink, row: usize, len: usize) {
    sink.uncell(row | (len & 31));
    let adds = long_run(row, len);
    for (&at, &n) in adds.at.iter().zip(&adds.n) {
        sink.add(at, n);
    }
}

/// The scanner's state between characters.
#[derive(Clone, Copy)]
struct State {
    /// The classes of the last three characters (four bits each, the last lowest).
    classes: usize,
    /// Characters in the current run so far.
    len: usize,
    /// The previous byte if it is ASCII, else 0 (for [`RARE`]: `TABLES.rare_after` of it).
    last: u8,
    /// Rare letter pairs seen: after the first [`EARLY`] letters of a word, and before.
    rare: u64,
    rare_early: u64,
    /// Whether the current word holds a letter outside ASCII, how many, and the script of the
    /// first.
    wide: bool,
    other: u64,
    script: usize,
    /// The [`pair_letter`] of the last character if it is not ASCII (`last` is 0 then), else
    /// [`NO_LETTER`].
    wide_last: u8,
}

impl State {
    /// Before the first character: the start of the text, twice.
    const START: State = State {
        classes: (C_EDGE as usize) << 4 | C_EDGE as usize,
        len: 0,
        last: 0,
        rare: 0,
        rare_early: 0,
        wide: false,
        other: 0,
        script: 0,
        wide_last: NO_LETTER,
    };

    /// The [`pair_letter`] of the last character.
    #[inline(always)]
    fn last_letter(&self) -> u8 {
        if self.last == 0 {
            self.wide_last
        } else {
            letter_of(u32::from(self.last))
        }
    }
}

/// A letter outside ASCII, [`pair_letter`] `here`, after the last character: counts the pair if
/// it is rare ([`rare_pair`]) and makes the letter the last character.
#[inline(always)]
fn wide_pair_step(st: &mut State, sink: &mut impl Sink, here: u8) {
    // NOTE: most text outside ASCII is in scripts without pairs: one well-predicted branch.
    if here != NO_LETTER {
        if let Some(at) = rare_pair(st.last_letter(), here) {
            sink.add(at, 1);
        }
    }
    st.last = 0;
    st.wide_last = here;
}

/// An ASCII character `b` on the per-character path, before [`pair_step`]: counts its pair
/// with a letter outside ASCII before it if that is rare ([`rare_pair`]).
#[inline(always)]
fn ascii_after_wide(st: &mut State, sink: &mut impl Sink, b: u8) {
    if st.wide_last != NO_LETTER {
        if let Some(at) = rare_pair(st.wide_last, letter_of(u32::from(b))) {
            sink.add(at, 1);
        }
        st.wide_last = NO_LETTER;
    }
}

/// Whether an apostrophe between letters followed by byte `b` starts one of the suffixes that
/// o200k_base keeps in the word before it (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, in
/// either case; [`CONTRACTION`]); otherwise (`l'homme`, `dell'uomo`) the apostrophe leads the
/// word after it.
#[inline(always)]
const fn contraction_letter(b: u8) -> bool {
    matches!(b | 0x20, b's' | b't' | b'r' | b'v' | b'm' | b'l' | b'd')
}

/// One character of class `class` (its byte `b` if ASCII, else its lead byte; `punct` from
/// [`punct_before`]); returns whether it ended a run.
#[inline(always)]
fn step(st: &mut State, sink: &mut impl Sink, class: u8, b: u8, punct: u8) -> bool {
    st.classes = (st.classes << 4 | usize::from(class)) & 0xfff;
    let mut event = TABLES.event.get(st.classes).copied().unwrap_or(0) & 31;
    // The one event that depends on a byte, not its class: see [`contraction_letter`].
    if event == E_APOS_WORD && !contraction_letter(b) {
        event = E_LED_MID + 4;
    }
    // What the fast path's cells of [`Pair::Mixed`] and [`Pair::Repeated`] weigh more.
    if punct != 0 {
        let pair = punct_pair(
            event,
            byte_class(punct),
            usize::from(punct),
            byte_class(b),
            usize::from(b),
        );
        if let Some((at, n)) = pair_add(pair, st.len) {
            sink.add(at, n);
        }
    }
    let row = usize::from(event) << 5;
    // NOTE: `len & 31`, not `len.min(31)`: a long run lands in the wrong cell, which the
    // (rare, so well predicted) branch below takes back. A long run that goes on (row 0)
    // landed in a cell that weighs nothing.
    sink.cell(row | (st.len & 31));
    if st.len >= LONG_RUN && row != 0 {
        long(sink, row, st.len);
    }
    let ended = row != 0;
    st.len = if ended { 1 } else { st.len + 1 };
    ended
}

/// `TABLES.rare_after` of byte `b`.
#[inline(always)]
fn rare_row(b: u8) -> u32 {
    TABLES.rare_after.get(usize::from(b)).copied().unwrap_or(0)
}

/// ASCII byte `b` of class `c` (`TABLES.class`, with its letter column) after `st.last`: counts
/// the letter pair if it is rare ([`RARE`]) and makes `b` the last byte.
#[inline(always)]
fn pair_step(st: &mut State, b: u8, c: u8) {
    let rare = u64::from((rare_row(st.last) >> (c >> 3)) & 1);
    // NOTE: `st.len` is the length of the run of the last byte, as in the fast path's cell.
    let early = u64::from(st.len <= EARLY);
    st.rare += rare & (early ^ 1);
    st.rare_early += rare & early;
    st.last = b;
}

/// The last byte if it was ASCII punctuation, else 0, for [`step`]'s [`Pair`] (before
/// [`pair_step`] makes the next byte the last).
#[inline(always)]
fn punct_before(st: &State) -> u8 {
    if st.last != 0 && is_punct((st.classes & 15) as u8) {
        st.last
    } else {
        0
    }
}

/// One ASCII byte, with no word holding letters outside ASCII open.
#[inline(always)]
fn ascii_step(st: &mut State, sink: &mut impl Sink, b: u8) {
    let c = byte_class(b);
    let punct = punct_before(st);
    pair_step(st, b, c);
    step(st, sink, step_class(c), b, punct);
}

/// [`ascii_step`] over `bytes`, out of the hot loop: the bytes of a block where a run may
/// reach [`LONG_RUN`], and the ASCII bytes at the end of the text.
///
// NOTE: a call inside the hot loop, even one never taken, makes V8's optimizing compiler
// (TurboFan) keep the loop's state on the stack around it: that made the wasm build several
// times slower than native code. Here the call sits on a branch that passes the state by
// value, and the loop itself holds no call.
#[inline(never)]
fn ascii_bytes<S: Sink>(mut st: State, mut sink: S, bytes: &[u8]) -> (State, S) {
    for &b in bytes {
        ascii_step(&mut st, &mut sink, b);
    }
    (st, sink)
}

/// The fast path's stand-in for the last byte, with [`SPACED`] (see `TABLES.pair`), for the
/// scanner's state, if it has one: not inside a word holding letters outside ASCII, and with
/// an ASCII byte (or a character of the same class, or the start of the text) last.
///
// NOTE: the start of the text reads as NUL (punctuation): the run of the first byte has length
// 0, whose cells weigh nothing, as after the start; the first byte starts a run either way.
#[inline(always)]
fn fast_state(st: &State) -> Option<u64> {
    let (prev, last) = (((st.classes >> 4) & 15) as u8, (st.classes & 15) as u8);
    let p = match last {
        C_EDGE if prev == C_EDGE => 0,
        C_DIGIT => b'0',
        C_SPACE => b' ',
        C_NEWLINE => b'\n',
        C_PUNCT_APOS if is_letter(prev) => APOS_AFTER_LETTER,
        C_PUNCT | C_PUNCT_MID | C_PUNCT_TAG | C_PUNCT_SEP | C_PUNCT_PATH | C_PUNCT_APOS => {
            // The last byte itself, which [`P_MIX`] compares the next with: none after
            // punctuation outside ASCII (`st.last` is 0) or a control character standing for
            // nothing the table knows, which the per-character path takes.
            let b = st.last;
            if b == 0 || b == APOS_AFTER_LETTER || step_class(byte_class(b)) != last {
                return None;
            }
            let spaced = if prev == C_SPACE { SPACED } else { 0 };
            return Some(spaced | u64::from(b));
        }
        C_LOWER | C_VOWEL | C_UPPER if byte_class(st.last) & 7 == last => st.last,
        _ => return None,
    };
    Some(u64::from(p))
}

/// Leaves the fast path with `p` (as from [`fast_state`]) last, for the scanner's state.
#[inline(always)]
fn leave_fast(st: &mut State, p: u64, len: usize) {
    let b = (p & 0x7f) as u8;
    let class = step_class(byte_class(b));
    let before = if p & SPACED != 0 && is_punct(class) {
        C_SPACE
    } else if b == APOS_AFTER_LETTER {
        C_LOWER
    } else {
        class
    };
    st.classes = usize::from(before) << 4 | usize::from(class);
    st.last = if b == APOS_AFTER_LETTER { b'\'' } else { b };
    st.wide_last = NO_LETTER;
    st.len = len;
}

/// Takes the ASCII bytes at the start of `bytes` (with no word holding letters outside ASCII
/// open), eight at a time; returns how many it took.
///
// NOTE: no branch depends on the text here but two rare ones per block of eight (a byte
// outside ASCII, a run that may grow long): a mispredicted branch costs as much as the whole
// work of several bytes. The state and the sink come in by value so that they stay in
// registers.
#[inline(always)]
fn ascii_run<S: Sink>(mut st: State, mut sink: S, bytes: &[u8]) -> (State, S, usize) {
    let Some(mut p) = fast_state(&st) else {
        return (st, sink, 0);
    };
    let mut len = st.len;
    let mut done = 0;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let Ok(block) = <&[u8; 8]>::try_from(chunk) else {
            break;
        };
        let w = u64::from_le_bytes(*block);
        // Bytes outside ASCII, and control characters (APOS_AFTER_LETTER among them), leave
        // the fast path.
        let high = (w & HIGHS) | control_mask(w);
        if high != 0 {
            // The ASCII bytes before the first that is not.
            let ascii = (high.trailing_zeros() / 8) as usize;
            let fast = Fast { w, p, len };
            (st, sink) = fast_tail(st, sink, fast, block.get(..ascii).unwrap_or_default());
            return (st, sink, done + ascii);
        }
        done += 8;
        if len >= LONG_RUN && goes_on(w, p) {
            // A long run goes on through the whole block: its bytes add nothing until it ends.
            len += 8;
            p = w >> 56;
            continue;
        }
        if len > LONG_RUN - block.len() {
            // A run may reach LONG_RUN inside this block.
            leave_fast(&mut st, p, len);
            (st, sink) = ascii_bytes(st, sink, block);
            let Some(next) = fast_state(&st) else {
                return (st, sink, done);
            };
            (p, len) = (next, st.len);
            continue;
        }
        (p, len) = fast_bytes(&mut sink, w, p, len, 8);
    }
    let rest = chunks.remainder();
    let ascii = rest
        .iter()
        .take_while(|&&b| b < 0x80 && !is_control(b))
        .count();
    let rest = rest.get(..ascii).unwrap_or_default();
    // The last bytes of the text, padded with 0 (the padding is never taken).
    let w = rest.iter().rev().fold(0, |w, &b| w << 8 | u64::from(b));
    (st, sink) = fast_tail(st, sink, Fast { w, p, len }, rest);
    (st, sink, done + ascii)
}

/// Whether every byte of block `w` (all ASCII) goes on the run of byte `p` (as from
/// [`fast_state`]) with no event and no rare letter pair: digits after a digit, the same letter
/// or punctuation byte again, or the same space or newline byte eight times after one of its
/// class.
///
// NOTE: so a long run (`aaaa...`, a rule of `=`, indentation, a long number) costs a compare
// per block instead of the per-byte path of [`ascii_bytes`].
#[inline(always)]
fn goes_on(w: u64, p: u64) -> bool {
    let b = (p & 0x7f) as u8;
    match byte_class(b) & 7 {
        C_DIGIT => at_least(w, b'0') & HIGHS == HIGHS && at_least(w, b'9' + 1) & HIGHS == 0,
        C_LOWER | C_VOWEL | C_UPPER => w == u64::from(b) * ONES,
        // Punctuation: the same byte (another, of its class, counts for [`P_MIX`]).
        class if is_punct(class) => w == u64::from(b) * ONES,
        class => {
            let first = w & 0x7f;
            w == first * ONES && byte_class(first as u8) & 7 == class
        }
    }
}

/// The fast path's state in a block of eight bytes (`w`, little-endian), for [`fast_tail`].
#[derive(Clone, Copy)]
struct Fast {
    w: u64,
    /// The byte before the block, with [`SPACED`] (or one standing for it: [`fast_state`]).
    p: u64,
    /// The current run's length before the block.
    len: usize,
}

/// Takes `ascii`, the (ASCII) first bytes of the block of `fast`, before a byte outside ASCII
/// or the end of the text, and leaves the fast path.
///
// NOTE: out of the hot loop for the reason given at [`ascii_bytes`]; by the fast path's loop
// rather than `ascii_bytes` when no run can reach [`LONG_RUN`]: text outside ASCII leaves the
// fast path every few words.
#[inline(never)]
fn fast_tail<S: Sink>(mut st: State, mut sink: S, fast: Fast, ascii: &[u8]) -> (State, S) {
    if fast.len > LONG_RUN - 8 {
        leave_fast(&mut st, fast.p, fast.len);
        return ascii_bytes(st, sink, ascii);
    }
    // The bytes taken, and 0 for the rest of the block.
    let n = ascii.len().min(8);
    let w = fast.w & !u64::MAX.checked_shl(8 * n as u32).unwrap_or(0);
    let (p, len) = fast_bytes(&mut sink, w, fast.p, fast.len, n);
    leave_fast(&mut st, p, len);
    (st, sink)
}

/// The fast path over the first `n` (at most 8) bytes of block `w`, all ASCII, after byte `p`
/// (with [`SPACED`]), with `len` bytes of the current run before them (`len + n` below
/// [`LONG_RUN`]); returns the last byte (with [`SPACED`]) and the run's length after them.
#[inline(always)]
fn fast_bytes<S: Sink>(sink: &mut S, w: u64, p: u64, mut len: usize, n: usize) -> (u64, usize) {
    // Each byte of the block with SPACED if the byte before it is a space, an apostrophe after
    // a letter as APOS_AFTER_LETTER.
    let flagged = apostrophes_after_letters(w, p) | space_mask(w << 8 | (p & 0x7f));
    for k in 0..n.min(8) {
        // Byte k - 1 (flagged) and byte k: `p` and the first for the first byte.
        let pair = if k == 0 {
            flagged << 8 | p
        } else {
            flagged >> (8 * (k - 1))
        };
        let e = TABLES
            .pair
            .get(pair as usize & (PAIRS - 1))
            .copied()
            .unwrap_or(0);
        // The event and the pair's bank: a cell from 0 to 4 * CELLS - 1 (`len` is below 31).
        sink.cell((usize::from(e) << 5 | len) & (4 * CELLS - 1));
        len = if e & 31 != 0 { 1 } else { len + 1 };
    }
    match n.min(8) {
        0 => (p, len),
        n => ((flagged >> (8 * (n - 1))) & 0xff, len),
    }
}

/// Decodes the character starting at a byte from 0x80 on: its code point and UTF-8 length.
///
/// The text is valid UTF-8, so the lead byte gives the length; missing bytes (impossible in a
/// `str`) read as 0 rather than panicking.
#[inline(always)]
fn decode(b: &[u8], lead: u8) -> (u32, usize) {
    let cont = |i: usize| u32::from(b.get(i).copied().unwrap_or(0x80) & 0x3f);
    let lead = u32::from(lead);
    if lead < 0xe0 {
        (((lead & 0x1f) << 6) | cont(1), 2)
    } else if lead < 0xf0 {
        (((lead & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            ((lead & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    }
}

/// Prices a word holding letters outside ASCII, `len` letters long, at its end.
fn wide_word_end(st: &mut State, sink: &mut impl Sink, len: usize) {
    let ascii = (len as u64).saturating_sub(st.other);
    if ascii > 0 {
        sink.add(MIXED, 1);
        sink.add(MIXED_ASCII, ascii as i64);
    } else {
        sink.add(PIECES + st.script, 1);
        sink.add(
            PIECE_LONG + st.script,
            st.other.saturating_sub(LONG_PIECE_FROM) as i64,
        );
    }
    st.wide = false;
}

/// The class of byte `b` (`TABLES.class`: its class in the low three bits, its letter column
/// above them).
#[inline(always)]
fn byte_class(b: u8) -> u8 {
    TABLES.class.get(usize::from(b)).copied().unwrap_or(C_PUNCT)
}

/// One character through the general path (any byte, any state); returns its UTF-8 length.
fn char_step(st: &mut State, sink: &mut impl Sink, b: &[u8]) -> usize {
    let Some(&lead) = b.first() else {
        return 1;
    };
    let mut punct = 0;
    let (class, len, info) = if lead < 0x80 {
        if is_control(lead) {
            sink.add(CONTROL, 1);
        }
        let c = byte_class(lead);
        punct = punct_before(st);
        ascii_after_wide(st, sink, lead);
        pair_step(st, lead, c);
        let mut class = step_class(c);
        // Inside a word holding letters outside ASCII, ASCII letters count with them.
        if st.wide && is_letter(class) {
            let wide = if class == C_UPPER {
                C_WIDE_UPPER
            } else {
                C_WIDE_LOWER
            };
            let next = (st.classes << 4 | usize::from(wide)) & 0xfff;
            if TABLES.event.get(next) == Some(&0) {
                class = wide;
            }
        }
        // No letter outside ASCII: no script to count.
        (class, 1, 0)
    } else {
        let (cp, len) = decode(b, lead);
        let info = wide_info(cp);
        // `pair_letter` knows letters only: anything else is NO_LETTER.
        wide_pair_step(st, sink, letter_of(cp));
        let class = (info & 15) as u8;
        if class == C_PUNCT {
            sink.add(P_BYTES, len as i64);
        }
        (class, len, info)
    };
    let run = st.len;
    if step(st, sink, class, lead, punct) && st.wide {
        wide_word_end(st, sink, run);
    }
    if info & W_LETTER != 0 {
        let s = usize::from(info >> 4 & 15);
        if !st.wide {
            st.wide = true;
            st.other = 0;
            st.script = s;
        }
        wide_letter(st, sink, info);
    }
    len
}

/// A letter outside ASCII (`info` from [`wide_info`]) on the open word: its counters by script.
#[inline(always)]
fn wide_letter(st: &mut State, sink: &mut impl Sink, info: u16) {
    let s = usize::from(info >> 4 & 15);
    st.other += 1;
    sink.add(LETTERS + s, 1);
    if info & W_EXT != 0 {
        sink.add(ext_counter(s), 1);
    }
}

/// Takes the letters at the start of `bytes` that go on the open word holding letters outside
/// ASCII (no event: [`char_step`] would add nothing but their letter counters); returns how many
/// bytes it took. [`char_step`] takes the character it stops at.
///
// NOTE: in most scripts but Latin with diacritics every letter of a word comes here, and in
// those a word's ASCII letters after its first letter outside ASCII: a loop of its own saves
// [`char_step`]'s branches on classes and the calls around it.
fn wide_run(st: &mut State, sink: &mut impl Sink, bytes: &[u8]) -> usize {
    let mut done = 0;
    while let Some(&lead) = bytes.get(done) {
        let (class, n, info, cp) = if lead < 0x80 {
            let c = byte_class(lead);
            let class = match c & 7 {
                C_LOWER | C_VOWEL => C_WIDE_LOWER,
                C_UPPER => C_WIDE_UPPER,
                _ => break,
            };
            // For ASCII, `info` is the byte's `TABLES.class` (its letter column, for `RARE`).
            (class, 1, u16::from(c), 0)
        } else {
            let (cp, n) = decode(bytes.get(done..).unwrap_or_default(), lead);
            let info = wide_info(cp);
            if info & W_LETTER == 0 {
                break;
            }
            ((info & 15) as u8, n, info, cp)
        };
        let next = (st.classes << 4 | usize::from(class)) & 0xfff;
        if TABLES.event.get(next) != Some(&0) {
            break;
        }
        // What `char_step` and `step` do for a letter that goes on the word (its cell, of
        // event 0, weighs nothing).
        st.classes = next;
        // The length of the run before this letter, as `char_step` has it for `pair_step`.
        if lead < 0x80 {
            ascii_after_wide(st, sink, lead);
            pair_step(st, lead, info as u8);
        } else {
            wide_pair_step(st, sink, letter_of(cp));
            wide_letter(st, sink, info);
        }
        st.len += 1;
        done += n;
    }
    done
}

/// Runs the text through the sink.
fn scan<S: Sink>(text: &[u8], mut sink: S) -> S {
    let mut st = State::START;
    let mut rest = text;
    while !rest.is_empty() {
        // NOTE: not for a byte outside ASCII next, as after most characters outside ASCII.
        if !st.wide && rest.first().is_some_and(|&b| b < 0x80) {
            let done;
            (st, sink, done) = ascii_run(st, sink, rest);
            rest = rest.get(done..).unwrap_or_default();
        }
        if st.wide {
            let done = wide_run(&mut st, &mut sink, rest);
            rest = rest.get(done..).unwrap_or_default();
        }
        let n = char_step(&mut st, &mut sink, rest);
        rest = rest.get(n..).unwrap_or_default();
    }
    end_of_text(st, sink)
}

/// The end of the text ends the last run; the rare letter pairs are counted at the end.
fn end_of_text<S: Sink>(mut st: State, mut sink: S) -> S {
    let run = st.len;
    if step(&mut st, &mut sink, C_EDGE, 0, 0) && st.wide {
        wide_word_end(&mut st, &mut sink, run);
    }
    sink.add(RARE_PAIRS, st.rare as i64);
    sink.add(RARE_EARLY, st.rare_early as i64);
    sink
}

/// The counters the estimate weighs: see the feature indices above. They are two's
/// complement: [`GENERIC`] counts down (read them `as i64`).
// NOTE: the estimate adds the weights as it goes; the counters themselves are for
// `examples/estimate_fit.rs` (which compiles this file in) and the tests.
#[allow(dead_code)]
pub(crate) fn features(text: &str) -> [u64; FEATURES] {
    let mut cells = [0; CELLS];
    let mut f = [0; FEATURES];
    scan(
        text.as_bytes(),
        Counts {
            cells: &mut cells,
            f: &mut f,
        },
    );
    for (i, &count) in cells.iter().enumerate() {
        let (event, len) = ((i >> 5) as u8, (i & 31) as i64);
        if count == 0 || event == 0 || len == 0 {
            continue;
        }
        let adds = run_adds(event, len);
        for (&at, &n) in adds.at.iter().zip(&adds.n) {
            if let Some(x) = f.get_mut(at) {
                *x = x.wrapping_add((n as u64).wrapping_mul(count));
            }
        }
    }
    f
}

/// Estimates the number of o200k_base tokens in `text` without any tables.
///
/// It is fast (a single pass, no allocation) and usually within a few percent of the exact
/// count on prose, code and JSON; use `context_keeper::count_tokens` when the exact number matters.
/// It is 0 only for the empty string.
///
/// ```
/// use context_keeper_engine::estimate_tokens;
/// assert_eq!(estimate_tokens(""), 0);
/// // 12 tokens exactly.
/// let text = "The estimate counts words, digits and punctuation without any vocabulary.";
/// assert!((10..=14).contains(&estimate_tokens(text)));
/// ```
pub fn estimate_tokens(text: &str) -> usize {
    estimate_utf8(text.as_bytes())
}

/// [`estimate_tokens`] of the UTF-8 bytes of a text. Any bytes give an estimate (no check, no
/// panic); for the bytes of a `&str` it is [`estimate_tokens`]'s.
#[doc(hidden)]
pub fn estimate_utf8(text: &[u8]) -> usize {
    if text.is_empty() {
        return 0;
    }
    let total = scan(text, Total(0)).0;
    // Round half up (the total is never below 0); a non-empty text is at least one token.
    let tokens = total.wrapping_add(1 << (SHIFT - 1)) >> SHIFT;
    usize::try_from(tokens).unwrap_or(usize::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estimate weighs the counters [`features`] returns: both sinks see the same runs.
    #[test]
    fn estimate_is_the_weighted_counters() {
        let mut texts: Vec<String> = [
            "The quick brown fox jumps over the lazy dog.",
            "fn main() {\n    let x = parseJSON(&input)?;\n}\n\n\n  \n",
            "{\"name\": \"context-keeper\", \"count\": 42, \"pi\": 3.14159}",
            "let v: Vec<u32> = x; <output>\n</output> <a href=\"/x/y\">`z` [w] -n --no-deps",
            "\u{1b}[32m.\u{1b}[0m\u{1b}[32m.\u{1b}[0m passed\u{0}x\u{8}\u{7f}\u{1}a'\u{1}",
            "Все люди рождаются свободными; 人人生而自由; Declaración 🎉 — “quotes”",
            "ÀÉÎõü İstanbul ĞÜŞ ꙮ ǅ x\u{0301}y ١٢٣ ๑๒๓ \u{3000}\u{2028}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Runs around the long-run threshold, of every class.
        for run in ["a", "e", "Z", "7", " ", "\n", "=", "é", "中"] {
            for n in [1, 2, 30, 31, 32, 33, 63, 64, 65, 200] {
                texts.push(format!("x{}y", run.repeat(n)));
                texts.push(format!(" {}", run.repeat(n)));
            }
        }
        for text in &texts {
            let f = features(text);
            let weighted: f64 = f
                .iter()
                .zip(&WEIGHTS)
                .map(|(&n, &w)| n as i64 as f64 * w)
                .sum();
            let expected = (weighted.round() as usize).max(1);
            let got = estimate_tokens(text);
            assert!(
                got.abs_diff(expected) <= 1,
                "{got} vs {expected} on {text:?}"
            );
        }
    }

    /// Long runs are priced by their real length, not by their cell.
    #[test]
    fn long_runs_count_in_full() {
        let digits = features(&"9".repeat(3000));
        assert_eq!(digits[DIGITS], 1000);
        let word = features(&"a".repeat(100));
        assert_eq!(word[W_FIRST + WORD_BUCKETS - 1], 1);
        assert_eq!(word[W_LONG], 100 - WORD_BUCKETS as u64);
        assert_eq!(word[VOWEL_END_LETTERS], 100);
        let spaces = features(&format!("x{}", " ".repeat(1000)));
        assert_eq!(spaces[S_LONG], 999 / 80);
        let punct = features(&"-".repeat(50));
        assert_eq!(punct[P_LONG], 50 - PUNCT_BUCKETS as u64);
    }

    /// The table and the shortcuts of [`wide_info`] give what the ranges and the standard
    /// library's lookups give, for every code point.
    #[test]
    fn wide_info_is_the_ranges() {
        for cp in 0x80..=0x10ffff {
            let kind = wide_kind_known(cp).unwrap_or_else(|| wide_kind_slow(cp));
            assert_eq!(wide_info(cp), info_of(kind_class(kind), cp), "{cp:#x}");
        }
    }

    /// [`scan`] with every character through [`char_step`], with no fast path.
    fn scan_slow<S: Sink>(text: &[u8], mut sink: S) -> S {
        let mut st = State::START;
        let mut rest = text;
        while !rest.is_empty() {
            let n = char_step(&mut st, &mut sink, rest);
            rest = &rest[n..];
        }
        end_of_text(st, sink)
    }

    /// The fast paths give what the per-character path gives, at every block offset.
    #[test]
    fn fast_path_is_the_slow_path() {
        let alphabet: Vec<char> =
            "abcdeiouxyzqjstAEIOUXZ0189    \n\n\r\t\u{b}\u{c}.,;:!?(){}\"'-_=</>`éÑłŋжЖљё中🎉\u{3000}—'\u{1}\u{1b}\u{0}"
                .chars()
                .collect();
        let mut seed = 12345u64;
        let mut texts = vec![];
        for i in 0..20000 {
            let mut s = String::new();
            // Some texts of few kinds of characters, for long runs.
            let kinds = if i % 3 == 0 { 3 } else { alphabet.len() };
            let base = (i * 7) % alphabet.len();
            for _ in 0..(i % 97 + (i / 1000) * 3) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (seed >> 33) as usize % kinds;
                s.push(alphabet[(base + k) % alphabet.len()]);
            }
            texts.push(s);
        }
        for text in &texts {
            let fast = scan(text.as_bytes(), Total(0)).0;
            let slow = scan_slow(text.as_bytes(), Total(0)).0;
            assert_eq!(fast, slow, "{text:?}");
        }
    }

    /// Small and capital letters are one letter to the pair tables; `ё` is `е`.
    #[test]
    fn pair_letters_fold_case() {
        let letter = |c: char| pair_letter(c as u32);
        for (small, capital) in [
            ('a', 'A'),
            ('é', 'É'),
            ('þ', 'Þ'),
            ('ł', 'Ł'),
            ('ž', 'Ž'),
            ('ĺ', 'Ĺ'),
            ('ж', 'Ж'),
            ('ѓ', 'Ѓ'),
        ] {
            assert_eq!(letter(small), letter(capital), "{small}");
            assert_ne!(letter(small), NO_LETTER, "{small}");
        }
        assert_eq!(letter('ё'), letter('е'));
        assert_eq!(letter('Ё'), letter('е'));
        assert_ne!(letter('ß'), letter('ÿ'));
        assert_ne!(letter('ÿ'), letter('ā'));
        for c in ['×', '÷', '1', ' ', 'ɓ', 'ә', '中'] {
            assert_eq!(letter(c), NO_LETTER, "{c}");
        }
        // Every letter known to the tables has a row: the word of its pair with a letter of
        // its script from the second half (bit 6 set) is its row's last.
        for cp in 0..0x500 {
            match pair_letter(cp) {
                NO_LETTER => {}
                l => assert!(familiar_bit(l, l | 64).is_some(), "{cp:#x}"),
            }
        }
    }

    /// Words of the widely used languages have few rare letter pairs; words of languages
    /// written in the same letters that o200k_base covers less well have more.
    #[test]
    fn rare_pairs_tell_widely_used_languages() {
        let latin = |text: &str| features(text)[LATIN_PAIRS];
        let cyrillic = |text: &str| features(text)[CYRILLIC_PAIRS];
        // Spanish, Portuguese, Polish, Czech, German, French, Turkish.
        for text in [
            "Declaración Universal de Derechos Humanos",
            "Declaração Universal dos Direitos Humanos",
            "Powszechna deklaracja praw człowieka",
            "Všeobecná deklarace lidských práv",
            "Allgemeine Erklärung der Menschenrechte, natürlich",
            "Déclaration universelle des droits de l'homme, où êtes-vous",
            "İnsan Hakları Evrensel Beyannamesi, özgürlük",
        ] {
            assert!(latin(text) <= 1, "{text}: {}", latin(text));
        }
        // Skolt and Inari Sami (Latin), Serbian (Cyrillic, outside Russian's alphabet).
        let sami = "Ooumažvuõiggâdvuõđi õõlmâsmaailmallaš čõõđtõs";
        assert!(latin(sami) >= 10, "{sami}: {}", latin(sami));
        let inari = "Olmoošvuoigâdvuođâi almosmaailmlâš julgáštus";
        assert!(latin(inari) >= 6, "{inari}: {}", latin(inari));
        assert_eq!(cyrillic("Всеобщая декларация прав человека, ещё"), 0);
        assert!(cyrillic("Љубав њихова, ђак џеп") >= 4);
        // ASCII pairs are `RARE`'s, and no pair spans two scripts.
        assert_eq!(latin("qxzqxz"), 0);
        assert_eq!(latin("éж") + cyrillic("éж"), 0);
        assert_eq!(latin("ŋ, ŋ") + cyrillic("ж ж, ж"), 0);
        // A pair across the fast path and the per-character path counts once, either way.
        assert_eq!(latin("ŋx"), 1);
        assert_eq!(latin("xŋ"), 1);
        assert_eq!(latin("ŋ ŋ"), 0);
    }

    /// Every class pair has an event or goes on, and no cell is out of range.
    #[test]
    fn tables_are_consistent() {
        for (i, &row) in TABLES.event.iter().enumerate() {
            let row = usize::from(row) << 5;
            assert!(row < CELLS, "{i}");
            let (prev, next) = ((i >> 4) & 15, i & 15);
            if prev == next && prev != usize::from(C_EDGE) && prev < 11 {
                assert_eq!(row, 0, "a run of class {prev} goes on");
            }
        }
        assert_eq!(TABLES.class[usize::from(b'a')] & 7, C_VOWEL);
        assert_eq!(TABLES.class[usize::from(b'b')] >> 3, b'b' & 31);
        assert_eq!(TABLES.rare_after[usize::from(b' ')], 0);
    }
}
