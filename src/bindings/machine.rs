//! One class for every sans-IO machine of the core ([`crate::context::machine`]): an offload,
//! one result's offload, a compaction, a rolling window and a keeper's prepare (its binding is
//! in `keeper.rs`) are each stepped by the package's one driver loop (`drive` in
//! `pkg-template/context/index.js`) through the same calls. This module only converts: which
//! step comes next is the machine's.
//!
//! `next()` gives `{ kind: "saves", saves: [{ key, bytes }] }`, `{ kind: "flush", request }`,
//! `{ kind: "archive", saves }` (how many: `archiveSave(i)` makes each), `{ kind:
//! "summarize", request }` or `{ kind: "done" }`; `saved`, `flushed`, `archived` and
//! `summarized` hand back what came of it; `finish()` gives the machine's output.

use js_sys::Array;
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::context::{
    already_applied, archive_save_js, check_figures, check_session, count_error, flush_outcome,
    messages_out, offload_options, outcome_of, read_conversation, read_options, save_to_js, set,
    summary_outcome, summary_request_js, to_js, written,
};
use super::error::ContextError;
use super::{enter, walk};
use crate::context::archive::ArchiveSaves;
use crate::context::compact::{self, CompactOptions, Compacted};
use crate::context::flush::FlushOutcome;
use crate::context::machine::{Event, Machine, Need, Offloading, ResultOffloading};
use crate::context::offload::{self, OffloadedMessages, OffloadedResult};
use crate::context::rolling::{self, Rolled, RollingOptions, RollingState};
use crate::context::state::SessionState;
use crate::counting::{with_default_counter, CountMessagesError};
use crate::messages::Conversation;

/// A machine as the driver steps it: its need converted, its events taken, its output written
/// back into the caller's objects.
pub(super) trait Stepped {
    /// What the driver must do next (`need_js` of the machine's [`Need`]).
    fn next(&mut self) -> Result<JsValue, ContextError>;
    /// The archive saves `next` asked for, if it did.
    fn archive_saves(&self) -> Option<ArchiveSaves<'_>>;
    /// Takes what came of the step.
    fn handle(&mut self, event: Event) -> Result<(), ContextError>;
    /// The output, once `next` is done.
    fn finish(self: Box<Self>) -> Result<JsValue, ContextError>;
}

/// A machine, stepped by the driver.
#[wasm_bindgen(js_name = __CkMachine, skip_typescript)]
pub struct MachineJs {
    machine: Option<Box<dyn Stepped>>,
}

// NOTE: written, not derived: a derived `Debug` would make every machine's, and with it the
// formatting of every plan and prepare, part of the build (30 KB of wasm).
impl std::fmt::Debug for MachineJs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.machine.is_some() {
            "MachineJs"
        } else {
            "MachineJs (finished)"
        })
    }
}

impl MachineJs {
    pub(super) fn new(machine: impl Stepped + 'static) -> Self {
        MachineJs {
            machine: Some(Box::new(machine)),
        }
    }

    fn handle(&mut self, event: Event) -> Result<(), ContextError> {
        (self.machine.as_mut().ok_or_else(already_applied)?).handle(event)
    }
}

/// A [`Need`] as the driver reads it.
pub(super) fn need_js(need: Need<'_>) -> Result<JsValue, ContextError> {
    let out = js_sys::Object::new();
    let kind = match need {
        Need::Saves(saves) => {
            let list = Array::new();
            for save in saves {
                list.push(&save_to_js(save)?);
            }
            set(&out, "saves", &list)?;
            "saves"
        }
        Need::Flush(request) => {
            set(&out, "request", &to_js(request)?)?;
            "flush"
        }
        Need::Archive(saves) => {
            // NOTE: how many; `archiveSave(i)` makes each, so that the driver stores one
            // before the next is made (and a dry run makes none).
            set(&out, "saves", &(saves.len() as u32).into())?;
            "archive"
        }
        Need::Summarize(request) => {
            set(&out, "request", &summary_request_js(request)?)?;
            "summarize"
        }
        Need::Done => "done",
    };
    set(&out, "kind", &kind.into())?;
    Ok(out.into())
}

#[wasm_bindgen(js_class = __CkMachine)]
impl MachineJs {
    /// What the driver must do next.
    pub fn next(&mut self) -> Result<JsValue, ContextError> {
        enter();
        (self.machine.as_mut().ok_or_else(already_applied)?).next()
    }

    /// Archive save `i` of the archive `next` asked for, made now: `{ key, bytes }`.
    #[wasm_bindgen(js_name = archiveSave)]
    pub fn archive_save(&self, i: u32) -> Result<JsValue, ContextError> {
        let machine = self.machine.as_ref().ok_or_else(already_applied)?;
        archive_save_js(machine.archive_saves(), i)
    }

    /// The outcomes of the saves asked for: `null` (confirmed) or the reason, one each.
    pub fn saved(&mut self, outcomes: Array) -> Result<(), ContextError> {
        self.handle(Event::Saved(
            outcomes.iter().map(|v| outcome_of(&v)).collect(),
        ))
    }

    /// The flush's outcome: `{ reply }` or `{ failed }`.
    pub fn flushed(&mut self, outcome: JsValue) -> Result<(), ContextError> {
        let outcome = flush_outcome(&outcome)
            .unwrap_or_else(|| FlushOutcome::Failed("the flush has no outcome".to_owned()));
        self.handle(Event::Flushed(outcome))
    }

    /// The archive saves' outcomes, one each.
    pub fn archived(&mut self, outcomes: Array) -> Result<(), ContextError> {
        self.handle(Event::Archived(
            outcomes.iter().map(|v| outcome_of(&v)).collect(),
        ))
    }

    /// The summary: `{ text }`, `{ failed }` or `{ heuristic: true }`.
    pub fn summarized(&mut self, summary: JsValue) -> Result<(), ContextError> {
        self.handle(Event::Summarized(summary_outcome(&summary)))
    }

    /// The machine's output, once `next` is done: `{ messages, report }` (an offload),
    /// `{ content, offloaded, failure? }` (one result), `{ messages, marker, report, state? }`
    /// (a compaction, a rolling window), `{ messages, report, state?, calibration? }` (a
    /// prepare).
    pub fn finish(&mut self) -> Result<JsValue, ContextError> {
        enter();
        (self.machine.take().ok_or_else(already_applied)?).finish()
    }
}

/// An output written back into the caller's objects (`input`).
trait Write {
    fn write(self, input: JsValue) -> Result<JsValue, ContextError>;
}

/// A machine of the core, with the caller's input its output is written into.
struct Stepper<M>(JsValue, M);

impl<M: Machine> Stepped for Stepper<M>
where
    M::Output: Write,
{
    fn next(&mut self) -> Result<JsValue, ContextError> {
        need_js(self.1.next())
    }

    fn archive_saves(&self) -> Option<ArchiveSaves<'_>> {
        self.1.archive_saves()
    }

    fn handle(&mut self, event: Event) -> Result<(), ContextError> {
        self.1.handle(event);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<JsValue, ContextError> {
        let Stepper(input, machine) = *self;
        // NOTE: the counter a fold was planned with, as every free export counts with it.
        with_default_counter(|counter| machine.done(counter)).write(input)
    }
}

/// `{ messages, report }`.
impl Write for OffloadedMessages {
    fn write(self, input: JsValue) -> Result<JsValue, ContextError> {
        written(&input, self.conversation, &self.edited, &self.report)
    }
}

/// `{ content, offloaded, failure? }`: the caller's own result when it was not offloaded.
impl Write for OffloadedResult {
    fn write(self, result: JsValue) -> Result<JsValue, ContextError> {
        let out = js_sys::Object::new();
        let (content, offloaded) = match &self.offloaded {
            Some(offloaded) => (to_js(&self.content)?, to_js(offloaded)?),
            None => (result, JsValue::NULL),
        };
        set(&out, "content", &content)?;
        set(&out, "offloaded", &offloaded)?;
        if let Some(failure) = self.failure {
            set(&out, "failure", &failure.into())?;
        }
        Ok(out.into())
    }
}

/// A fold's output (a compaction's, a rolling window's: their types differ, their fields do
/// not): `{ messages, marker, report, state? }`.
macro_rules! fold_write {
    ($done:ty) => {
        impl Write for $done {
            fn write(self, input: JsValue) -> Result<JsValue, ContextError> {
                let state = self.state.map(|s| s.to_bytes());
                let marker = self.marker.as_ref();
                let (messages, origin) = (self.conversation, &self.origin);
                fold_output(&input, messages, origin, marker, &self.report, state)
            }
        }
    };
}

fold_write!(Compacted);
fold_write!(Rolled);

/// A fold's output: `{ messages, marker, report, state? }`.
fn fold_output(
    input: &JsValue,
    conversation: Conversation,
    origin: &[Option<usize>],
    marker: Option<&impl Serialize>,
    report: &impl Serialize,
    state: Option<Vec<u8>>,
) -> Result<JsValue, ContextError> {
    let out = js_sys::Object::new();
    set(
        &out,
        "messages",
        &messages_out(input, conversation, origin)?,
    )?;
    let marker = match marker {
        Some(marker) => to_js(marker)?,
        None => JsValue::NULL,
    };
    set(&out, "marker", &marker)?;
    set(&out, "report", &to_js(report)?)?;
    if let Some(state) = state {
        set(&out, "state", &js_sys::Uint8Array::from(state.as_slice()))?;
    }
    Ok(out.into())
}

#[wasm_bindgen(js_name = __ckPlanOffload, skip_typescript)]
pub fn plan_offload(messages: JsValue, options: JsValue) -> Result<MachineJs, ContextError> {
    enter();
    let (format, options) = offload_options(&options, true)?;
    let conv = read_conversation(&messages, format)?;
    let plan = offload::plan_messages(conv, &options);
    Ok(MachineJs::new(Stepper(messages, Offloading::from(plan))))
}

#[wasm_bindgen(js_name = __ckPlanResult, skip_typescript)]
pub fn plan_result(result: JsValue, options: JsValue) -> Result<MachineJs, ContextError> {
    enter();
    let (_, options) = offload_options(&options, false)?;
    let value = walk::read(&result, None)
        .map_err(|err| ContextError::messages(format!("result{}", err.path()), err.reason))?
        .unwrap_or(Value::Null);
    let plan = offload::plan_result(value, &options);
    Ok(MachineJs::new(Stepper(
        result,
        ResultOffloading::from(plan),
    )))
}

/// Plans a compaction. `state` is the session's stored state (bytes), or `undefined`.
#[wasm_bindgen(js_name = __ckPlanCompact, skip_typescript)]
pub fn plan_compact(
    messages: JsValue,
    options: JsValue,
    state: Option<Vec<u8>>,
) -> Result<MachineJs, ContextError> {
    enter();
    let (format, options): (_, CompactOptions) = read_options(&options, true)?;
    check_figures(options.flush_options.invalid())?;
    check_session(&options.session_id)?;
    let conv = read_conversation(&messages, format)?;
    let state = SessionState::from_bytes(state.as_deref());
    let plan = crate::counting::with_default_counter(|counter| {
        compact::plan(conv, &options, state, counter)
    })
    .map_err(|err| match err {
        compact::CompactError::Options { path, reason } => ContextError::options(path, reason),
        compact::CompactError::Count(err) => count_error(err),
    })?;
    Ok(MachineJs::new(Stepper(messages, plan)))
}

/// Plans a rolling window. `state` is the session's stored rolling state (bytes), or
/// `undefined`.
#[wasm_bindgen(js_name = __ckPlanRolling, skip_typescript)]
pub fn plan_rolling(
    messages: JsValue,
    options: JsValue,
    state: Option<Vec<u8>>,
) -> Result<MachineJs, ContextError> {
    enter();
    let (format, options): (_, RollingOptions) = read_options(&options, true)?;
    check_session(&options.session_id)?;
    let conv = read_conversation(&messages, format)?;
    let state = RollingState::from_bytes(state.as_deref());
    let plan = crate::counting::with_default_counter(|counter| {
        rolling::plan(conv, &options, state, counter)
    })
    .map_err(|err| match err {
        rolling::RollingError::Options { path, reason } => ContextError::options(path, reason),
        rolling::RollingError::Count(CountMessagesError::Parse(err)) => ContextError::from(err),
        rolling::RollingError::Count(CountMessagesError::Options(err)) => {
            ContextError::options("options", err.to_string())
        }
        rolling::RollingError::Count(CountMessagesError::Count(err)) => {
            ContextError::internal(err.to_string())
        }
    })?;
    Ok(MachineJs::new(Stepper(messages, plan)))
}
