//! The keeper's core for the JS driver (`pkg-template/context/index.js`): `__CkKeeper` owns
//! the options and a counter of its own (count cache, calibrations, and the map of message
//! objects it has read), so two keepers in one isolate never share or race on state; its
//! `prepare` gives one prepare as a machine (`__CkMachine`, [`super::machine`]), stepped by
//! the driver's one loop.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, WeakMap};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::context::{
    check_figures, count_error, messages_out_reusing, read_conversation, read_options, set, to_js,
};
use super::error::ContextError;
use super::list::{self, Found};
use super::machine::{need_js, MachineJs, Stepped};
use super::memo::{Counting as _, Own};
use super::{enter, walk};
use crate::context::decision::DecisionMemo;
use crate::context::keeper::fast::{self, Unrecorded};
use crate::context::keeper::reported::{self, UsageError};
use crate::context::keeper::{Call, Decision, Event, KeeperOptions, Prepare, PrepareError};
use crate::context::state::SessionState;
use crate::counting::{CountMessagesOptions, Counter, Learnt};
use crate::messages::{self, Conversation, Format, FormatVotes, ListedMessage};

fn prepare_error(err: PrepareError) -> ContextError {
    match err {
        PrepareError::Options { path, reason } => ContextError::options(path, reason),
        PrepareError::Count(err) => count_error(err),
    }
}

/// A keeper's configuration and counter.
#[wasm_bindgen(js_name = __CkKeeper, skip_typescript)]
#[derive(Debug)]
pub struct KeeperJs {
    options: KeeperOptions,
    counting: Own,
    /// What its prepares cut, by message (each prepare takes it and hands it back).
    memo: Rc<RefCell<DecisionMemo>>,
    /// The objects its last prepare made for the messages it cut.
    made: Rc<RefCell<MadeObjects>>,
    /// The last session state it wrote, as bytes and as state: the next prepare of the
    /// session is handed the same bytes, and takes a copy instead of reading them again.
    state: Rc<RefCell<Option<Written>>>,
}

/// A whole number the driver put at `key` of `object` (0 when absent or not one).
fn figure(object: &JsValue, key: &str) -> u64 {
    js_sys::Reflect::get(object, &JsValue::from_str(key))
        .ok()
        .and_then(|value| value.as_f64())
        .filter(|n| n.is_finite() && *n >= 0.0)
        .map_or(0, |n| n as u64)
}

/// A session state as written: its bytes, and the state they hold.
type Written = (Vec<u8>, SessionState);

/// The objects a prepare made for messages that are not the caller's (its cuts), by message
/// identity: the next prepare gives the same object again for the same message (a standing
/// cut re-applied is the same message, [`DecisionMemo`]) while the object still reads as it was
/// made, so the history a host sends back holds objects the keeper has read, and its next
/// count reads only what is new.
#[derive(Debug)]
struct MadeObjects {
    /// The last prepare's, each with its message (held, so that no other takes its address).
    last: crate::counting::KeyMap<usize, (messages::Message, JsValue)>,
    /// This prepare's.
    now: crate::counting::KeyMap<usize, (messages::Message, JsValue)>,
    /// What each object read as when it was made ([`walk::Snapshot`]): the host may edit one
    /// in place (the keeper's own map of what it read is updated by each read, so it cannot
    /// tell).
    made: WeakMap,
    /// Whether the keeper has finished a prepare before: a keeper made for one prepare (a
    /// stateless Worker's) keeps nothing, so it does not pay for a snapshot of what it made.
    again: bool,
}

impl Default for MadeObjects {
    fn default() -> MadeObjects {
        MadeObjects {
            last: Default::default(),
            now: Default::default(),
            made: WeakMap::new(),
            again: false,
        }
    }
}

impl MadeObjects {
    /// Keeps of the last prepare's objects only those that read as they were made, checked in
    /// one call.
    fn check(&mut self) {
        let entries: Vec<usize> = self.last.keys().copied().collect();
        let objects: Array = (entries.iter())
            .filter_map(|id| self.last.get(id).map(|(_, object)| object.clone()))
            .collect();
        let made = &self.made;
        let same = super::memo::recall_all_in(made, &objects).unwrap_or_else(|| {
            (objects.iter())
                .map(|object| super::memo::recall_in(made, &object))
                .collect()
        });
        for (id, same) in entries.iter().zip(same) {
            if same.is_none() {
                self.last.remove(id);
            }
        }
    }
}

impl super::messages::Made for MadeObjects {
    fn get(&mut self, message: &messages::Message) -> Option<JsValue> {
        let (_, object) = self.last.get(&message.identity())?;
        let object = object.clone();
        self.now
            .insert(message.identity(), (message.clone(), object.clone()));
        Some(object)
    }
    fn keeps(&self) -> bool {
        self.again
    }
    fn made(&mut self, message: messages::Message, object: &JsValue) {
        // NOTE: an object that cannot be snapshotted is not given again.
        if let Ok((_, Some(snapshot))) = walk::read_item_with_snapshot(object, 0) {
            // NOTE: the id slot of a snapshot; any id above 0 reads as "the same".
            self.made
                .set(object.unchecked_ref(), &snapshot.into_js(1).into());
            self.now
                .insert(message.identity(), (message, object.clone()));
        }
    }
}

#[wasm_bindgen(js_class = __CkKeeper)]
impl KeeperJs {
    /// Reads the options (`options.*` errors name the field).
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<KeeperJs, ContextError> {
        enter();
        let (format, mut options): (_, KeeperOptions) = read_options(&options, true)?;
        options.format = format;
        // NOTE: a threshold of 0 or below, or a window of 0, would otherwise leave management
        // off or every prepare over the line, without an error naming the field.
        check_figures(options.invalid())?;
        options
            .check_model()
            .map_err(|message| ContextError::options("options.model", message))?;
        // NOTE: the keeper reads its history again at every full prepare: its counts keep
        // the messages they parse, so that a prepare parses only what no count has.
        let mut counter = Counter::new();
        counter.memo_mut().keep_messages(true);
        Ok(KeeperJs {
            options,
            counting: Own {
                counter: Rc::new(RefCell::new(counter)),
                seen: WeakMap::new(),
            },
            memo: Rc::default(),
            made: Rc::default(),
            state: Rc::default(),
        })
    }

    /// `{ budget }` or `{ reason }` when management is off.
    pub fn budget(&self) -> Result<JsValue, ContextError> {
        let out = js_sys::Object::new();
        match (self.options.enabled, self.options.budget()) {
            (false, _) => set(&out, "reason", &"management is off (enabled: false)".into())?,
            (true, Err(reason)) => set(&out, "reason", &reason.into())?,
            (true, Ok(budget)) => set(&out, "budget", &to_js(&budget)?)?,
        }
        Ok(out.into())
    }

    /// The tokens of `messages`, read through this keeper's memo: a message object counted
    /// before, and reading the same, is neither read nor tokenized again.
    pub fn count(&self, messages: JsValue) -> Result<f64, super::counting::CountingError> {
        enter();
        let options = CountMessagesOptions {
            model: self.options.model.clone(),
            format: self.options.format,
            ..CountMessagesOptions::default()
        };
        let (count, _) = super::counting::count_in(&self.counting, &messages, &options, None)?;
        Ok(count.total as f64)
    }

    /// The fast path ([`crate::context::keeper::fast`]): whether a session's last answer
    /// (its `tokensBefore`, `tokensAfter` and `holdsFor`) stands with `fresh` appended to it,
    /// `output` being what would then be sent; `flushes`: the host runs the memory flush.
    /// `{ tokensBefore, tokensAfter, decision, holdsFor, output }` (`output`: the new messages'
    /// hashes, [`fast::Answer::output`]), or `undefined`: the full prepare
    /// decides. The new messages are counted through the keeper's memo, and what a decision
    /// will read of each is worked out now ([`DecisionMemo::prime`]), a few messages a turn
    /// rather than all that arrived since the last decision on the turn that makes one.
    pub fn fast(
        &self,
        fresh: Array,
        output: JsValue,
        tokens_before: f64,
        tokens_after: f64,
        holds_for: u32,
        flushes: bool,
    ) -> Result<JsValue, super::counting::CountingError> {
        let budget = match (self.options.enabled, self.options.budget()) {
            (true, Ok(budget)) => budget,
            _ => return Ok(JsValue::UNDEFINED),
        };
        let whole = |n: f64| {
            if n.is_finite() && n > 0.0 {
                n as u64
            } else {
                0
            }
        };
        let mut standing = fast::Standing::new(
            budget,
            flushes,
            whole(tokens_before),
            whole(tokens_after),
            holds_for as usize,
        );
        let fresh_tokens = match fresh.length() {
            0 => 0,
            _ => self.count(fresh.clone().into())? as u64,
        };
        let Ok(found) = list::read_list(&fresh, &self.counting, true) else {
            return Ok(JsValue::UNDEFINED);
        };
        let mut messages = Vec::with_capacity(found.len());
        for (i, found) in found.into_iter().enumerate() {
            let Found::Known {
                parsed: Some(message),
                ..
            } = found
            else {
                return Ok(JsValue::UNDEFINED);
            };
            let alone = || {
                let one: Array = std::iter::once(fresh.get(i as u32)).collect();
                self.count(one.into()).map_or(u64::MAX, |n| n as u64)
            };
            if standing.may_offload(&message, alone) {
                return Ok(JsValue::UNDEFINED);
            }
            self.memo.borrow_mut().prime(&message);
            messages.push(message);
        }
        let mut counted = Ok(0.0);
        let answer = standing.answer(&messages, fresh_tokens, || {
            counted = self.count(output);
            counted.as_ref().map_or(u64::MAX, |n| *n as u64)
        });
        counted?;
        let Some(answer) = answer else {
            return Ok(JsValue::UNDEFINED);
        };
        let out = js_sys::Object::new();
        // NOTE: a new plain object takes any key: no error to report.
        let put = |key: &str, value: JsValue| {
            let _ = js_sys::Reflect::set(&out, &key.into(), &value);
        };
        put("tokensBefore", (answer.tokens_before as f64).into());
        put("tokensAfter", (answer.tokens_after as f64).into());
        let decision = match answer.decision {
            Decision::Held => "held",
            _ => "under",
        };
        put("decision", decision.into());
        put("holdsFor", (answer.holds_for as f64).into());
        put("output", answer.output.into());
        Ok(out.into())
    }

    /// Starts a prepare of `messages` with the session's stored state; `unrecorded`: the
    /// figures of the prepares the driver answered itself since the last one
    /// (`{ prepared, tokensSent, saved, since, output }`: [`Unrecorded`]), added to the state's.
    pub fn prepare(
        &self,
        messages: JsValue,
        session_id: String,
        now: Option<String>,
        flush: bool,
        state: Option<Vec<u8>>,
        unrecorded: JsValue,
    ) -> Result<MachineJs, ContextError> {
        enter();
        let (conv, ids) = read_kept(&self.counting, &messages, self.options.format)?;
        let call = Call {
            session_id,
            now,
            flush,
        };
        // NOTE: the state the keeper's last prepare wrote is taken as it was, not read again
        // (a keeper made for one prepare, as a stateless Worker's, reads it; so does the next
        // prepare after one that left the state as it was).
        let written = self.state.borrow_mut().take();
        let state = match (written, state.as_deref()) {
            (Some((bytes, written)), Some(given)) if bytes.as_slice() == given => written,
            (_, given) => SessionState::from_bytes(given),
        };
        let counter = Rc::clone(&self.counting.counter);
        let memo = std::mem::take(&mut *self.memo.borrow_mut());
        let mut prepare =
            Prepare::start(conv, &self.options, call, state, &mut counter.borrow_mut())
                .map_err(prepare_error)?
                .with_memo(memo);
        // NOTE: made by the driver (`{ prepared, tokensSent, saved: { prune, evict, ... } }`),
        // read field by field rather than through serde, which would cost the build more.
        if unrecorded.is_object() {
            let saved = js_sys::Reflect::get(&unrecorded, &JsValue::from_str("saved"))
                .unwrap_or(JsValue::UNDEFINED);
            let saved = crate::context::state::SavedTokens {
                offload: figure(&saved, "offload"),
                prune: figure(&saved, "prune"),
                evict: figure(&saved, "evict"),
                compact: figure(&saved, "compact"),
            };
            let output = js_sys::Reflect::get(&unrecorded, &JsValue::from_str("output"))
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_default();
            prepare.add_unrecorded(&Unrecorded {
                prepared: figure(&unrecorded, "prepared"),
                tokens_sent: figure(&unrecorded, "tokensSent"),
                saved,
                since: figure(&unrecorded, "since") as usize,
                output,
            });
        }
        // NOTE: what the count taught of each message the keeper recognises, so that counting
        // the history again (`count`, the driver's fast path) takes it from the cache by key.
        {
            let mut counting = counter.borrow_mut();
            let memo = counting.memo_mut();
            for (id, counted) in ids.iter().zip(prepare.input_counted()) {
                if let Some((id, votes)) = *id {
                    let counted = Some(counted);
                    memo.insert(id, Learnt { votes, counted });
                }
            }
        }
        Ok(MachineJs::new(KeeperPrepare {
            messages,
            prepare,
            counter,
            memo: Rc::clone(&self.memo),
            made: Rc::clone(&self.made),
            state: Rc::clone(&self.state),
        }))
    }

    /// A session's calibration (provider tokens per estimated token), if `recordUsage` found
    /// one.
    pub fn calibration(state: Option<Vec<u8>>) -> Option<f64> {
        let state = SessionState::from_bytes(state.as_deref());
        state.keeper.calibration_ppm.map(|ppm| ppm as f64 / 1e6)
    }

    /// Applies a session's calibration to this keeper's counter now (prepare applies the
    /// stored one itself), so the next count is calibrated.
    pub fn calibrate(&self, ratio: f64) {
        if let Some(model) = self.options.model.as_deref() {
            let ppm = (ratio * 1e6).round() as u64;
            self.counting.counter.borrow_mut().calibrate(
                model,
                &crate::counting::ModelOverrides::default(),
                1_000_000,
                ppm,
            );
        }
    }

    /// Empties the count cache and the calibrations.
    pub fn clear(&self) {
        let mut counter = self.counting.counter.borrow_mut();
        counter.clear_cache();
        counter.clear_calibrations();
        *self.memo.borrow_mut() = DecisionMemo::new();
        *self.made.borrow_mut() = MadeObjects::default();
        *self.state.borrow_mut() = None;
    }

    /// A session's running figures from its stored state.
    pub fn stats(state: Option<Vec<u8>>) -> Result<JsValue, ContextError> {
        let state = SessionState::from_bytes(state.as_deref());
        to_js(&state.keeper.stats)
    }

    /// Adds provider-reported usage to a session's state: `{ inputTokens, outputTokens,
    /// cacheReadTokens, cacheWriteTokens }` (also the providers' own names: `input_tokens`,
    /// `prompt_tokens`, `cache_read_input_tokens`, ...). Returns the state to store.
    #[wasm_bindgen(js_name = recordUsage)]
    pub fn record_usage(state: Option<Vec<u8>>, usage: JsValue) -> Result<Vec<u8>, ContextError> {
        let value = walk::read(&usage, None)
            .map_err(|err| ContextError::options(format!("usage{}", err.path()), err.reason))?
            .unwrap_or(Value::Null);
        let Value::Object(map) = value else {
            return Err(ContextError::options(
                "usage",
                "expected an object of token counts".to_owned(),
            ));
        };
        let reported = reported::read(&map)
            .map_err(|UsageError { path, reason }| ContextError::options(path, reason))?;
        let mut state = SessionState::from_bytes(state.as_deref());
        reported::record(&mut state, &reported);
        Ok(state.to_bytes())
    }
}

/// A message object the keeper recognises: its memo id and its votes for a format.
type Recognised = Option<(u64, FormatVotes)>;

/// The conversation `messages` for a prepare, read through the keeper's memo: a message object
/// the keeper parsed before, and that reads the same (its snapshot matches), is taken as it
/// was parsed, and only new or edited messages are read from JS and parsed. What it makes is
/// what [`read_conversation`] makes of the same input (the format the same votes decide).
/// With it, for each message the keeper recognises, its memo id and its votes.
fn read_kept(
    counting: &Own,
    messages: &JsValue,
    format: Option<Format>,
) -> Result<(Conversation, Vec<Recognised>), ContextError> {
    let split = super::counting::split(messages)
        .map_err(|err| ContextError::messages("messages", err.to_string()))?;
    let Some((list, envelope)) = split else {
        // NOTE: not a list nor a request object holding one: the whole reading names the fault.
        return Ok((read_conversation(messages, format)?, Vec::new()));
    };
    let mut votes = envelope
        .as_ref()
        .map(FormatVotes::of_envelope)
        .unwrap_or_default();
    let found = list::read_list(&list, counting, true).map_err(|(i, err)| {
        ContextError::messages(format!("messages[{i}]{}", err.path()), err.reason)
    })?;
    let mut listed = Vec::with_capacity(found.len());
    let mut ids = Vec::with_capacity(found.len());
    let mut fresh: Vec<(usize, u64)> = Vec::new();
    for found in found {
        match found {
            Found::Known {
                id,
                learnt,
                parsed: Some(message),
            } => {
                votes.add(learnt.votes);
                ids.push(Some((id, learnt.votes)));
                listed.push(ListedMessage::Parsed(message));
            }
            Found::Known { parsed: None, .. } => {
                // NOTE: `read_list` reads a known message again when the memo has not kept it.
                return Err(ContextError::internal(
                    "a known message came without its parsed form".to_owned(),
                ));
            }
            Found::Read {
                id,
                votes: its,
                value,
            } => {
                votes.add(its);
                ids.push(id.map(|id| (id, its)));
                if let Some(id) = id {
                    fresh.push((listed.len(), id));
                }
                listed.push(ListedMessage::Value(value));
            }
        }
    }
    let format = format.or_else(|| votes.winner()).unwrap_or(Format::OpenAi);
    let conv = messages::parse_listed(format, envelope, listed)?;
    counting.with(|c| {
        let memo = c.memo_mut();
        for (at, id) in fresh {
            if let Some(message) = conv.messages().get(at) {
                memo.keep_message(id, message.clone());
            }
        }
    });
    Ok((conv, ids))
}

/// One prepare of a keeper, stepped by the driver ([`Machine::Prepare`]).
#[derive(Debug)]
pub(super) struct KeeperPrepare {
    messages: JsValue,
    prepare: Prepare,
    counter: Rc<RefCell<Counter>>,
    /// The keeper's, to hand the memo back to.
    memo: Rc<RefCell<DecisionMemo>>,
    /// The keeper's objects made for cut messages.
    made: Rc<RefCell<MadeObjects>>,
    /// The keeper's last state written.
    state: Rc<RefCell<Option<Written>>>,
}

impl Stepped for KeeperPrepare {
    fn next(&mut self) -> Result<JsValue, ContextError> {
        let mut counter = self.counter.borrow_mut();
        need_js(self.prepare.next(&mut counter).map_err(prepare_error)?)
    }

    fn archive_saves(&self) -> Option<crate::context::archive::ArchiveSaves<'_>> {
        self.prepare.archive_saves()
    }

    fn handle(&mut self, event: Event) -> Result<(), ContextError> {
        let mut counter = self.counter.borrow_mut();
        (self.prepare)
            .handle(event, &mut counter)
            .map_err(prepare_error)
    }

    /// `{ messages, report, state?, calibration? }`: the messages to send (untouched ones the
    /// caller's own objects, or objects it made for the same cuts before), the report, and the
    /// session state to store (bytes) with its calibration when it changed.
    fn finish(self: Box<Self>) -> Result<JsValue, ContextError> {
        let KeeperPrepare {
            messages: input,
            prepare,
            counter,
            memo,
            made,
            state,
        } = *self;
        let mut done = prepare.finish(&mut counter.borrow_mut());
        *memo.borrow_mut() = std::mem::take(&mut done.memo);
        let system = match (done.system_edited, done.conversation.system()) {
            (true, Some(system)) => Some(system.clone().into_content_value()),
            _ => None,
        };
        let messages = {
            let mut made = made.borrow_mut();
            made.check();
            let out = messages_out_reusing(&input, done.conversation, &done.origin, &mut *made);
            made.last = std::mem::take(&mut made.now);
            made.again = true;
            out?
        };
        if let Some(Some(system)) = system {
            // NOTE: a cache breakpoint on the system prompt: the request object is a copy.
            let copy = if messages == input {
                js_sys::Object::assign(&js_sys::Object::new(), messages.unchecked_ref()).into()
            } else {
                messages.clone()
            };
            set(
                copy.unchecked_ref(),
                "system",
                &super::messages::json_to_js(&system)
                    .map_err(|e| ContextError::internal(e.to_string()))?,
            )?;
            return finished(&state, copy, done.report, done.state);
        }
        finished(&state, messages, done.report, done.state)
    }
}

/// A prepare's output, the state it wrote kept as the keeper's last.
fn finished(
    written: &RefCell<Option<Written>>,
    messages: JsValue,
    mut report: crate::context::keeper::PrepareReport,
    state: Option<SessionState>,
) -> Result<JsValue, ContextError> {
    let out = js_sys::Object::new();
    set(&out, "messages", &messages)?;
    // NOTE: the edits (hundreds on a long history: most of a decision turn's report, and a
    // fifth of its time as JSON) cross packed, and the driver makes their objects
    // (`unpackEdits`); the report holds empty lists in their places until then.
    let offloaded = std::mem::take(&mut report.offloaded);
    let pruned = std::mem::take(&mut report.pruned);
    let evicted = std::mem::take(&mut report.evicted);
    set(&out, "report", &to_js(&report)?)?;
    let (numbers, texts) = pack_edits([&offloaded, &pruned, &evicted]);
    set(
        &out,
        "edits",
        &js_sys::Float64Array::from(numbers.as_slice()).into(),
    )?;
    set(&out, "editTexts", &texts.into())?;
    if let Some(state) = state {
        let bytes = state.to_bytes();
        set(&out, "state", &js_sys::Uint8Array::from(bytes.as_slice()))?;
        // NOTE: the session's calibration, so the driver need not read the state again.
        let calibration = state.keeper.calibration_ppm.map(|ppm| ppm as f64 / 1e6);
        set(&out, "calibration", &calibration.into())?;
        *written.borrow_mut() = Some((bytes, state));
    }
    Ok(out.into())
}

/// The edits of a report's three lists (offloaded, pruned, evicted), packed for the driver's
/// `unpackEdits`: per edit, the numbers `list, messageIndex, partIndex, tokensBefore,
/// tokensAfter, estimated, original (0 store, 1 file, 2 history), fields (1 toolName,
/// 2 toolCallId, 4 field), key length`, then the UTF-16 length of each of its texts, which
/// follow one another in the string: the action, the fields present, the key's parts, and the
/// id (store) or path (file).
#[inline(never)]
fn pack_edits(lists: [&Vec<crate::context::Edit>; 3]) -> (Vec<f64>, String) {
    use crate::context::Original;
    let mut numbers = Vec::new();
    let mut texts = String::new();
    for (list, edits) in lists.into_iter().enumerate() {
        for edit in edits {
            let (kind, key, last): (f64, &[String], Option<&str>) = match &edit.original {
                Original::Store { key, id } => (0.0, key, Some(id)),
                Original::File { path } => (1.0, &[], Some(path)),
                Original::History => (2.0, &[], None),
            };
            let fields = [&edit.tool_name, &edit.tool_call_id, &edit.field].map(Option::as_deref);
            let flags = (fields.iter().enumerate())
                .filter(|(_, f)| f.is_some())
                .fold(0u32, |flags, (i, _)| flags | 1 << i);
            numbers.extend([
                list as f64,
                edit.message_index as f64,
                edit.part_index as f64,
                edit.tokens_before as f64,
                edit.tokens_after as f64,
                f64::from(u8::from(edit.estimated)),
                kind,
                f64::from(flags),
                key.len() as f64,
            ]);
            let all = std::iter::once(edit.action.name())
                .chain(fields.into_iter().flatten())
                .chain(key.iter().map(String::as_str))
                .chain(last);
            for text in all {
                numbers.push(text.encode_utf16().count() as f64);
                texts.push_str(text);
            }
        }
    }
    (numbers, texts)
}
