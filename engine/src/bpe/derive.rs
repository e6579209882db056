//! cl100k_base's tables rebuilt from o200k_base's and a delta, in a build with both built in
//! (the main entry's browser and workerd build; `build.rs` sets `cl100k_delta`).
//!
//! Why: 85,033 of cl100k_base's 100,256 tokens are o200k_base's too. Built in whole, its
//! tables cost the main entry 419 KB (gzip); as a delta (a bit per o200k_base token, its
//! 15,022 other tokens, its ranks, one- and two-byte tokens) 292 KB. The
//! price is paid on cl100k_base's first use in that build only: one pass over o200k_base's
//! front-coded tokens (read in place, not decoded into tables) into an owned copy of the image
//! (686 KB), which is checked against the id `build.rs` computed for the real file. Measured:
//! 3.7 ms native; the first cl100k_base count of the browser build in Node 20, 1.7 -> 13.0 ms
//! (median; bench/README.md, "Entry sizes", cut 3): it runs once, in V8's baseline tier.

use super::assemble::{common_prefix, Assembler, FrontCoded, Given};
use super::layout::Header;
use super::layout::{DELTA_MAGIC, DELTA_PARTS};
use super::vocab::Source;

/// Bytes copied at once where a token adds no more: a copy of constant length compiles to
/// plain loads and stores, while one of variable length is, in wasm, a `memory.copy` that V8
/// runs out of line (most tokens add 1-3 bytes).
const SHORT: usize = 16;

/// The `.tables` image of the encoding `delta` describes, from `base` (o200k_base's tables,
/// of id `base_id`), checked to have the id `id`; kept for the life of the program.
pub(crate) fn derive(
    base: &Source,
    base_id: u64,
    delta: &[u8],
    id: u64,
) -> Result<&'static [u8], String> {
    let read = Header::<DELTA_PARTS>::read(delta, &DELTA_MAGIC, "a tables delta")?;
    if read.id != base_id {
        return Err("the delta is for other base tables".into());
    }
    let [member, xhead, xtok, ranks, short, pre] = read.parts;
    let is_member = |i: usize| member.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1);

    // Both lists are in lexicographic order and share no token: merge them, knowing for each
    // of the next token of each list the length it shares with the token pushed last (`last`):
    // `theirs_shared` and `own_shared`. Two tokens after `last` compare at the shorter of those
    // lengths without being looked at, unless the lengths are equal (for a < b < c, the common
    // prefix of a and c is the shorter of a's and b's and b's and c's; so it is for o200k_base's
    // tokens skipped, and for the delta's tokens, front-coded among themselves).
    let mut assembler = Assembler::with_capacity(
        8 * member.len() + xhead.len() / 2,
        base.tokens.len() + xtok.len(),
    );
    let mut own = FrontCoded::new(xhead, xtok);
    let mut have_own = own.advance()?;
    let mut theirs = [0u8; 256 + SHORT];
    let (mut pos, mut theirs_shared, mut own_shared) = (0usize, 0usize, 0usize);
    for (i, pair) in base.heads.chunks_exact(2).enumerate() {
        let &[keep, add] = pair else { break };
        let (keep, add) = (usize::from(keep), usize::from(add));
        let bytes = base
            .tokens
            .get(pos..pos + add)
            .ok_or("the base tables' front coding runs past its bytes")?;
        match (
            base.tokens.get(pos..pos + SHORT),
            theirs.get_mut(keep..keep + SHORT),
        ) {
            (Some(block), Some(dst)) if add <= SHORT => dst.copy_from_slice(block),
            _ => theirs
                .get_mut(keep..keep + add)
                .ok_or("the base tables' front coding is inconsistent")?
                .copy_from_slice(bytes),
        }
        pos += add;
        theirs_shared = theirs_shared.min(keep);
        if !is_member(i) {
            continue;
        }
        let token = theirs.get(..keep + add).unwrap_or_default();
        // Push the delta's tokens before it.
        while have_own {
            let x = own.current();
            let own_first = match own_shared.cmp(&theirs_shared) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => {
                    let from = own_shared;
                    let same = from
                        + x.get(from..)
                            .zip(token.get(from..))
                            .map_or(0, |(x, t)| common_prefix(x, t));
                    let first = match (x.get(same), token.get(same)) {
                        (Some(a), Some(b)) => a < b,
                        (None, _) => true,
                        (_, None) => false,
                    };
                    // The length the later of the two shares with the earlier.
                    if first {
                        theirs_shared = same;
                    } else {
                        own_shared = same;
                    }
                    first
                }
            };
            if !own_first {
                break;
            }
            assembler.push_shared(x, own_shared)?;
            have_own = own.advance()?;
            own_shared = own.shared();
        }
        assembler.push_shared(token, theirs_shared)?;
        theirs_shared = token.len();
    }
    while have_own {
        assembler.push_shared(own.current(), own_shared)?;
        have_own = own.advance()?;
        own_shared = own.shared();
    }
    let (image, found) = assembler.finish(&Given {
        ranks,
        short,
        pre,
        rank_bits: read.rank_bits,
        digit_tokens: read.digit_tokens,
    })?;
    if found != id {
        return Err(format!(
            "the tables rebuilt from the delta are not this build's ({found:016x}, this build has {id:016x})"
        ));
    }
    Ok(Box::leak(image.into_boxed_slice()))
}

#[cfg(test)]
mod tests {
    use super::super::generated::{CL100K_TABLES_ID, O200K_TABLES_ID};
    use super::super::layout::DELTA_HEADER;
    use super::super::source;
    use super::*;
    use crate::Encoding;

    fn delta() -> Vec<u8> {
        std::fs::read(concat!(env!("OUT_DIR"), "/cl100k.delta")).unwrap()
    }

    /// The image rebuilt from the delta is byte for byte the `cl100k.tables` build.rs wrote.
    #[test]
    fn the_derived_tables_are_the_built_ones() {
        let base = source(Encoding::O200kBase).unwrap();
        let derived = derive(&base, O200K_TABLES_ID, &delta(), CL100K_TABLES_ID).unwrap();
        let built = std::fs::read(concat!(env!("OUT_DIR"), "/cl100k.tables")).unwrap();
        assert_eq!(derived.len(), built.len());
        assert!(derived == built.as_slice());
    }

    /// A delta for other tables, cut short, or with any part changed is refused with a reason,
    /// never a panic or wrong tables.
    #[test]
    fn a_damaged_delta_is_refused() {
        let base = source(Encoding::O200kBase).unwrap();
        let good = delta();
        let refused =
            |delta: &[u8]| derive(&base, O200K_TABLES_ID, delta, CL100K_TABLES_ID).unwrap_err();
        assert!(refused(&good[..DELTA_HEADER - 1]).contains("header"));
        assert!(refused(&good[..good.len() - 1]).contains("too short"));
        assert!(derive(&base, O200K_TABLES_ID ^ 1, &good, CL100K_TABLES_ID)
            .unwrap_err()
            .contains("other base"));
        let mut renamed = good.clone();
        renamed[0] ^= 1;
        assert!(refused(&renamed).contains("not a tables delta"));
        // A byte changed in each part: the member bits, the other tokens' lengths and bytes,
        // the ranks, the one- and two-byte tokens.
        let mut at = DELTA_HEADER;
        for i in 0..DELTA_PARTS {
            let len = u32::from_le_bytes(good[24 + 4 * i..28 + 4 * i].try_into().unwrap()) as usize;
            for offset in [0, len / 2, len - 1] {
                let mut changed = good.clone();
                changed[at + offset] ^= 0x11;
                let _reason = refused(&changed);
            }
            at += len;
        }
    }
}
