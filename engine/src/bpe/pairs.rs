// An encoding's vocabulary as the pair of earlier tokens each token joins, entropy-coded: how
// tables are built into a binary (`<enc>.pairs`, layout in `layout.rs`). Shared by build.rs,
// which codes them, and `mod.rs`, which decodes them on the encoding's first use into the
// `.tables` image build.rs would have written (checked against its id): one definition of the
// model, so the two cannot drift apart.
//
// Why: the `.tables` image is made to be read in place, and gzip leaves o200k_base's at 839 KB,
// 439 KB of it the rank column (near a random permutation, in which no byte-level compressor
// finds a pattern). But a BPE vocabulary is its merges: every token of two bytes or more is two
// tokens of lower rank joined. Listed in rank order, a token is the pair of ranks it joins (any
// split into two earlier tokens gives the same bytes, so the coder picks the cheapest), and
// the ranks come back with the tokens.
//
// The model is static, so that decoding is a table lookup a symbol (an adaptive bit-by-bit
// model measured 2% smaller but 200 ms to decode natively): a pair's left rank is a symbol of
// the left alphabet, its right rank one of the right alphabet under the class of the left
// token's last byte (a letter is followed by letters, a space by a word). Each alphabet is the
// `FREQUENT` ranks used most on that side, exactly, then a bucket per `2^LOW_BITS` ranks whose
// low bits follow raw. Symbols are rANS-coded (32-bit state, byte output) with frequencies in
// `SCALE_BITS`; raw bits are a stream of their own.

use super::assemble::{common_prefix, pack_bits, two_byte_table, Assembler, Given};
use super::layout::{Header, PAIRS_MAGIC, PAIRS_PARTS, PAIR_BITS, ROWS};

/// The longest token the tables hold.
const MAX_TOKEN: usize = 128;
/// Bits of a symbol frequency: frequencies of one table sum to `1 << SCALE_BITS`.
const SCALE_BITS: u32 = 16;
const SCALE: u32 = 1 << SCALE_BITS;
/// The rANS state stays in `[STATE_LOW, STATE_LOW << 8)` between symbols.
const STATE_LOW: u32 = 1 << 23;
/// Ranks per side coded as symbols of their own.
const FREQUENT: usize = 4096;
/// Raw bits of a rank coded by its bucket.
const LOW_BITS: u32 = 8;
/// Classes of a byte, each with the right side's table of its own.
const CLASSES: usize = 8;
/// Tables: the left side's, then the right side's by class.
const TABLES: usize = 1 + CLASSES;

/// The class of a token's last byte: space, lowercase, uppercase, UTF-8 lead, UTF-8
/// continuation, digit, line break or tab, other.
fn class(byte: u8) -> usize {
    match byte {
        b' ' => 0,
        b'a'..=b'z' => 1,
        b'A'..=b'Z' => 2,
        0xC0..=0xFF => 3,
        0x80..=0xBF => 4,
        b'0'..=b'9' => 5,
        b'\n' | b'\r' | b'\t' => 6,
        _ => 7,
    }
}

/// The table of a pair's left rank (`None`) or of its right rank after a left token ending in
/// `last`.
fn table_of(last: Option<u8>) -> usize {
    last.map_or(0, |byte| 1 + class(byte))
}

/// Reads LEB128 varints.
#[derive(Debug)]
struct Varints<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Varints<'_> {
    fn next(&mut self) -> Result<u32, String> {
        let mut value = 0u64;
        for shift in (0..35).step_by(7) {
            let byte = *self.bytes.get(self.at).ok_or("the model is cut short")?;
            self.at += 1;
            value |= u64::from(byte & 0x7F) << shift;
            if byte < 0x80 {
                return u32::try_from(value).map_err(|_| "a model value over 32 bits".to_string());
            }
        }
        Err("a model value over 32 bits".into())
    }
}

// NOTE: build.rs's (and a test's); the library only decodes.
#[allow(dead_code)]
fn put_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// One side's alphabet: its frequent ranks (symbols `0..frequent.len()`), then its buckets.
#[derive(Debug, Default)]
struct Alphabet {
    frequent: Vec<u32>,
}

impl Alphabet {
    fn len(&self, ranks: u32) -> usize {
        self.frequent.len() + (ranks >> LOW_BITS) as usize + 1
    }
}

/// A decoding table: each symbol's frequency and start, and the symbol of each slot.
#[derive(Debug)]
struct Table {
    freq: Vec<u32>,
    start: Vec<u32>,
    slots: Vec<u16>,
}

impl Table {
    fn read(model: &mut Varints<'_>, symbols: usize) -> Result<Table, String> {
        let mut freq = Vec::with_capacity(symbols);
        let mut start = Vec::with_capacity(symbols);
        let mut slots = Vec::with_capacity(SCALE as usize);
        let mut at = 0u32;
        for symbol in 0..symbols {
            let f = model.next()?;
            if f > SCALE - at {
                return Err("a frequency table over its scale".into());
            }
            freq.push(f);
            start.push(at);
            let symbol = u16::try_from(symbol).map_err(|_| "an alphabet over 65536 symbols")?;
            slots.resize(slots.len() + f as usize, symbol);
            at += f;
        }
        if at != SCALE && at != 0 {
            return Err("a frequency table short of its scale".into());
        }
        Ok(Table { freq, start, slots })
    }
}

/// The rANS decoder of the symbols, and the reader of the raw bits.
#[derive(Debug)]
struct Decoder<'a> {
    code: &'a [u8],
    at: usize,
    state: u32,
    raw: &'a [u8],
    raw_at: usize,
    held: u64,
    held_bits: u32,
}

impl<'a> Decoder<'a> {
    fn new(code: &'a [u8], raw: &'a [u8]) -> Self {
        let mut decoder = Decoder {
            code,
            at: 0,
            state: 0,
            raw,
            raw_at: 0,
            held: 0,
            held_bits: 0,
        };
        for _ in 0..4 {
            decoder.state = decoder.state << 8 | u32::from(decoder.next());
        }
        decoder
    }

    /// The next byte of the symbols; 0 past the end (a stream cut short decodes to tokens
    /// that the image's id then refuses).
    #[inline(always)]
    fn next(&mut self) -> u8 {
        let byte = self.code.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        byte
    }

    /// The next symbol of `table`; `None` if the table is empty (a table no pair of the
    /// encoding uses).
    #[inline(always)]
    fn symbol(&mut self, table: &Table) -> Option<usize> {
        let slot = self.state & (SCALE - 1);
        let symbol = usize::from(*table.slots.get(slot as usize)?);
        let (freq, start) = (*table.freq.get(symbol)?, *table.start.get(symbol)?);
        // `start <= slot < start + freq`, as the slots were laid out.
        self.state = freq * (self.state >> SCALE_BITS) + slot - start;
        // A valid stream needs at most three bytes here; a damaged one (a state that starts
        // low) must not read zeros past its end for ever.
        for _ in 0..4 {
            if self.state >= STATE_LOW {
                break;
            }
            self.state = self.state << 8 | u32::from(self.next());
        }
        Some(symbol)
    }

    #[inline(always)]
    fn raw(&mut self, bits: u32) -> u32 {
        while self.held_bits < bits {
            let byte = self.raw.get(self.raw_at).copied().unwrap_or(0);
            self.raw_at += 1;
            self.held |= u64::from(byte) << self.held_bits;
            self.held_bits += 8;
        }
        let value = (self.held & ((1 << bits) - 1)) as u32;
        self.held >>= bits;
        self.held_bits -= bits;
        value
    }

    /// A rank of `alphabet` from `table`.
    #[inline(always)]
    fn rank(&mut self, alphabet: &Alphabet, table: &Table) -> Option<u32> {
        let symbol = self.symbol(table)?;
        Some(match alphabet.frequent.get(symbol) {
            Some(&rank) => rank,
            None => ((symbol - alphabet.frequent.len()) as u32) << LOW_BITS | self.raw(LOW_BITS),
        })
    }

    /// Whether either stream ran out before the last symbol was read.
    fn overran(&self) -> bool {
        self.at > self.code.len() || self.raw_at > self.raw.len()
    }
}

/// The model read from `.model`: both alphabets and every table.
fn read_model(bytes: &[u8], ranks: u32) -> Result<([Alphabet; 2], Vec<Table>), String> {
    let mut model = Varints { bytes, at: 0 };
    let mut sides: [Alphabet; 2] = Default::default();
    for side in &mut sides {
        let len = model.next()? as usize;
        if len > FREQUENT {
            return Err(format!("{len} frequent ranks"));
        }
        let mut rank = 0u32;
        for i in 0..len {
            let step = model.next()?;
            rank = if i == 0 {
                step
            } else {
                rank.checked_add(step).ok_or("a rank over 32 bits")?
            };
            if rank >= ranks {
                return Err(format!("a frequent rank {rank} of {ranks}"));
            }
            side.frequent.push(rank);
        }
    }
    let tables = (0..TABLES)
        .map(|t| {
            let [left, right] = &sides;
            Table::read(&mut model, if t == 0 { left } else { right }.len(ranks))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if model.at != bytes.len() {
        return Err("bytes after the model".into());
    }
    Ok((sides, tables))
}

/// Codes the tokens `by_rank` (every rank's bytes, ranks `0..n`, each token of two bytes or
/// more the join of two tokens of lower rank): the `.model`, `.code` and `.raw` parts of
/// `<enc>.pairs`. Errors name a token no split makes.
// NOTE: build.rs's (and a test's); the library only decodes.
#[allow(dead_code)]
pub(crate) fn encode(by_rank: &[&[u8]]) -> Result<[Vec<u8>; 3], String> {
    let ranks = u32::try_from(by_rank.len()).map_err(|_| "too many tokens")?;
    let mut rank_of = std::collections::HashMap::with_capacity(by_rank.len());
    for (rank, token) in by_rank.iter().enumerate() {
        rank_of.insert(*token, rank as u32);
    }
    // Every way to make each token: (left, right, the left's last byte).
    let mut ways: Vec<Vec<(u32, u32, u8)>> = Vec::new();
    for (rank, token) in by_rank.iter().enumerate() {
        if token.len() < 2 {
            continue;
        }
        let mut splits = Vec::new();
        for at in 1..token.len() {
            let (Some(head), Some(tail)) = (token.get(..at), token.get(at..)) else {
                continue;
            };
            if let (Some(&left), Some(&right)) = (rank_of.get(head), rank_of.get(tail)) {
                if (left as usize) < rank && (right as usize) < rank {
                    splits.push((left, right, head.last().copied().unwrap_or(0)));
                }
            }
        }
        if splits.is_empty() {
            return Err(format!("token {rank} is no two tokens of lower rank"));
        }
        ways.push(splits);
    }
    // Choose the splits: first the pair of smallest ranks, then three times the cheapest under
    // the model of the choice before.
    let mut chosen: Vec<(u32, u32, u8)> = ways
        .iter()
        .filter_map(|splits| splits.iter().min_by_key(|(l, r, _)| l.max(r)).copied())
        .collect();
    for _ in 0..3 {
        let stats = Stats::of(&chosen, ranks);
        chosen = ways
            .iter()
            .filter_map(|splits| {
                splits
                    .iter()
                    .min_by(|a, b| stats.cost(a).total_cmp(&stats.cost(b)))
                    .copied()
            })
            .collect();
    }
    let stats = Stats::of(&chosen, ranks);
    let tables: Vec<Vec<u32>> = stats.counts.iter().map(|c| normalize(c)).collect();

    let mut model = Vec::new();
    for side in &stats.sides {
        put_varint(&mut model, side.frequent.len() as u32);
        let mut before = 0;
        for &rank in &side.frequent {
            put_varint(&mut model, rank - before);
            before = rank;
        }
    }
    for table in &tables {
        for &f in table {
            put_varint(&mut model, f);
        }
    }

    // Symbols are coded last to first, so that they decode first to last.
    let mut symbols: Vec<(usize, usize)> = Vec::with_capacity(2 * chosen.len());
    let mut raw = Vec::new();
    let mut low: Vec<u32> = Vec::new();
    for &(left, right, last) in &chosen {
        for (rank, table, side) in [(left, 0, 0), (right, table_of(Some(last)), 1)] {
            let (symbol, bucket) = stats.symbol(side, rank);
            symbols.push((table, symbol));
            if bucket {
                low.push(rank & ((1 << LOW_BITS) - 1));
            }
        }
    }
    pack_bits(low, LOW_BITS, &mut raw);
    let starts: Vec<Vec<u32>> = tables
        .iter()
        .map(|t| {
            t.iter()
                .scan(0, |at, f| {
                    let start = *at;
                    *at += f;
                    Some(start)
                })
                .collect()
        })
        .collect();
    let mut code = Vec::new();
    let mut state = STATE_LOW;
    for &(table, symbol) in symbols.iter().rev() {
        let freq = tables
            .get(table)
            .and_then(|t| t.get(symbol))
            .copied()
            .unwrap_or(0);
        let start = starts
            .get(table)
            .and_then(|t| t.get(symbol))
            .copied()
            .unwrap_or(0);
        if freq == 0 {
            return Err("a symbol without a frequency".into());
        }
        let max = ((STATE_LOW >> SCALE_BITS) << 8) * freq;
        while state >= max {
            code.push(state as u8);
            state >>= 8;
        }
        state = ((state / freq) << SCALE_BITS) + state % freq + start;
    }
    code.extend_from_slice(&state.to_le_bytes());
    code.reverse();
    Ok([model, code, raw])
}

/// The `<enc>.pairs` file of the tokens `by_rank` (see [`encode`]), whose `.tables` image has
/// the one-byte tokens' ranks `short`, the rank width `rank_bits`, the digit flag and the id
/// `id`.
// NOTE: build.rs's (and a test's); the library only decodes.
#[allow(dead_code)]
pub(crate) fn file(
    by_rank: &[&[u8]],
    short: &[u8],
    rank_bits: u32,
    digit_tokens: bool,
    id: u64,
) -> Result<Vec<u8>, String> {
    let [model, code, raw] = encode(by_rank)?;
    let count = u32::try_from(by_rank.len())
        .map_err(|_| "too many tokens")?
        .to_le_bytes();
    let parts: [&[u8]; PAIRS_PARTS] = [&count, short, &model, &code, &raw];
    let mut file = Vec::new();
    file.extend_from_slice(&PAIRS_MAGIC);
    file.extend_from_slice(&id.to_le_bytes());
    file.extend_from_slice(&rank_bits.to_le_bytes());
    file.extend_from_slice(&u32::from(digit_tokens).to_le_bytes());
    for part in parts {
        let len = u32::try_from(part.len()).map_err(|_| "a part of 4 GiB or more")?;
        file.extend_from_slice(&len.to_le_bytes());
    }
    for part in parts {
        file.extend_from_slice(part);
    }
    Ok(file)
}

/// Counts of the symbols of a choice of splits, and the costs they give.
#[derive(Debug)]
// NOTE: build.rs's (and a test's); the library only decodes.
#[allow(dead_code)]
struct Stats {
    sides: [Alphabet; 2],
    /// Each side's symbol of each frequent rank.
    index: [std::collections::HashMap<u32, usize>; 2],
    counts: Vec<Vec<u32>>,
    totals: Vec<f64>,
}

#[allow(dead_code)]
impl Stats {
    fn of(chosen: &[(u32, u32, u8)], ranks: u32) -> Stats {
        let mut sides: [Alphabet; 2] = Default::default();
        let mut index: [std::collections::HashMap<u32, usize>; 2] = Default::default();
        for (side, (alphabet, index)) in sides.iter_mut().zip(&mut index).enumerate() {
            let mut uses: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
            for &(left, right, _) in chosen {
                *uses
                    .entry(if side == 0 { left } else { right })
                    .or_default() += 1;
            }
            let mut by_use: Vec<(u32, u32)> = uses.into_iter().map(|(r, n)| (n, r)).collect();
            by_use.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            alphabet.frequent = by_use
                .iter()
                .take(FREQUENT)
                .filter(|(n, _)| *n > 1)
                .map(|&(_, r)| r)
                .collect();
            alphabet.frequent.sort_unstable();
            for (symbol, &rank) in alphabet.frequent.iter().enumerate() {
                index.insert(rank, symbol);
            }
        }
        let mut stats = Stats {
            counts: (0..TABLES)
                .map(|t| {
                    let [left, right] = &sides;
                    vec![0; if t == 0 { left } else { right }.len(ranks)]
                })
                .collect(),
            sides,
            index,
            totals: vec![0.0; TABLES],
        };
        for &(left, right, last) in chosen {
            for (rank, table, side) in [(left, 0, 0), (right, table_of(Some(last)), 1)] {
                let (symbol, _) = stats.symbol(side, rank);
                if let Some(count) = stats.counts.get_mut(table).and_then(|t| t.get_mut(symbol)) {
                    *count += 1;
                }
                if let Some(total) = stats.totals.get_mut(table) {
                    *total += 1.0;
                }
            }
        }
        stats
    }

    /// The symbol of `rank` on `side`, and whether its low bits follow raw.
    fn symbol(&self, side: usize, rank: u32) -> (usize, bool) {
        match self.index.get(side).and_then(|index| index.get(&rank)) {
            Some(&symbol) => (symbol, false),
            None => {
                let frequent = self.sides.get(side).map_or(0, |s| s.frequent.len());
                (frequent + (rank >> LOW_BITS) as usize, true)
            }
        }
    }

    /// What coding a split costs, in bits.
    fn cost(&self, &(left, right, last): &(u32, u32, u8)) -> f64 {
        [(left, 0, 0), (right, table_of(Some(last)), 1)]
            .into_iter()
            .map(|(rank, table, side)| {
                let (symbol, bucket) = self.symbol(side, rank);
                let count = self.counts.get(table).and_then(|t| t.get(symbol)).copied();
                let total = self.totals.get(table).copied().unwrap_or(0.0);
                let bits = (total.max(1.0) / f64::from(count.unwrap_or(0)).max(0.5)).log2();
                bits + if bucket { f64::from(LOW_BITS) } else { 0.0 }
            })
            .sum()
    }
}

/// Frequencies summing to `SCALE` (or all 0 for a table never used), each symbol with a count
/// at least 1.
// NOTE: build.rs's (and a test's); the library only decodes.
#[allow(dead_code)]
fn normalize(counts: &[u32]) -> Vec<u32> {
    let total: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    if total == 0 {
        return vec![0; counts.len()];
    }
    let mut freq: Vec<u32> = counts
        .iter()
        .map(|&c| match c {
            0 => 0,
            c => ((u64::from(c) * u64::from(SCALE) / total) as u32).max(1),
        })
        .collect();
    // Take the excess from (or give the shortfall to) the largest frequencies, where it costs
    // least.
    let mut order: Vec<(u32, usize)> = freq.iter().copied().zip(0..).collect();
    order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut sum: u32 = freq.iter().sum();
    // Each round moves each symbol by at most 1; the nonzero symbols are far fewer than SCALE.
    while sum != SCALE {
        for &(_, symbol) in &order {
            let Some(f) = freq.get_mut(symbol) else {
                continue;
            };
            if sum > SCALE && *f > 1 {
                *f -= 1;
                sum -= 1;
            } else if sum < SCALE && *f > 0 {
                *f += 1;
                sum += 1;
            }
            if sum == SCALE {
                break;
            }
        }
    }
    freq
}

/// The ranks of the tokens of three bytes or more, in the lexicographic order of their bytes:
/// a counting sort by their first two bytes, then each of those runs sorted by the next five
/// bytes (with the rank below them in one `u64`: the same sort as the one- and two-byte tokens'),
/// then each run of tokens that share their first seven bytes in place (runs of spaces,
/// dashes: few, and short). A comparison sort of the byte strings took twice as long, most of
/// it in `memcmp`.
fn lexicographic<'t>(token: &impl Fn(usize) -> &'t [u8], n: u32) -> Vec<u32> {
    let head = |t: &[u8]| match t {
        [a, b, ..] => usize::from(u16::from_be_bytes([*a, *b])),
        _ => 0,
    };
    // The next five bytes (zero-padded) above the rank (under 2^24: `PAIR_BITS` is 18).
    let key = |t: &[u8], rank: u32| {
        let mut next = [0u8; 8];
        next.iter_mut()
            .skip(3)
            .zip(t.iter().skip(2))
            .for_each(|(k, b)| *k = *b);
        u64::from_be_bytes(next) << 24 | u64::from(rank)
    };
    let mut starts = vec![0usize; (1 << 16) + 1];
    for rank in 0..n as usize {
        let t = token(rank);
        if t.len() >= 3 {
            if let Some(count) = starts.get_mut(head(t) + 1) {
                *count += 1;
            }
        }
    }
    let mut at = 0;
    for start in &mut starts {
        at += *start;
        *start = at;
    }
    let mut keys = vec![0u64; at];
    let mut fill = starts.clone();
    for rank in 0..n {
        let t = token(rank as usize);
        if t.len() >= 3 {
            if let Some(next) = fill.get_mut(head(t)) {
                if let Some(slot) = keys.get_mut(*next) {
                    *slot = key(t, rank);
                }
                *next += 1;
            }
        }
    }
    let bytes_of = |key: Option<&u64>| key.map_or(&[][..], |&k| token((k & 0xFF_FFFF) as usize));
    for bounds in starts.windows(2) {
        let &[from, to] = bounds else { continue };
        let Some(run) = keys.get_mut(from..to) else {
            continue;
        };
        run.sort_unstable();
        // Tokens that share their first seven bytes, by all their bytes.
        let mut i = 1;
        while i < run.len() {
            let mut j = i;
            while j > 0
                && run.get(j - 1).map(|k| k >> 24) == run.get(j).map(|k| k >> 24)
                && bytes_of(run.get(j - 1)) > bytes_of(run.get(j))
            {
                run.swap(j - 1, j);
                j -= 1;
            }
            i += 1;
        }
    }
    keys.iter().map(|&k| (k & 0xFF_FFFF) as u32).collect()
}

/// Bytes copied at once where a part adds no more: a copy of constant length compiles to plain
/// loads and stores, while one of variable length is, in wasm, a `memory.copy` that V8 runs out
/// of line (most parts are 1-8 bytes; as in `derive.rs`).
const SHORT: usize = 16;

/// Every token's bytes, in rank order, decoded from the pairs: token `r` is
/// `bytes[ends[r]..ends[r + 1]]`. `singles` holds the one-byte tokens (rank above byte), in
/// rank order.
fn decode_tokens(
    n: usize,
    singles: &[u64],
    [left_side, right_side]: &[Alphabet; 2],
    tables: &[Table],
    code: &[u8],
    raw: &[u8],
) -> Result<(Vec<u8>, Vec<u32>), String> {
    let mut ends: Vec<u32> = Vec::with_capacity(n + 1);
    ends.push(0);
    // Written up to `len`, with room for a token and a short copy past it (o200k_base's
    // tokens are 7 bytes on average).
    let mut bytes = vec![0u8; n * 8 + MAX_TOKEN + SHORT];
    let mut len = 0usize;
    let mut decoder = Decoder::new(code, raw);
    let mut singles = singles.iter().peekable();
    let table = |t: usize| tables.get(t).ok_or("no such table");
    let left_table = table(0)?;
    for rank in 0..n {
        if let Some(&single) = singles.next_if(|&&single| single >> 8 == rank as u64) {
            if let Some(slot) = bytes.get_mut(len) {
                *slot = single as u8;
            }
            len += 1;
        } else {
            // A part's bytes: a token of lower rank's.
            let part = |part: Option<u32>| -> Result<(usize, usize), String> {
                let part =
                    part.ok_or_else(|| format!("token {rank}: a pair from an empty table"))?;
                match (ends.get(part as usize), ends.get(part as usize + 1)) {
                    (Some(&from), Some(&to)) if (part as usize) < rank => {
                        Ok((from as usize, to as usize))
                    }
                    _ => Err(format!("token {rank} joins a token of rank {part}")),
                }
            };
            let left = part(decoder.rank(left_side, left_table))?;
            let last = bytes.get(left.1.wrapping_sub(1)).copied();
            let right = part(decoder.rank(right_side, table(table_of(last))?))?;
            if left.1 - left.0 + right.1 - right.0 > MAX_TOKEN {
                return Err(format!("token {rank} is over {MAX_TOKEN} bytes"));
            }
            if len + MAX_TOKEN + SHORT > bytes.len() {
                bytes.resize(2 * bytes.len(), 0);
            }
            for (from, to) in [left, right] {
                if to - from <= SHORT && to.max(from + SHORT) <= len {
                    bytes.copy_within(from..from + SHORT, len);
                } else {
                    bytes.copy_within(from..to, len);
                }
                len += to - from;
            }
        }
        ends.push(u32::try_from(len).map_err(|_| "over 4 GiB of tokens")?);
    }
    if decoder.overran() {
        return Err("the pairs are cut short".into());
    }
    bytes.truncate(len);
    Ok((bytes, ends))
}

/// The `.tables` image of the encoding `file` (an `<enc>.pairs`) codes, checked to have the id
/// `id`; byte for byte the one build.rs writes for it.
pub(crate) fn tables(file: &[u8], id: u64) -> Result<Vec<u8>, String> {
    let read = Header::<PAIRS_PARTS>::read(file, &PAIRS_MAGIC, "a pairs file")?;
    if read.id != id {
        return Err(format!(
            "the pairs file is from another build (tables {:016x}, this build has {id:016x})",
            read.id
        ));
    }
    let [count, short, model, code, raw] = read.parts;
    let bits = read.rank_bits;
    let ranks = match count {
        &[a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
        _ => return Err("no token count".into()),
    };
    if !(1..=PAIR_BITS).contains(&bits) || ranks > 1 << bits || ranks < ROWS as u32 {
        return Err(format!("{ranks} tokens of {bits}-bit ranks"));
    }
    // The one-byte tokens' ranks, in rank order (each as its rank above its byte; this sort
    // of u64s and the one of the two-byte tokens below are one in the binary).
    let mut singles: Vec<u64> = short
        .chunks_exact(4)
        .zip(0..=u8::MAX)
        .map(|(word, byte)| {
            let word = <[u8; 4]>::try_from(word).unwrap_or_default();
            u64::from(u32::from_le_bytes(word)) << 8 | u64::from(byte)
        })
        .collect();
    singles.sort_unstable();
    if short.len() != 4 * ROWS
        || singles
            .windows(2)
            .any(|w| matches!(w, [a, b] if a >> 8 == b >> 8))
        || singles
            .last()
            .is_some_and(|&single| single >> 8 >= u64::from(ranks))
    {
        return Err("the one-byte tokens' ranks are not 256 distinct ranks".into());
    }

    let n = ranks as usize;
    let (sides, tables) = read_model(model, ranks)?;
    let (bytes, ends) = decode_tokens(n, &singles, &sides, &tables, code, raw)?;
    let token = |rank: usize| -> &[u8] {
        match (ends.get(rank), ends.get(rank + 1)) {
            (Some(&from), Some(&to)) => bytes.get(from as usize..to as usize).unwrap_or_default(),
            _ => &[],
        }
    };

    // The two-byte tokens by first byte (`.pre`), sorted by their bytes.
    // NOTE: sorted as u64 (bytes above rank), as `lexicographic` sorts: one sort in the binary.
    let mut two: Vec<u64> = (0..n)
        .filter_map(|rank| match token(rank) {
            &[a, b] => Some(u64::from(u16::from_be_bytes([a, b])) << 32 | rank as u64),
            _ => None,
        })
        .collect();
    two.sort_unstable();
    let two: Vec<([u8; 2], u32)> = two
        .iter()
        .map(|&t| (((t >> 32) as u16).to_be_bytes(), t as u32))
        .collect();
    let pre = two_byte_table(&two);

    // The tokens of three bytes or more in lexicographic order, front-coded, and their ranks.
    let long = lexicographic(&token, n as u32);
    let mut assembler = Assembler::with_capacity(long.len(), bytes.len());
    let mut ranks = Vec::with_capacity(long.len() * bits as usize / 8 + 8);
    let mut before: &[u8] = &[];
    for &rank in &long {
        // In order, as sorted, so the order check of `push` is not needed (tokens repeated by
        // a damaged stream make another image, which its id refuses).
        let token = token(rank as usize);
        assembler.push_shared(token, common_prefix(before, token))?;
        before = token;
    }
    pack_bits(long.iter().copied(), bits, &mut ranks);
    ranks.extend_from_slice(&[0; 4]);
    drop((bytes, ends));
    let (image, found) = assembler.finish(&Given {
        ranks: &ranks,
        short,
        pre: &pre,
        rank_bits: bits,
        digit_tokens: read.digit_tokens,
    })?;
    if found != id {
        return Err(format!(
            "the tables decoded from the pairs are not this build's ({found:016x}, this build has {id:016x})"
        ));
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::super::layout::PAIRS_HEADER;
    use super::*;

    fn out(name: &str) -> Vec<u8> {
        std::fs::read(format!("{}/{name}", env!("OUT_DIR"))).unwrap()
    }

    /// The image decoded from the pairs built in is byte for byte the `o200k.tables` build.rs
    /// wrote.
    #[cfg(feature = "o200k")]
    #[test]
    fn the_decoded_tables_are_the_built_ones() {
        let image = tables(
            &out("o200k.pairs"),
            super::super::generated::O200K_TABLES_ID,
        )
        .unwrap();
        assert!(image == out("o200k.tables"));
    }

    /// cl100k_base (built in as a delta of o200k_base's where both are, and as pairs where it
    /// is alone): coded from tiktoken-rs's vocabulary, it decodes to its `.tables` image.
    #[cfg(feature = "cl100k")]
    #[test]
    fn cl100k_base_round_trips() {
        use super::super::layout::{PARTS, TABLES_MAGIC};
        let built = out("cl100k.tables");
        let header = Header::<PARTS>::read(&built, &TABLES_MAGIC, "a tables file").unwrap();
        let bpe = tiktoken_rs::cl100k_base().unwrap();
        let tokens: Vec<Vec<u8>> = (0..100_256)
            .map(|r| bpe.decode_bytes(&[r]).unwrap())
            .collect();
        let by_rank: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
        let short = header.parts[3];
        let coded = file(
            &by_rank,
            short,
            header.rank_bits,
            header.digit_tokens,
            header.id,
        )
        .unwrap();
        assert!(coded.len() < built.len() / 2, "{} bytes", coded.len());
        assert!(tables(&coded, header.id).unwrap() == built);
        // A token that joins no two earlier tokens cannot be coded.
        let mut odd = by_rank.clone();
        odd[300] = b"\xff\xfe\xfd\xfc";
        assert!(encode(&odd).unwrap_err().contains("token 300"));
    }

    /// A pairs file for other tables, cut short, or with any byte changed is refused with a
    /// reason or decodes to the very tables it codes: never a panic or other tables.
    #[cfg(feature = "o200k")]
    #[test]
    fn a_damaged_pairs_file_is_refused() {
        let id = super::super::generated::O200K_TABLES_ID;
        let good = out("o200k.pairs");
        let built = out("o200k.tables");
        assert!(tables(&good[..PAIRS_HEADER - 1], id)
            .unwrap_err()
            .contains("header"));
        assert!(tables(&good[..good.len() - 1], id)
            .unwrap_err()
            .contains("too short"));
        assert!(tables(&good, id ^ 1).unwrap_err().contains("another build"));
        let mut renamed = good.clone();
        renamed[0] ^= 1;
        assert!(tables(&renamed, id)
            .unwrap_err()
            .contains("not a pairs file"));
        // The stream without its last bytes (the length fields say so too): cut short.
        let mut cut = good.clone();
        let code_len = u32::from_le_bytes(good[24 + 12..28 + 12].try_into().unwrap());
        cut[24 + 12..28 + 12].copy_from_slice(&(code_len / 2).to_le_bytes());
        let raw_at = PAIRS_HEADER
            + good[24..24 + 12]
                .chunks(4)
                .map(|w| u32::from_le_bytes(w.try_into().unwrap()) as usize)
                .sum::<usize>()
            + code_len as usize;
        cut.drain(raw_at - (code_len - code_len / 2) as usize..raw_at);
        assert!(tables(&cut, id).is_err());
        let mut at = PAIRS_HEADER;
        let mut refused = 0;
        for i in 0..PAIRS_PARTS {
            let len = u32::from_le_bytes(good[24 + 4 * i..28 + 4 * i].try_into().unwrap()) as usize;
            for offset in [0, 1, len / 3, len / 2, len - 2, len - 1] {
                let mut changed = good.clone();
                changed[at + offset.min(len - 1)] ^= 0x24;
                match tables(&changed, id) {
                    Ok(image) => assert!(image == built, "part {i} byte {offset}: other tables"),
                    Err(_) => refused += 1,
                }
            }
            at += len;
        }
        assert!(refused >= 4 * PAIRS_PARTS, "{refused} refused");
    }
}
