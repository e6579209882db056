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
    let entry = SEEN.with(|seen| seen.get(message.unchecked_ref()));
    if entry.is_undefined() {
        return None;
    }
    // NOTE: SEEN holds only arrays made by `remember`.
    let (id, snapshot) = Snapshot::from_js(entry.unchecked_into())?;
    snapshot.matches(message).then_some(id)
}

/// Remembers `message` as read now (`snapshot`), under the core's memo id `id`.
pub fn remember(message: &JsValue, snapshot: Snapshot, id: u64) {
    let entry = snapshot.into_js(id);
    SEEN.with(|seen| seen.set(message.unchecked_ref(), &entry));
}
