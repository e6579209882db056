//! The memo of per-message counts, keyed by a hash of what each count depends on.
//!
//! Re-counting a long conversation after one message was appended tokenizes only the new
//! message: every other one is found here. The key hashes the counting rules (encoding,
//! framing, image rule) and the message itself (its format, role, fields and every part's
//! JSON, serialized into one reused buffer), and carries the number of bytes hashed.
//!
//! The hash is XXH3-64 (seed 0, crate `xxhash-rust`), a specified algorithm: the same key on
//! the host and in wasm, in every build and with every Rust release, so a key may be kept or
//! compared across runs (std's `DefaultHasher` promises none of that: its algorithm may change
//! with any release). It is fast next to tokenizing (which the cache saves), and with 64 bits
//! plus the length an accidental collision is out of reach. It is not a defence against
//! someone crafting colliding messages; the worst such a collision can do is a wrong count.
//!
//! What is hashed is specified too: the rules as their JSON (`Rules`' serde form); a message
//! as its format's name, `|`, its role's name, `|`, its skeleton's bytes, then for each part
//! its kind's number (one byte) and its bytes; a cache key as the rules' hash then the
//! message's hash, each 8 bytes little-endian. A JSON value's bytes are a tag and what it
//! holds, lengths and numbers 8 bytes little-endian: `n` null, `t` true, `f` false; a number
//! as `u` and a `u64`, else `i` and an `i64`, else `d` and an `f64`'s bits; `s`, the length in
//! bytes and the UTF-8 of a string; `[`, the length and each item of an array; `{`, the length
//! and each key (as a string) and value of an object, in order. Every value's bytes end where
//! its tag and lengths say, so two values with the same bytes are the same value. Strings are
//! copied as they are: a message keyed as its JSON text had every byte of every text escaped
//! one by one, the larger part of a keeper's turn when it reads a long history anew.
//!
//! The cache is bounded: two generations of at most `capacity / 2` entries each. A full
//! current generation becomes the previous one and the old previous one is dropped, so the
//! least recently used entries go first, in O(1).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use super::tally::{Rules, Tally};
use crate::messages::Message;

/// Entries a [`Counter`](super::Counter)'s memo holds at most, unless it is made with another
/// capacity.
pub const DEFAULT_CAPACITY: usize = 4_096;

/// A hash of a message and the rules it was counted with, plus the bytes hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key(u64, u64);

type Map = HashMap<Key, Tally, BuildHasherDefault<IdentityHasher>>;

/// How the cache has been used since it was made or cleared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Messages found in the cache.
    pub hits: u64,
    /// Messages counted afresh.
    pub misses: u64,
    /// Texts handed to the tokenizer.
    pub tokenizer_calls: u64,
}

/// A bounded memo of per-message counts. Using one never changes a result, only its cost.
#[derive(Debug, Default)]
pub struct CountCache {
    current: Map,
    previous: Map,
    capacity: usize,
    stats: CacheStats,
}

impl CountCache {
    /// A cache of at most `capacity` entries (at least 2).
    pub fn new(capacity: usize) -> CountCache {
        CountCache {
            capacity: capacity.max(2),
            ..CountCache::default()
        }
    }

    /// Forgets every entry and resets the statistics.
    pub fn clear(&mut self) {
        self.current = Map::default();
        self.previous = Map::default();
        self.stats = CacheStats::default();
    }

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hits, misses and tokenizer calls so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    pub(crate) fn get(&mut self, key: Key) -> Option<Tally> {
        if let Some(tally) = self.current.get(&key) {
            self.stats.hits += 1;
            return Some(*tally);
        }
        let tally = self.previous.remove(&key)?;
        self.stats.hits += 1;
        self.insert_entry(key, tally);
        Some(tally)
    }

    pub(crate) fn insert(&mut self, key: Key, tally: Tally, tokenizer_calls: u64) {
        self.stats.misses += 1;
        self.stats.tokenizer_calls += tokenizer_calls;
        self.insert_entry(key, tally);
    }

    fn insert_entry(&mut self, key: Key, tally: Tally) {
        if self.current.len() >= self.capacity / 2 {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, tally);
    }
}

pub use crate::messages::MessageKey;

/// Makes the cache keys of one count: each message is written into one reused buffer that is
/// hashed in a single pass ([`MessageKey`]), then combined with the hash of the rules.
#[derive(Debug)]
pub(crate) struct Keyer {
    rules: u64,
    buf: Vec<u8>,
}

impl Keyer {
    pub fn new(rules: &Rules) -> Keyer {
        let mut buf = Vec::new();
        // NOTE: writing into a Vec cannot fail, and serializing `Rules` (plain fields, no
        // maps) neither; the result is ignored rather than unwrapped.
        serde_json::to_writer(&mut buf, rules).unwrap_or_default();
        Keyer {
            rules: xxh3_64(&buf),
            buf,
        }
    }

    /// The key of `message`, whatever the rules.
    pub fn message_key(&mut self, message: &Message) -> MessageKey {
        key_with(&mut self.buf, message)
    }

    /// The cache key of a message counted under these rules.
    pub fn key(&self, message: MessageKey) -> Key {
        let (hash, len) = (message.digest(), message.hashed_len());
        // NOTE: a u128's 16 little-endian bytes are the rules' 8 then the message's 8.
        let bytes = (u128::from(self.rules) | (u128::from(hash) << 64)).to_le_bytes();
        Key(xxh3_64(&bytes), len)
    }
}

/// The key of `message` ([`Keyer::message_key`], for a few messages counted elsewhere).
pub(crate) fn message_key(message: &Message) -> MessageKey {
    key_with(&mut Vec::new(), message)
}

fn key_with(buf: &mut Vec<u8>, message: &Message) -> MessageKey {
    // NOTE: kept with the message, whose every edit empties it: a message the tiers left as it
    // was is not serialized again.
    if let Some(key) = message.key.get() {
        return key;
    }
    buf.clear();
    buf.extend_from_slice(message.format().name().as_bytes());
    buf.push(b'|');
    buf.extend_from_slice(message.role().name().as_bytes());
    buf.push(b'|');
    write_object(buf, &message.skeleton);
    for part in message.parts() {
        buf.push(part.kind() as u8);
        write_value(buf, part.raw());
    }
    let key = MessageKey::new(xxh3_64(buf), buf.len() as u64);
    message.key.set(key);
    key
}

/// Appends a value's bytes (see the module).
fn write_value(buf: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => buf.push(b'n'),
        Value::Bool(true) => buf.push(b't'),
        Value::Bool(false) => buf.push(b'f'),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => write_tagged(buf, b'u', u.to_le_bytes()),
            (None, Some(i)) => write_tagged(buf, b'i', i.to_le_bytes()),
            (None, None) => write_tagged(
                buf,
                b'd',
                n.as_f64().unwrap_or(f64::NAN).to_bits().to_le_bytes(),
            ),
        },
        Value::String(text) => write_str(buf, text),
        Value::Array(items) => {
            write_tagged(buf, b'[', (items.len() as u64).to_le_bytes());
            for item in items {
                write_value(buf, item);
            }
        }
        Value::Object(map) => write_object(buf, map),
    }
}

fn write_object(buf: &mut Vec<u8>, map: &serde_json::Map<String, Value>) {
    write_tagged(buf, b'{', (map.len() as u64).to_le_bytes());
    for (key, value) in map {
        write_str(buf, key);
        write_value(buf, value);
    }
}

fn write_str(buf: &mut Vec<u8>, text: &str) {
    write_tagged(buf, b's', (text.len() as u64).to_le_bytes());
    buf.extend_from_slice(text.as_bytes());
}

fn write_tagged(buf: &mut Vec<u8>, tag: u8, bytes: [u8; 8]) {
    buf.push(tag);
    buf.extend_from_slice(&bytes);
}

/// The keys are hashes already: the map uses their first word as it is.
#[derive(Debug, Default)]
pub(crate) struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }

    fn write_u32(&mut self, n: u32) {
        // NOTE: a 32-bit hash spread over 64 bits: the map's probe takes its top bits.
        self.0 ^= u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A hash for keys the core makes itself (an address, an index, an id it counted out), never a
/// value a caller chooses: multiply and rotate (rustc's "Fx"). SipHash, the standard maps'
/// default, resists keys chosen to collide, which these keys cannot be, and costs more.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeyHasher(u64);

impl KeyHasher {
    fn add(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// A map by keys the core makes itself ([`KeyHasher`]).
pub(crate) type KeyMap<K, V> = HashMap<K, V, BuildHasherDefault<KeyHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::Encoding;
    use crate::messages::{parse_messages, MessagesOptions};
    use crate::model::model_info;

    /// Different values have different bytes, however their texts and structures line up.
    #[test]
    fn values_bytes_tell_values_apart() {
        use serde_json::json;
        let values = [
            json!(null),
            json!("n"),
            json!(""),
            json!(true),
            json!(false),
            json!(1),
            json!(1.0),
            json!(-1),
            json!(u64::MAX),
            json!("1"),
            json!(["ab"]),
            json!(["a", "b"]),
            json!([["a"], "b"]),
            json!([["a", "b"]]),
            json!([]),
            json!({}),
            json!({"a": "b"}),
            json!({"ab": ""}),
            json!({"a": {"b": null}}),
            json!({"a": {}, "b": null}),
            json!({"a": "sb"}),
            json!({"as": "b"}),
            json!({"b": "a"}),
            json!("a\"b"),
            json!("a\\\"b"),
        ];
        let bytes: Vec<Vec<u8>> = values
            .iter()
            .map(|v| {
                let mut buf = Vec::new();
                write_value(&mut buf, v);
                buf
            })
            .collect();
        for (i, a) in bytes.iter().enumerate() {
            for (j, b) in bytes.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{} and {}", values[i], values[j]);
            }
        }
    }

    /// The keys are XXH3-64 of specified bytes: pinned here, so a change of algorithm, of
    /// dependency version or of what is hashed shows as a failing test, not as keys that
    /// silently stop matching ones kept from an earlier run.
    #[test]
    fn keys_are_pinned() {
        assert_eq!(
            xxh3_64(b""),
            0x2d06_8005_38d3_94c2,
            "XXH3-64 of nothing, seed 0"
        );
        let info = model_info("gpt-4o");
        let rules = Rules {
            encoding: Encoding::O200kBase,
            framing: info.framing,
            images: info.images,
        };
        let json = serde_json::to_string(&rules).unwrap();
        let mut keyer = Keyer::new(&rules);
        assert_eq!(keyer.rules, xxh3_64(json.as_bytes()), "{json}");
        let input = serde_json::json!([{"role": "user", "content": "hi"}]);
        let conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
        let message = &conv.messages()[0];
        let key = keyer.message_key(message);
        // The skeleton, `{"role": "user", "content": null}`, and its one part, the text
        // `"hi"` (kind 0), byte by byte.
        assert_eq!(
            serde_json::to_string(&message.skeleton).unwrap(),
            r#"{"role":"user","content":null}"#
        );
        assert_eq!(message.parts().len(), 1);
        assert_eq!(message.parts()[0].raw(), &serde_json::json!("hi"));
        assert_eq!(message.parts()[0].kind() as u8, 0);
        let mut bytes = b"openai|user|".to_vec();
        bytes.extend_from_slice(b"{\x02\0\0\0\0\0\0\0");
        bytes.extend_from_slice(b"s\x04\0\0\0\0\0\0\0role");
        bytes.extend_from_slice(b"s\x04\0\0\0\0\0\0\0user");
        bytes.extend_from_slice(b"s\x07\0\0\0\0\0\0\0contentn");
        bytes.extend_from_slice(b"\0s\x02\0\0\0\0\0\0\0hi");
        assert_eq!(key, MessageKey::new(xxh3_64(&bytes), bytes.len() as u64));
        let mut both = keyer.rules.to_le_bytes().to_vec();
        both.extend_from_slice(&key.digest().to_le_bytes());
        assert_eq!(keyer.key(key), Key(xxh3_64(&both), key.hashed_len()));
        // The values themselves, for one message under GPT-4o's rules.
        assert_eq!(keyer.rules, 0x4eb0_85ab_2a63_5ca1);
        assert_eq!(key, MessageKey::new(0x84c4_1e10_66a8_be6f, 76));
        assert_eq!(keyer.key(key), Key(7_379_705_793_925_438_161, 76));
    }
}
