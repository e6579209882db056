// The layout of the character-class table, shared by build.rs (which writes the table) and
// src/bpe/class.rs (which reads it): one definition, so the two cannot drift apart.

/// `\p{L}`.
pub(crate) const LETTER: u8 = 1;
/// `\p{N}`.
pub(crate) const NUMBER: u8 = 2;
/// `\s` (the White_Space property).
pub(crate) const SPACE: u8 = 4;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]` (o200k).
pub(crate) const UPPERISH: u8 = 8;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]` (o200k).
pub(crate) const LOWERISH: u8 = 16;

/// Code points per block of the two-level table, as a shift.
pub(crate) const BLOCK_SHIFT: u32 = 7;
