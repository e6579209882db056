//! The one reader of a host's message list. Counting (`countMessages` and the keeper's counts),
//! the keeper's prepare and the message checks (`validateMessages`, `repairMessages`,
//! `detectFormat`) all read a conversation's messages here, one object at a time:
//!
//! - through a counter's memo ([`memo::Counting`]), a message object read before and reading
//!   the same (its snapshot matches; the whole list is checked in one call when the JS helper
//!   is registered) is not read again: the reader gets what the memo learnt of it and, when it
//!   asks, the message as it was parsed. Any other object is read with a snapshot and
//!   remembered.
//! - without a memo, each message is read afresh, its long texts skimmed when the reader only
//!   checks them ([`walk::Skim`]).
//!
//! No counter is locked while a message is read from JS (its getters may call back into the
//! package): the memo is borrowed only between reads.

use js_sys::Array;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::memo::Counting;
use super::walk::{self, Skim, WalkError};
use crate::counting::Learnt;
use crate::messages::{FormatVotes, Message};

/// A message of the list, as the reader found it.
#[derive(Debug)]
pub enum Found {
    /// Read before and reading the same: its memo id, what the memo learnt of it, and the
    /// message as it was parsed when the reader asked for it.
    Known {
        id: u64,
        learnt: Learnt,
        parsed: Option<Message>,
    },
    /// Read now: its JSON, its votes for a format, and its memo id when it is remembered.
    Read {
        id: Option<u64>,
        votes: FormatVotes,
        value: Value,
    },
}

/// Reads every message of `list` through `memo`; `parsed`: a known message is wanted parsed
/// (one the memo did not keep is read again). Errors name the message's index.
pub fn read_list(
    list: &Array,
    memo: &impl Counting,
    parsed: bool,
) -> Result<Vec<Found>, (u32, WalkError)> {
    let n = list.length();
    let mut found = Vec::with_capacity(n as usize);
    let recalled = memo.recall_all(list);
    for i in 0..n {
        let item = list.get(i);
        let known = recalled
            .as_ref()
            .map(|ids| ids.get(i as usize).copied().flatten());
        found.push(read_one(&item, i, known, memo, parsed).map_err(|err| (i, err))?);
    }
    Ok(found)
}

/// Reads every message of `list` afresh, its long texts skimmed when `skim` says so.
pub fn read_values(list: &Array, skim: Option<Skim>) -> Result<Vec<Value>, (u32, WalkError)> {
    (0..list.length())
        .map(|i| read_fresh(&list.get(i), i, skim).map_err(|err| (i, err)))
        .collect()
}

/// Message `i` read now, without a snapshot.
fn read_fresh(item: &JsValue, i: u32, skim: Option<Skim>) -> Result<Value, WalkError> {
    let value = match skim {
        Some(skim) => walk::read_item_skimmed(item, i, skim)?,
        None => walk::read_item(item, i)?,
    };
    Ok(value.unwrap_or(Value::Null))
}

/// Message `i` through the memo; `recalled`: its memo id when the list was recalled at once
/// (`Some(None)`: not known).
fn read_one(
    item: &JsValue,
    i: u32,
    recalled: Option<Option<u64>>,
    memo: &impl Counting,
    parsed: bool,
) -> Result<Found, WalkError> {
    if !item.is_object() {
        let value = read_fresh(item, i, None)?;
        let votes = FormatVotes::of_message(&value);
        return Ok(Found::Read {
            id: None,
            votes,
            value,
        });
    }
    if let Some(id) = recalled.unwrap_or_else(|| memo.recall(item)) {
        let known = memo.with(|c| {
            let m = c.memo_mut();
            let learnt = m.learnt(id)?;
            let message = match parsed {
                true => Some(m.kept_message(id)?),
                false => None,
            };
            Some((learnt, message))
        });
        if let Some((learnt, parsed)) = known {
            return Ok(Found::Known { id, learnt, parsed });
        }
    }
    let (value, snapshot) = walk::read_item_with_snapshot(item, i)?;
    let value = value.unwrap_or(Value::Null);
    let votes = FormatVotes::of_message(&value);
    let id = snapshot.map(|snapshot| {
        let counted = None;
        let id = memo.with(|c| c.memo_mut().remember(Learnt { votes, counted }));
        memo.remember(item, snapshot, id);
        id
    });
    Ok(Found::Read { id, votes, value })
}
