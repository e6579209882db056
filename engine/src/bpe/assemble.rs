// Assembles an encoding's `<enc>.tables` image (the layout is `layout.rs`) from its tokens.
// Shared by build.rs, which writes each encoding's tables, and `derive.rs`, which rebuilds
// cl100k_base's at run time from o200k_base's and a delta: one definition, so the image
// derived at run time is byte for byte the one build.rs writes (and its id says so).
//
// The caller gives the tokens of three bytes or more in lexicographic order ([`Assembler::push`])
// and the tables that do not depend on that order (the rank column, the one- and two-byte
// tokens); the assembler front-codes the tokens and computes the groups' directory.

use super::layout::{
    tables_id, CHECKPOINT, GROUP_RECORD, PARTS, ROWS, SPLIT, SPLIT_FROM, TABLES_HEADER,
    TABLES_MAGIC,
};

/// The length `a` and `b` share at their start.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Appends `values` to `out`, `bits` each, least significant bit first (the `.rank` column's
/// layout, and `<enc>.pairs`'s raw bits), the last byte zero-padded.
// NOTE: build.rs's and `pairs.rs`'s (a build with the cl100k delta alone does not pack).
#[allow(dead_code)]
pub(crate) fn pack_bits(values: impl IntoIterator<Item = u32>, bits: u32, out: &mut Vec<u8>) {
    let (mut held, mut held_bits) = (0u64, 0u32);
    for value in values {
        held |= u64::from(value) << held_bits;
        held_bits += bits;
        while held_bits >= 8 {
            out.push(held as u8);
            held >>= 8;
            held_bits -= 8;
        }
    }
    if held_bits > 0 {
        out.push(held as u8);
    }
}

/// The two-byte tokens' table (`.pre`, layout.rs) of `tokens`, each its bytes and its rank,
/// sorted by bytes: where each first byte's tokens start, then their second bytes, then their
/// ranks.
// NOTE: build.rs's and `pairs.rs`'s (a build with the cl100k delta alone copies `.pre`).
#[allow(dead_code)]
pub(crate) fn two_byte_table(tokens: &[([u8; 2], u32)]) -> Vec<u8> {
    let mut starts = [0u32; ROWS + 1];
    for ([first, _], _) in tokens {
        if let Some(next) = starts.get_mut(usize::from(*first) + 1) {
            *next += 1;
        }
    }
    for row in 1..starts.len() {
        let before = starts.get(row - 1).copied().unwrap_or(0);
        if let Some(start) = starts.get_mut(row) {
            *start += before;
        }
    }
    let mut pre = Vec::with_capacity(4 * (ROWS + 1) + 5 * tokens.len());
    pre.extend(starts.iter().flat_map(|start| start.to_le_bytes()));
    pre.extend(tokens.iter().map(|([_, second], _)| *second));
    pre.extend(tokens.iter().flat_map(|(_, rank)| rank.to_le_bytes()));
    pre
}

/// Tokens of three bytes or more, front-coded (`.head` and `.tok`), and their groups, as they
/// are pushed.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    head: Vec<u8>,
    tok: Vec<u8>,
    prev: Vec<u8>,
    /// The tokens of the current two-byte prefix so far: each one's third byte and the bytes it
    /// adds to `.tok`. Its groups are known once the prefix ends.
    pending: Vec<(u8, u8)>,
    /// The groups so far (a prefix's tokens, or a split prefix's tokens of one third byte), in
    /// the tokens' order: prefix, third byte, count and bytes in `.tok`.
    groups: Vec<([u8; 2], Option<u8>, u32, u32)>,
}
/// The tables of an image that the assembler takes as they are.
#[derive(Debug)]
pub(crate) struct Given<'a> {
    /// `.rank`: the ranks of the pushed tokens, in their order, packed in `rank_bits`.
    pub(crate) ranks: &'a [u8],
    /// `.short`: the ranks of the 256 bytes.
    pub(crate) short: &'a [u8],
    /// `.pre`: the two-byte tokens.
    pub(crate) pre: &'a [u8],
    pub(crate) rank_bits: u32,
    pub(crate) digit_tokens: bool,
}

/// Reads front-coded tokens (`.head` and `.tok`, or a delta's `.xhead` and `.xtok`) one at a
/// time into a buffer of its own.
// NOTE: `derive.rs`'s (a build without cl100k_base's delta assembles from pairs only).
#[allow(dead_code)]
#[derive(Debug)]
pub(crate) struct FrontCoded<'a> {
    head: &'a [u8],
    tok: &'a [u8],
    /// The next token's two bytes in `head`, and its rest in `tok`.
    at: usize,
    pos: usize,
    current: Vec<u8>,
    /// The length the current token shares with the one before it.
    shared: usize,
}

#[allow(dead_code)]
impl<'a> FrontCoded<'a> {
    pub(crate) fn new(head: &'a [u8], tok: &'a [u8]) -> Self {
        FrontCoded {
            head,
            tok,
            at: 0,
            pos: 0,
            current: Vec::with_capacity(256),
            shared: 0,
        }
    }

    /// Reads the next token into [`FrontCoded::current`]: `Ok(false)` at the end, an error if
    /// the coding is inconsistent.
    pub(crate) fn advance(&mut self) -> Result<bool, String> {
        let Some(pair) = self.head.get(self.at..self.at + 2) else {
            return if self.at == self.head.len() && self.pos == self.tok.len() {
                Ok(false)
            } else {
                Err("front coding ends early".into())
            };
        };
        let (shared, rest) = match pair {
            [shared, rest] => (usize::from(*shared), usize::from(*rest)),
            _ => return Err("front coding ends early".into()),
        };
        let bytes = self
            .tok
            .get(self.pos..self.pos + rest)
            .ok_or("front coding runs past its bytes")?;
        if shared > self.current.len() || rest == 0 {
            return Err("front coding is inconsistent".into());
        }
        self.current.truncate(shared);
        self.current.extend_from_slice(bytes);
        self.shared = shared;
        self.at += 2;
        self.pos += rest;
        Ok(true)
    }

    /// The token read last.
    pub(crate) fn current(&self) -> &[u8] {
        &self.current
    }

    /// The length the token read last shares with the one before it.
    pub(crate) fn shared(&self) -> usize {
        self.shared
    }
}

impl Assembler {
    pub(crate) fn with_capacity(tokens: usize, bytes: usize) -> Self {
        Assembler {
            head: Vec::with_capacity(2 * tokens),
            tok: Vec::with_capacity(bytes),
            prev: Vec::with_capacity(256),
            pending: Vec::with_capacity(4096),
            groups: Vec::with_capacity(tokens / 16),
        }
    }

    /// Adds the next token of three bytes or more: after every token pushed before it in
    /// lexicographic order, and at most 255 bytes long.
    // NOTE: build.rs's; `derive.rs` knows each token's shared length.
    #[allow(dead_code)]
    pub(crate) fn push(&mut self, token: &[u8]) -> Result<(), String> {
        let shared = common_prefix(&self.prev, token);
        if token <= self.prev.as_slice() {
            return Err("tokens out of order".into());
        }
        self.push_shared(token, shared)
    }

    /// [`Assembler::push`] where the caller knows the length `token` shares with the token
    /// pushed before it, and that it comes after it (else the image is another, whose id
    /// differs).
    pub(crate) fn push_shared(&mut self, token: &[u8], shared: usize) -> Result<(), String> {
        let &[b0, b1, third, ..] = token else {
            return Err("a token under 3 bytes".into());
        };
        let rest = token
            .get(shared..)
            .ok_or("a shared length past the token")?;
        let (Ok(shared), Ok(added)) = (u8::try_from(shared), u8::try_from(rest.len())) else {
            return Err(format!("a token of {} bytes", token.len()));
        };
        if self.prev.get(..2) != Some(&[b0, b1][..]) {
            self.end_prefix();
        }
        self.head.push(shared);
        self.head.push(added);
        self.tok.extend_from_slice(rest);
        self.pending.push((third, added));
        self.prev.truncate(usize::from(shared));
        self.prev.extend_from_slice(rest);
        Ok(())
    }

    /// Closes the groups of the prefix of the last token pushed: one, or one per third byte
    /// if the prefix has more than `SPLIT_FROM` tokens.
    fn end_prefix(&mut self) {
        let Some(&[b0, b1]) = self.prev.first_chunk::<2>() else {
            return;
        };
        let split = self.pending.len() > SPLIT_FROM as usize;
        for &(third, added) in &self.pending {
            let third = split.then_some(third);
            match self.groups.last_mut() {
                Some((p, t, count, bytes)) if *p == [b0, b1] && *t == third => {
                    *count += 1;
                    *bytes += u32::from(added);
                }
                _ => self.groups.push(([b0, b1], third, 1, u32::from(added))),
            }
        }
        self.pending.clear();
    }

    /// The image: header, the front-coded tokens, the given tables and the groups' directory
    /// (`.grp`, `.spl`), with its id.
    pub(crate) fn finish(mut self, given: &Given<'_>) -> Result<(Vec<u8>, u64), String> {
        self.end_prefix();
        let groups = &self.groups;
        if groups.len() >= SPLIT as usize {
            return Err("too many groups for the prefix entry".into());
        }
        let mut grp = Vec::with_capacity(4 + GROUP_RECORD * groups.len());
        grp.extend_from_slice(&(groups.len() as u32).to_le_bytes());
        for (prefix, ..) in groups {
            grp.extend_from_slice(prefix);
        }
        for (_, _, count, _) in groups {
            let count = u16::try_from(*count).map_err(|_| "a group of 65536 tokens or more")?;
            grp.extend_from_slice(&count.to_le_bytes());
        }
        for (.., bytes) in groups {
            grp.extend_from_slice(&bytes.to_le_bytes());
        }
        // Every `CHECKPOINT`-th group's start in `.tok` and index, so the reader adds up at
        // most `CHECKPOINT - 1` groups to find one and nothing when it loads.
        let (mut pos, mut index) = (0u32, 0u32);
        for (gi, (_, _, count, bytes)) in groups.iter().enumerate() {
            if gi % CHECKPOINT == 0 {
                grp.extend_from_slice(&pos.to_le_bytes());
                grp.extend_from_slice(&index.to_le_bytes());
            }
            pos += bytes;
            index += count;
        }
        // The split prefixes, in order (their index in `.spl`), each with its groups by third
        // byte.
        let mut spl: Vec<u16> = Vec::new();
        let mut last_split: Option<[u8; 2]> = None;
        for (gi, (prefix, third, ..)) in groups.iter().enumerate() {
            let Some(third) = third else { continue };
            if last_split != Some(*prefix) {
                last_split = Some(*prefix);
                grp.extend_from_slice(prefix);
                spl.resize(spl.len() + ROWS, u16::MAX);
            }
            let row = spl.len() - ROWS;
            if let Some(slot) = spl.get_mut(row + usize::from(*third)) {
                *slot = gi as u16;
            }
        }
        if spl.len() / ROWS >= (SPLIT - 1) as usize {
            return Err("too many split prefixes".into());
        }
        let spl: Vec<u8> = spl.iter().flat_map(|g| g.to_le_bytes()).collect();

        let parts: [&[u8]; PARTS] = [
            &self.head,
            &self.tok,
            given.ranks,
            given.short,
            given.pre,
            &grp,
            &spl,
        ];
        let body_len: usize = parts.iter().map(|p| p.len()).sum();
        let mut image = Vec::with_capacity(TABLES_HEADER + body_len);
        image.extend_from_slice(&TABLES_MAGIC);
        image.extend_from_slice(&[0; 8]);
        image.extend_from_slice(&given.rank_bits.to_le_bytes());
        image.extend_from_slice(&u32::from(given.digit_tokens).to_le_bytes());
        for part in parts {
            let len = u32::try_from(part.len()).map_err(|_| "a table of 4 GiB or more")?;
            image.extend_from_slice(&len.to_le_bytes());
        }
        for part in parts {
            image.extend_from_slice(part);
        }
        let id = tables_id(image.get(TABLES_HEADER..).unwrap_or_default());
        if let Some(field) = image.get_mut(8..16) {
            field.copy_from_slice(&id.to_le_bytes());
        }
        Ok((image, id))
    }
}
