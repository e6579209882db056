//! Which message objects the counting exports have read, so that counting a conversation again
//! after a message was appended reads only the new message.
//!
//! A message object is remembered in a `WeakMap` (it goes when the caller drops it) with a
//! [`Snapshot`] of its JSON reading and the id the core's memo keeps what was learnt of it
//! under ([`crate::counting::Memo`]). Next time, a message whose snapshot still matches is not
//! walked or parsed again: the core counts it by what it learnt. A message edited in place
//! (`message.content += delta` while streaming) no longer matches and is read afresh, so a
//! stale count is never used. The JSON itself is not kept.

use js_sys::WeakMap;
use wasm_bindgen::{JsCast, JsValue};

use super::walk::Snapshot;

thread_local! {
    static SEEN: WeakMap = WeakMap::new();
}

/// The memo id of `message` when it was remembered and still reads as it did then.
pub fn recall(message: &JsValue) -> Option<u64> {
    SEEN.with(|seen| recall_in(seen, message))
}

/// [`recall`] from a map of one's own (a keeper's, whose counter has its own memo ids).
pub fn recall_in(seen: &WeakMap, message: &JsValue) -> Option<u64> {
    let entry = seen.get(message.unchecked_ref());
    if entry.is_undefined() {
        return None;
    }
    // NOTE: SEEN holds only arrays made by `remember`.
    let (id, snapshot) = Snapshot::from_js(entry.unchecked_into())?;
    snapshot.matches(message).then_some(id)
}

/// Remembers `message` as read now (`snapshot`), under the core's memo id `id`.
pub fn remember(message: &JsValue, snapshot: Snapshot, id: u64) {
    SEEN.with(|seen| remember_in(seen, message, snapshot, id));
}

/// [`remember`] in a map of one's own.
pub fn remember_in(seen: &WeakMap, message: &JsValue, snapshot: Snapshot, id: u64) {
    let entry = snapshot.into_js(id);
    seen.set(message.unchecked_ref(), &entry);
}

/// A counter and the map of the message objects it has read: the package's default one, or
/// one a keeper owns (two keepers never share memo ids or counts).
pub trait Counting {
    /// Runs `f` with the counter, locked (or borrowed) only for that call.
    fn with<R>(&self, f: impl FnOnce(&mut crate::counting::Counter) -> R) -> R;
    /// The memo id of `message`, when this counter read it and it reads the same.
    fn recall(&self, message: &JsValue) -> Option<u64>;
    /// Remembers `message` as read now.
    fn remember(&self, message: &JsValue, snapshot: Snapshot, id: u64);
}

/// The package's default counter, shared by the counting exports.
pub struct Shared;

impl Counting for Shared {
    fn with<R>(&self, f: impl FnOnce(&mut crate::counting::Counter) -> R) -> R {
        crate::counting::with_default_counter(f)
    }
    fn recall(&self, message: &JsValue) -> Option<u64> {
        recall(message)
    }
    fn remember(&self, message: &JsValue, snapshot: Snapshot, id: u64) {
        remember(message, snapshot, id);
    }
}

/// A counter of one's own, with its own map.
#[derive(Debug)]
pub struct Own {
    /// The counter; borrowed only inside one synchronous call.
    pub counter: std::rc::Rc<std::cell::RefCell<crate::counting::Counter>>,
    /// The message objects it read.
    pub seen: WeakMap,
}

impl Counting for Own {
    fn with<R>(&self, f: impl FnOnce(&mut crate::counting::Counter) -> R) -> R {
        f(&mut self.counter.borrow_mut())
    }
    fn recall(&self, message: &JsValue) -> Option<u64> {
        recall_in(&self.seen, message)
    }
    fn remember(&self, message: &JsValue, snapshot: Snapshot, id: u64) {
        remember_in(&self.seen, message, snapshot, id);
    }
}
