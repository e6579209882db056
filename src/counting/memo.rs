//! What counting remembers of the host's message objects between counts: the messages it
//! read, by identity, and what each taught ([`Learnt`]), within a bound.

use super::cache::{KeyMap, MessageKey};
use crate::messages::{Format, FormatVotes, Message, Role};

/// Messages whose learnt facts a [`Memo`] keeps at most.
pub const MEMO_CAPACITY: usize = 8_192;

/// What was learnt from a message the host read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Learnt {
    /// The message's votes for a format.
    pub votes: FormatVotes,
    /// How it was last read and counted: in which format, its role, and its count's key.
    pub counted: Option<(Format, Role, MessageKey)>,
}

/// What a host's messages taught the counts, by the id the host keeps with each message (a
/// [`super::Counter`] holds one, cleared with its cache):
/// bounded like the count cache (two generations of at most [`MEMO_CAPACITY`] / 2 entries).
/// The messages themselves are not kept.
///
/// A host that reads the same conversation again and again (the keeper) may also keep the
/// messages it parsed ([`Memo::keep_message`]), so that a message it recognises is neither
/// read nor parsed again; they go with their ids.
#[derive(Debug, Default)]
pub struct Memo {
    current: KeyMap<u64, Learnt>,
    previous: KeyMap<u64, Learnt>,
    messages: KeyMap<u64, Message>,
    keeping: bool,
    next_id: u64,
}

impl Memo {
    /// Records a message read now; returns the id the host keeps with it.
    pub fn remember(&mut self, learnt: Learnt) -> u64 {
        self.next_id += 1;
        self.insert(self.next_id, learnt);
        self.next_id
    }

    /// What was learnt of the message with this id, if it is still kept.
    pub fn learnt(&mut self, id: u64) -> Option<Learnt> {
        if let Some(learnt) = self.current.get(&id) {
            return Some(*learnt);
        }
        let learnt = self.previous.remove(&id)?;
        self.insert(id, learnt);
        Some(learnt)
    }

    /// Records what was learnt of the message with this id.
    pub fn insert(&mut self, id: u64, learnt: Learnt) {
        if self.current.len() >= MEMO_CAPACITY / 2 && !self.current.contains_key(&id) {
            let dropped = std::mem::replace(&mut self.previous, std::mem::take(&mut self.current));
            if !self.messages.is_empty() {
                for id in dropped.keys() {
                    self.messages.remove(id);
                }
            }
        }
        self.current.insert(id, learnt);
    }

    /// Makes counts keep every message they parse, for a host that reads the same history
    /// again to rewrite it (the keeper); off by default, where only counts are wanted.
    pub fn keep_messages(&mut self, keep: bool) {
        self.keeping = keep;
        if !keep {
            self.messages.clear();
        }
    }

    /// Keeps `message`, parsed from the message with this id, when the memo keeps messages
    /// ([`Memo::keep_messages`]) and knows the id.
    pub fn keep_message(&mut self, id: u64, message: Message) {
        if self.keeping && (self.current.contains_key(&id) || self.previous.contains_key(&id)) {
            self.messages.insert(id, message);
        }
    }

    /// The message kept for this id, if any (a clone, which shares its data).
    pub fn kept_message(&self, id: u64) -> Option<Message> {
        self.messages.get(&id).cloned()
    }

    /// Forgets every message. Ids are never given out again, so an id a host still holds
    /// finds nothing.
    pub fn clear(&mut self) {
        self.current.clear();
        self.previous.clear();
        self.messages.clear();
    }

    /// How many messages are kept.
    pub fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }

    /// Whether no message is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
