//! What an image or a file costs, by the provider's rule.
//!
//! Dimensions come from the part when it says them (`width`/`height` on the part, or on its
//! `image_url` or `source` object) or else from the header of inline base64 data (PNG, GIF,
//! JPEG, WebP); an image behind a URL has none, and gets the rule's documented default. Base64
//! data is never counted as text.

use serde_json::Value;

use crate::model::ImageRule;

/// An image whose size is not known, at OpenAI's high (or auto) detail: priced as 1024x1024,
/// four tiles, 765 tokens with the default tile prices.
pub const DEFAULT_IMAGE_SIDE: u32 = 1024;

/// Anthropic's ceiling: an image over about 1.15 megapixels (about 1,600 tokens) is scaled
/// down first, so no image costs more. Also the price of an Anthropic image of unknown size.
pub const AREA_MAX_TOKENS: u64 = 1_600;

/// A file, document or audio clip whose content cannot be read as text (a base64 PDF, a file
/// id, audio): a flat price, about one PDF page of text plus its page image in Anthropic's
/// accounting. A documented guess; such a count is never `exact`.
pub const DEFAULT_FILE_TOKENS: u64 = 1_500;

/// Base64 characters read to find an image's size (JPEG headers may sit behind EXIF data).
const SNIFF_CHARS: usize = 96 * 1024;

/// The tokens of an image under `rule`, and whether that is an estimate (no known size).
pub fn image_tokens(rule: ImageRule, part: &Value) -> (u64, bool) {
    let detail = part
        .get("image_url")
        .and_then(|u| u.get("detail"))
        .or_else(|| part.get("detail"))
        .and_then(Value::as_str);
    let size = dimensions(part);
    let estimated = size.is_none();
    let (w, h) = size.unwrap_or((DEFAULT_IMAGE_SIDE, DEFAULT_IMAGE_SIDE));
    match rule {
        ImageRule::Tiles { base, .. } if detail == Some("low") => (u64::from(base), false),
        ImageRule::Tiles { base, per_tile } => (tile_tokens(w, h, base, per_tile), estimated),
        ImageRule::Patches {
            size: side,
            max_patches,
            max_side,
            multiplier,
        } => {
            // An image of unknown size may be as large as the budget allows.
            let patches = match size {
                Some((w, h)) => patch_count(w, h, side, max_patches, max_side),
                None => u64::from(max_patches),
            };
            (multiplier.apply(patches), estimated)
        }
        ImageRule::Crops { per_tile } => (crop_tokens(w, h, per_tile), estimated),
        ImageRule::Area { divisor, max_side } => match size {
            Some((w, h)) => (area_tokens(w, h, divisor, max_side), false),
            None => (AREA_MAX_TOKENS, true),
        },
        ImageRule::Flat { tokens } => (u64::from(tokens), false),
    }
}

/// OpenAI's tile rule at high detail: fit in 2048x2048, scale the shortest side down to 768,
/// then `base` plus `per_tile` for every 512x512 tile.
///
/// ```
/// use context_keeper::counting::tile_tokens;
/// assert_eq!(tile_tokens(1024, 1024, 85, 170), 765);
/// assert_eq!(tile_tokens(2048, 4096, 85, 170), 1105);
/// ```
pub fn tile_tokens(width: u32, height: u32, base: u32, per_tile: u32) -> u64 {
    let (mut w, mut h) = fit_long_side(width, height, 2048.0);
    let shortest = w.min(h);
    if shortest > 768.0 {
        w = w * 768.0 / shortest;
        h = h * 768.0 / shortest;
    }
    // NOTE: `as` from f64 saturates; the values here are at most 2048 / 512.
    let tiles = (w / 512.0).ceil() as u64 * (h / 512.0).ceil() as u64;
    u64::from(base) + u64::from(per_tile) * tiles
}

/// The image's sides (each at least 1) scaled down, aspect kept, so that the longer is at
/// most `max_side`.
fn fit_long_side(width: u32, height: u32, max_side: f64) -> (f64, f64) {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let longest = w.max(h);
    if longest > max_side {
        (w * max_side / longest, h * max_side / longest)
    } else {
        (w, h)
    }
}

/// How many `size` x `size` patches cover an image, after fitting its long side in
/// `max_side` and shrinking it (aspect kept) until at most `max_patches` cover it. The shrink
/// follows OpenAI's published steps, which also reproduce Anthropic's examples: scale to the
/// budget's area, then down again until the limiting side is a whole number of patches.
///
/// ```
/// use context_keeper::counting::patch_count;
/// assert_eq!(patch_count(1024, 1024, 32, 1536, None), 1024);
/// assert_eq!(patch_count(1800, 2400, 32, 1536, None), 1452);
/// assert_eq!(patch_count(1000, 1000, 28, 1568, Some(1568)), 1296);
/// assert_eq!(patch_count(1928, 1928, 28, 1568, Some(1568)), 1521);
/// ```
pub fn patch_count(
    width: u32,
    height: u32,
    size: u32,
    max_patches: u32,
    max_side: Option<u32>,
) -> u64 {
    let side = f64::from(size.max(1));
    let budget = f64::from(max_patches.max(1));
    let max_side = max_side.filter(|&m| m > 0).map_or(f64::INFINITY, f64::from);
    let (mut w, mut h) = fit_long_side(width, height, max_side);
    // A patch count along one side: rounded up, less a hair of float error (33.000000001 is
    // 33 patches, not 34), and at least one.
    let across = |pixels: f64| (pixels / side - 1e-9).ceil().max(1.0);
    if across(w) * across(h) > budget {
        let mut scale = (side * side * budget / (w * h)).sqrt();
        let (cols, rows) = (w * scale / side, h * scale / side);
        let fit = |x: f64| x.floor().max(1.0) / x;
        scale *= fit(cols).min(fit(rows));
        w *= scale;
        h *= scale;
    }
    // NOTE: `as` from f64 saturates; both factors are at most `max_patches` here.
    (across(w) * across(h)).min(budget) as u64
}

/// Gemini's crops: an image within 384x384 is one crop; else crops of its shortest side / 1.5,
/// kept within 256..=768 pixels, cover it, each `per_tile` tokens.
///
/// ```
/// use context_keeper::counting::crop_tokens;
/// assert_eq!(crop_tokens(300, 200, 258), 258);
/// assert_eq!(crop_tokens(1024, 1024, 258), 4 * 258);
/// assert_eq!(crop_tokens(3000, 1500, 258), 4 * 2 * 258);
/// ```
pub fn crop_tokens(width: u32, height: u32, per_tile: u32) -> u64 {
    if width <= 384 && height <= 384 {
        return u64::from(per_tile);
    }
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let crop = (w.min(h) / 1.5).clamp(256.0, 768.0);
    // NOTE: `as` from f64 saturates; the factors are at most 2^32 / 256.
    let crops = (w / crop).ceil() as u64 * (h / crop).ceil() as u64;
    u64::from(per_tile) * crops
}

/// Anthropic's former area rule: fit the long side in `max_side`, then width x height /
/// `divisor`, rounded up, at least 1 and at most [`AREA_MAX_TOKENS`].
///
/// ```
/// use context_keeper::counting::area_tokens;
/// assert_eq!(area_tokens(1000, 1000, 750, 1568), 1334);
/// assert_eq!(area_tokens(1092, 1092, 750, 1568), 1590);
/// ```
pub fn area_tokens(width: u32, height: u32, divisor: u32, max_side: u32) -> u64 {
    let (w, h) = fit_long_side(width, height, f64::from(max_side.max(1)));
    // NOTE: the provider resizes to whole pixels (a side kept whole stays as it was).
    let (w, h) = (w.round().max(1.0), h.round().max(1.0));
    let tokens = (w * h / f64::from(divisor.max(1))).ceil() as u64;
    tokens.clamp(1, AREA_MAX_TOKENS)
}

/// The image's width and height, when the part says them or its inline data shows them.
fn dimensions(part: &Value) -> Option<(u32, u32)> {
    let holders = [
        Some(part),
        part.get("image_url"),
        part.get("source"),
        part.get("file"),
    ];
    for holder in holders.into_iter().flatten() {
        let w = holder.get("width").and_then(Value::as_u64);
        let h = holder.get("height").and_then(Value::as_u64);
        if let (Some(w), Some(h)) = (w, h) {
            let w = u32::try_from(w).unwrap_or(u32::MAX);
            let h = u32::try_from(h).unwrap_or(u32::MAX);
            // A stated 0 is no size: the image gets the rule's default, not a 0x0 price.
            return (w > 0 && h > 0).then_some((w, h));
        }
    }
    sniff_size(inline_data(part)?)
}

/// The base64 payload of an inline image, in any of the three formats.
pub(crate) fn inline_data(part: &Value) -> Option<&str> {
    let candidates = [
        part.get("image_url").and_then(|u| u.get("url")),
        part.get("source")
            .filter(|s| s.get("type").and_then(Value::as_str) == Some("base64"))
            .and_then(|s| s.get("data")),
        part.get("image"),
        part.get("data"),
        part.get("file").and_then(|f| f.get("file_data")),
        part.get("url"), // NOTE: an AI SDK UIMessage file part.
    ];
    let text = candidates.into_iter().flatten().find_map(Value::as_str)?;
    if let Some(rest) = text.strip_prefix("data:") {
        let (meta, data) = rest.split_once(',')?;
        return meta.ends_with(";base64").then_some(data);
    }
    if text.starts_with("http://") || text.starts_with("https://") {
        return None;
    }
    Some(text)
}

/// Width and height from the first bytes of a PNG, GIF, JPEG or WebP file in base64; none for
/// a header that says 0 for either (damaged or cut data): such an image gets the rule's default,
/// not the price of a 0x0 image.
pub(crate) fn sniff_size(base64: &str) -> Option<(u32, u32)> {
    header_size(&decode_base64_prefix(base64, SNIFF_CHARS)).filter(|&(w, h)| w > 0 && h > 0)
}

/// Width and height as the header in `bytes` states them.
fn header_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let be16 = |at: usize| -> Option<u32> {
        Some(u32::from(*bytes.get(at)?) << 8 | u32::from(*bytes.get(at + 1)?))
    };
    let le16 = |at: usize| -> Option<u32> {
        Some(u32::from(*bytes.get(at)?) | u32::from(*bytes.get(at + 1)?) << 8)
    };
    let le24 =
        |at: usize| -> Option<u32> { Some(le16(at)? | u32::from(*bytes.get(at + 2)?) << 16) };
    let head = |at: usize, sig: &[u8]| bytes.get(at..at + sig.len()) == Some(sig);
    // The first chunk of a PNG is its IHDR: length, "IHDR", width, height.
    if head(0, b"\x89PNG\r\n\x1a\n") && head(12, b"IHDR") {
        let w = be16(16)? << 16 | be16(18)?;
        let h = be16(20)? << 16 | be16(22)?;
        return Some((w, h));
    }
    if head(0, b"GIF8") {
        return Some((le16(6)?, le16(8)?));
    }
    if head(0, b"RIFF") && head(8, b"WEBP") {
        if head(12, b"VP8X") {
            return Some((le24(24)? + 1, le24(27)? + 1));
        }
        if head(12, b"VP8 ") {
            return Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff));
        }
        if head(12, b"VP8L") {
            let bits = le16(21)? | le16(23)? << 16;
            return Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1));
        }
        return None;
    }
    if head(0, b"\xff\xd8") {
        let mut at = 2;
        while bytes.get(at) == Some(&0xff) {
            let marker = *bytes.get(at + 1)?;
            match marker {
                0xff => at += 1,
                0x01 | 0xd0..=0xd9 => at += 2,
                0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                    return Some((be16(at + 7)?, be16(at + 5)?));
                }
                _ => at += 2 + usize::try_from(be16(at + 2)?).ok()?,
            }
        }
    }
    None
}

/// Decodes at most `max_chars` characters of standard or URL-safe base64, stopping at the first
/// character of neither alphabet.
fn decode_base64_prefix(text: &str, max_chars: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(max_chars.min(text.len()) / 4 * 3 + 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in text.bytes().take(max_chars) {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'\n' | b'\r' | b' ' => continue,
            _ => break,
        };
        acc = (acc << 6 | u32::from(v)) & 0x00ff_ffff;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    #[test]
    fn tile_math_matches_openai_examples() {
        assert_eq!(tile_tokens(1024, 1024, 85, 170), 765);
        assert_eq!(tile_tokens(2048, 4096, 85, 170), 1105);
        assert_eq!(tile_tokens(512, 512, 85, 170), 255);
        assert_eq!(tile_tokens(1, 1, 85, 170), 255);
        let tiles = ImageRule::Tiles {
            base: 85,
            per_tile: 170,
        };
        let low =
            json!({"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}});
        assert_eq!(image_tokens(tiles, &low), (85, false));
        let unknown = json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}});
        assert_eq!(image_tokens(tiles, &unknown), (765, true));
        let sized = json!({"type": "image_url", "image_url": {"url": "https://x/y.png", "width": 2048, "height": 4096}});
        assert_eq!(image_tokens(tiles, &sized), (1105, false));
    }

    #[test]
    fn area_math_matches_anthropic_examples() {
        assert_eq!(area_tokens(1000, 1000, 750, 1568), 1334);
        assert_eq!(area_tokens(200, 200, 750, 1568), 54);
        assert_eq!(area_tokens(8000, 8000, 750, 1568), AREA_MAX_TOKENS);
        let area = ImageRule::Area {
            divisor: 750,
            max_side: 1568,
        };
        let url = json!({"type": "image", "source": {"type": "url", "url": "https://x/y.jpg"}});
        assert_eq!(image_tokens(area, &url), (AREA_MAX_TOKENS, true));
        let png = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}});
        assert_eq!(image_tokens(area, &png), (1, false));
    }

    #[test]
    fn sizes_are_read_from_image_headers() {
        assert_eq!(sniff_size(PNG_1X1), Some((1, 1)));
        // GIF89a, 300 x 200.
        let gif = [b'G', b'I', b'F', b'8', b'9', b'a', 44, 1, 200, 0, 0, 0];
        assert_eq!(sniff_size(&encode(&gif)), Some((300, 200)));
        // JPEG: SOI, an APP0 segment, then SOF0 with height 480 and width 640.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0];
        jpeg.extend([0xff, 0xc0, 0, 11, 8, 1, 0xe0, 2, 0x80, 3]);
        assert_eq!(sniff_size(&encode(&jpeg)), Some((640, 480)));
        let url = json!({"image_url": {"url": format!("data:image/png;base64,{PNG_1X1}")}});
        assert_eq!(dimensions(&url), Some((1, 1)));
        assert_eq!(sniff_size("not an image"), None);
        assert_eq!(sniff_size(""), None);
        assert_eq!(sniff_size("/9j/"), None);
    }

    #[test]
    fn damaged_headers_get_the_default() {
        // A PNG signature followed by zeros: no IHDR chunk, so no size.
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend([0; 24]);
        assert_eq!(sniff_size(&encode(&png)), None);
        // An IHDR that says 0 x 0, a GIF of 0 x 5, a JPEG frame of width 0.
        let mut zero = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        zero.extend([0; 8]);
        assert_eq!(sniff_size(&encode(&zero)), None);
        assert_eq!(sniff_size(&encode(b"GIF89a\0\0\x05\0")), None);
        let jpeg = [0xff, 0xd8, 0xff, 0xc0, 0, 11, 8, 0, 10, 0, 0];
        assert_eq!(sniff_size(&encode(&jpeg)), None);
        let area = ImageRule::Area {
            divisor: 750,
            max_side: 1568,
        };
        let part = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encode(&png)}});
        assert_eq!(image_tokens(area, &part), (AREA_MAX_TOKENS, true));
        let tiles = ImageRule::Tiles {
            base: 85,
            per_tile: 170,
        };
        let url = json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", encode(&zero))}});
        assert_eq!(image_tokens(tiles, &url), (765, true));
    }

    #[test]
    fn patches_match_the_published_examples() {
        // OpenAI's guide: 1024 x 1024 is 1,024 patches; 1800 x 2400 shrinks to 33 x 44.
        assert_eq!(patch_count(1024, 1024, 32, 1536, None), 1024);
        assert_eq!(patch_count(1800, 2400, 32, 1536, None), 1452);
        // Anthropic's: 1000 x 1000 is 36 x 36; 1928 x 1928 is 39 x 39 at the standard tier and
        // 69 x 69 at high resolution; 1568 x 728 is 56 x 26.
        assert_eq!(patch_count(1000, 1000, 28, 1568, Some(1568)), 1296);
        assert_eq!(patch_count(1928, 1928, 28, 1568, Some(1568)), 1521);
        assert_eq!(patch_count(1928, 1928, 28, 4784, Some(2576)), 4761);
        assert_eq!(patch_count(1568, 728, 28, 1568, Some(1568)), 1456);
        // Slivers cost a patch a side, never 0; the budget holds at any size.
        assert_eq!(patch_count(1, 49_152, 32, 1536, None), 1536);
        assert_eq!(patch_count(10_000, 1, 28, 1568, Some(1568)), 56);
        assert_eq!(patch_count(u32::MAX, u32::MAX, 32, 1536, None), 1521);
        let rule = ImageRule::Patches {
            size: 32,
            max_patches: 1536,
            max_side: None,
            multiplier: crate::model::Multiplier(162),
        };
        let url = json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}});
        assert_eq!(image_tokens(rule, &url), (2489, true));
    }

    // NOTE: proptest is a host-only dev-dependency.
    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn patches_stay_within_the_budget(
            w in 0u32..=u32::MAX,
            h in 0u32..=u32::MAX,
            size in 1u32..64,
            budget in 1u32..10_000,
            max_side in proptest::option::of(1u32..5_000),
        ) {
            let patches = patch_count(w, h, size, budget, max_side);
            proptest::prop_assert!((1..=u64::from(budget)).contains(&patches));
            let crops = crop_tokens(w, h, 258);
            proptest::prop_assert!(crops >= 258 && crops % 258 == 0);
            proptest::prop_assert!((1..=AREA_MAX_TOKENS).contains(&area_tokens(w, h, 750, 1568)));
        }
    }

    fn encode(bytes: &[u8]) -> String {
        const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
            for i in 0..=chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    }
}
