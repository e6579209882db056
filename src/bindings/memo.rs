//! What the counting exports remember of the message objects they have read, so that counting
//! a conversation again after a message was appended reads only the new message.
//!
//! A message object is remembered in a `WeakMap` (it goes when the caller drops it) with a
//! [`Snapshot`] of its JSON reading and a number; the number leads to what was learnt from it
//! ([`Learnt`]: its format votes, and the key of its count in the count cache). Next time, a
//! message whose snapshot still matches is not walked or parsed again: its count comes from the
//! cache by key. A message edited in place (`message.content += delta` while streaming) no
//! longer matches and is read afresh, so a stale count is never used.
//!
//! Only what was learnt is kept here, bounded like the count cache (two generations of at most
//! [`CAPACITY`] / 2 entries); the JSON itself is not kept.

use std::cell::RefCell;
use std::collections::HashMap;

use js_sys::WeakMap;
use wasm_bindgen::{JsCast, JsValue};

use super::walk::Snapshot;
use crate::counting::MessageKey;
use crate::messages::{Format, FormatVotes, Role};

/// Messages whose learnt facts are kept at most.
pub const CAPACITY: usize = 8_192;

/// What was learnt from a message object.
#[derive(Clone, Copy, Debug, Default)]
pub struct Learnt {
    /// The message's votes for a format.
    pub votes: FormatVotes,
    /// How it was last read and counted: in which format, its role, and its count's key.
    pub counted: Option<(Format, Role, MessageKey)>,
}

#[derive(Default)]
struct Facts {
    current: HashMap<u64, Learnt>,
    previous: HashMap<u64, Learnt>,
    next_id: u64,
}

thread_local! {
    static SEEN: WeakMap = WeakMap::new();
    static FACTS: RefCell<Facts> = RefCell::new(Facts::default());
}

/// The id of `message` when it was remembered and still reads as it did then.
pub fn recall(message: &JsValue) -> Option<u64> {
    let entry = SEEN.with(|seen| seen.get(message.unchecked_ref()));
    if entry.is_undefined() {
        return None;
    }
    // NOTE: SEEN holds only arrays made by `remember`.
    let (id, snapshot) = Snapshot::from_js(entry.unchecked_into())?;
    snapshot.matches(message).then_some(id)
}

/// Remembers `message` as read now (`snapshot`), with what was learnt; returns its new id.
pub fn remember(message: &JsValue, snapshot: Snapshot, learnt: Learnt) -> u64 {
    let id = FACTS.with(|facts| {
        let mut facts = facts.borrow_mut();
        facts.next_id += 1;
        facts.next_id
    });
    let entry = snapshot.into_js(id);
    SEEN.with(|seen| seen.set(message.unchecked_ref(), &entry));
    learn(id, learnt);
    id
}

/// What was learnt of the message with this id, if it is still kept.
pub fn learnt(id: u64) -> Option<Learnt> {
    FACTS.with(|facts| {
        let mut facts = facts.borrow_mut();
        if let Some(learnt) = facts.current.get(&id) {
            return Some(*learnt);
        }
        let learnt = facts.previous.remove(&id)?;
        facts.insert(id, learnt);
        Some(learnt)
    })
}

/// Records what was learnt of the message with this id.
pub fn learn(id: u64, learnt: Learnt) {
    FACTS.with(|facts| facts.borrow_mut().insert(id, learnt));
}

/// Forgets every message (with the count cache: `clearCountCache`).
pub fn clear() {
    FACTS.with(|facts| {
        let mut facts = facts.borrow_mut();
        facts.current.clear();
        facts.previous.clear();
    });
}

impl Facts {
    fn insert(&mut self, id: u64, learnt: Learnt) {
        if self.current.len() >= CAPACITY / 2 && !self.current.contains_key(&id) {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(id, learnt);
    }
}
