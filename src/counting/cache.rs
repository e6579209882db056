//! The memo of per-message counts, keyed by a hash of what each count depends on.
//!
//! Re-counting a long conversation after one message was appended tokenizes only the new
//! message: every other one is found here. The key hashes the counting rules (encoding,
//! framing, image rule) and the message itself (its format, role, fields and every part's
//! JSON, serialized into one reused buffer), and carries the number of bytes hashed.
//!
//! The hash is std's SipHash-1-3 (`DefaultHasher` with its fixed keys): no new dependency, the
//! same on the host and in wasm, fast next to tokenizing (which the cache saves), and with 64
//! bits plus the length an accidental collision is out of reach. It is not a defence against
//! someone crafting colliding messages; the worst such a collision can do is a wrong count.
//!
//! The cache is bounded: two generations of at most `capacity / 2` entries each. A full
//! current generation becomes the previous one and the old previous one is dropped, so the
//! least recently used entries go first, in O(1).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};

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

/// What identifies a message's count apart from the rules: a hash of its format, role and
/// JSON, and the number of bytes hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageKey(u64, u64);

/// Makes the cache keys of one count: each message is written into one reused buffer that is
/// hashed in a single pass ([`MessageKey`]), then combined with the hash of the rules.
#[derive(Debug)]
pub(crate) struct Keyer {
    rules: u64,
    buf: Vec<u8>,
}

impl Keyer {
    pub fn new(rules: &Rules) -> Keyer {
        let mut hasher = DefaultHasher::new();
        rules.hash(&mut hasher);
        Keyer {
            rules: hasher.finish(),
            buf: Vec::new(),
        }
    }

    /// The key of `message`, whatever the rules.
    pub fn message_key(&mut self, message: &Message) -> MessageKey {
        let buf = &mut self.buf;
        buf.clear();
        buf.extend_from_slice(message.format().name().as_bytes());
        buf.push(b'|');
        buf.extend_from_slice(message.role().name().as_bytes());
        buf.push(b'|');
        // NOTE: writing into a Vec cannot fail; the results are ignored rather than unwrapped.
        serde_json::to_writer(&mut *buf, &message.skeleton).unwrap_or_default();
        for part in message.parts() {
            buf.push(part.kind() as u8);
            serde_json::to_writer(&mut *buf, part.raw()).unwrap_or_default();
        }
        let mut hasher = DefaultHasher::new();
        hasher.write(buf);
        MessageKey(hasher.finish(), buf.len() as u64)
    }

    /// The cache key of a message counted under these rules.
    pub fn key(&self, MessageKey(hash, len): MessageKey) -> Key {
        let mut hasher = DefaultHasher::new();
        hasher.write_u64(self.rules);
        hasher.write_u64(hash);
        Key(hasher.finish(), len)
    }
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
}
