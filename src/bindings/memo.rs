//! Which message objects the counting exports have read, so that counting a conversation again
//! after a message was appended reads only the new message.
//!
//! A message object is remembered in a `WeakMap` (it goes when the caller drops it) with a
//! [`Snapshot`] of its JSON reading and the id the core's memo keeps what was learnt of it
//! under ([`crate::counting::Memo`]). Next time, a message whose snapshot still matches is not
//! walked or parsed again: the core counts it by what it learnt. A message edited in place
//! (`message.content += delta` while streaming) no longer matches and is read afresh, so a
//! stale count is never used. The JSON itself is not kept.

use std::cell::RefCell;

use js_sys::{Array, Float64Array, Function, WeakMap};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use super::walk::Snapshot;

thread_local! {
    static SEEN: WeakMap = WeakMap::new();
    /// The package's `recallAll` (pkg-template/memo.js), once an entry registered it.
    static RECALL_ALL: RefCell<Option<Function>> = const { RefCell::new(None) };
    /// The package's `assemble` (pkg-template/memo.js), once an entry registered it.
    static ASSEMBLE: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Registers the JS helpers that handle a whole list in one call (pkg-template/memo.js):
/// `recallAll(list, seen)` gives each item's memo id, or 0; `assemble(list, from, made)` makes
/// the list a conversation is written back as ([`assemble`]).
#[wasm_bindgen(js_name = __ckRegisterRecall, skip_typescript)]
pub fn register_recall(recall_all: Function, assemble: Function) {
    RECALL_ALL.with(|slot| *slot.borrow_mut() = Some(recall_all));
    ASSEMBLE.with(|slot| *slot.borrow_mut() = Some(assemble));
}

/// The array whose item k is `list[from[k]]` where `from[k]` is 0 or more, else
/// `made[-from[k] - 1]`: by the registered JS helper, in one call; `None` without one (or if it
/// misbehaved), for the caller to make it item by item.
pub fn assemble(list: &Array, from: &[i32], made: &Array) -> Option<Array> {
    let assemble = ASSEMBLE.with(|slot| slot.borrow().clone())?;
    let from = js_sys::Int32Array::from(from);
    let out: Array = assemble
        .call3(&JsValue::UNDEFINED, list, &from, made)
        .ok()?
        .dyn_into()
        .ok()?;
    (out.length() == from.length()).then_some(out)
}

/// For each item of `list`, its memo id when `seen` has it and it still reads the same: by the
/// registered JS helper, in one call; `None` without one (or if it misbehaved), for the caller
/// to [`recall_in`] item by item, with the same result.
pub fn recall_all_in(seen: &WeakMap, list: &Array) -> Option<Vec<Option<u64>>> {
    let recall_all = RECALL_ALL.with(|slot| slot.borrow().clone())?;
    let ids: Float64Array = recall_all
        .call2(&JsValue::UNDEFINED, list, seen)
        .ok()?
        .dyn_into()
        .ok()?;
    if ids.length() != list.length() {
        return None;
    }
    // NOTE: memo ids start at 1; 0 is "not known".
    Some(
        (ids.to_vec().into_iter())
            .map(|id| (id >= 1.0).then_some(id as u64))
            .collect(),
    )
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
    /// [`Counting::recall`] of every item of `list` at once, when the JS helper is registered
    /// ([`recall_all_in`]).
    fn recall_all(&self, list: &Array) -> Option<Vec<Option<u64>>>;
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
    fn recall_all(&self, list: &Array) -> Option<Vec<Option<u64>>> {
        SEEN.with(|seen| recall_all_in(seen, list))
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
    fn recall_all(&self, list: &Array) -> Option<Vec<Option<u64>>> {
        recall_all_in(&self.seen, list)
    }
}
