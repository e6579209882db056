//! The one protocol between the layer's sans-IO machines and a driver.
//!
//! A machine (an offload, a compaction, a rolling window, a keeper's prepare) says what it
//! needs next ([`Need`]); the driver does it (stores, runs the flush or the summarizer, each
//! with its timeout) and hands back what came of it ([`Event`]); then it asks again, until it
//! is [`Need::Done`] and its output can be taken. The order of the steps is the machine's:
//! a driver never decides whether to summarize (not after an archive save failed) or what a
//! step may be skipped for. So one driver loop runs every machine (the package's `drive`),
//! and a test steps one the same way ([`FoldSteps`] for a fold's).

use super::archive::ArchiveSaves;
use super::flush::{FlushOutcome, FlushRequest};
use super::fold::{SummaryOutcome, SummaryRequest};
use super::offload::{OffloadPlan, OffloadedMessages, OffloadedResult, ResultPlan};
use super::{Outcome, Save};
use crate::counting::Counter;

/// What a machine needs the driver to do next.
#[derive(Debug)]
pub enum Need<'a> {
    /// Store these copies (of what a cut removes, before it does): answer
    /// [`Event::Saved`], one outcome per save, in order.
    Saves(Vec<&'a Save>),
    /// Run the memory flush: answer [`Event::Flushed`].
    Flush(&'a FlushRequest),
    /// Store a fold's archive, each save made when asked for (store one before making the
    /// next: the two copies of a span are never in memory together): answer
    /// [`Event::Archived`], one outcome per save.
    Archive(ArchiveSaves<'a>),
    /// Ask the summarizer (without one, answer [`SummaryOutcome::Heuristic`]): answer
    /// [`Event::Summarized`].
    Summarize(&'a SummaryRequest),
    /// Nothing more: take the machine's output.
    Done,
}

/// What came of a [`Need`], as the driver hands it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The outcomes of [`Need::Saves`].
    Saved(Vec<Outcome>),
    /// The outcome of [`Need::Flush`].
    Flushed(FlushOutcome),
    /// The outcomes of [`Need::Archive`].
    Archived(Vec<Outcome>),
    /// The outcome of [`Need::Summarize`].
    Summarized(SummaryOutcome),
}

/// A machine its driver steps without a counter of its own: an offload ([`Offloading`]), one
/// result's ([`ResultOffloading`]), a compaction, a rolling window. (A keeper's prepare counts
/// with its keeper's counter at every step, and says why a step failed: [`super::keeper::Prepare`]
/// has the same `next` and `handle` of its own.)
pub trait Machine {
    /// What it gives once it is done.
    type Output;
    /// What the driver must do next.
    fn next(&self) -> Need<'_>;
    /// Takes what came of the step [`Machine::next`] asked for.
    fn handle(&mut self, event: Event);
    /// The archive saves [`Need::Archive`] asked for, each made when asked for (a fold's).
    fn archive_saves(&self) -> Option<ArchiveSaves<'_>> {
        None
    }
    /// Its output, once [`Machine::next`] is [`Need::Done`]; `counter` counts what it writes.
    fn done(self, counter: &mut Counter) -> Self::Output;
}

/// A fold's steps, in their order: the memory flush (when one is due), the archive, then the
/// summary, asked for only when every archive save was confirmed. What the driver answered is
/// kept here until the fold finishes with it ([`FoldSteps::take`]).
#[derive(Clone, Debug, Default)]
pub struct FoldSteps {
    flushed: Option<FlushOutcome>,
    archived: Option<Vec<Outcome>>,
    summary: Option<SummaryOutcome>,
}

/// What the driver answered a fold: the archive's outcomes, the summary, the flush.
pub type Answers = (Vec<Outcome>, SummaryOutcome, Option<FlushOutcome>);

impl FoldSteps {
    /// The next step of a fold with this flush request, archive and summary request (none:
    /// nothing to fold).
    pub fn next<'a>(
        &self,
        flush: Option<&'a FlushRequest>,
        saves: ArchiveSaves<'a>,
        request: Option<&'a SummaryRequest>,
    ) -> Need<'a> {
        if let (Some(flush), None) = (flush, &self.flushed) {
            return Need::Flush(flush);
        }
        let Some(request) = request else {
            return Need::Done;
        };
        match (&self.archived, &self.summary) {
            (None, _) => Need::Archive(saves),
            (Some(outcomes), None) if outcomes.iter().all(|o| *o == Outcome::Saved) => {
                Need::Summarize(request)
            }
            _ => Need::Done,
        }
    }

    /// Takes the driver's answer. An event the fold did not ask for is ignored.
    pub fn handle(&mut self, event: Event) {
        match event {
            Event::Flushed(outcome) => self.flushed = Some(outcome),
            Event::Archived(outcomes) => self.archived = Some(outcomes),
            Event::Summarized(summary) => self.summary = Some(summary),
            Event::Saved(_) => {}
        }
    }

    /// The archive's outcomes so far (none before [`Event::Archived`]).
    pub fn archived(&self) -> &[Outcome] {
        self.archived.as_deref().unwrap_or_default()
    }

    /// What the driver answered, for the fold's finish: a summary never asked for is
    /// [`SummaryOutcome::NotCalled`].
    pub fn take(&mut self) -> Answers {
        (
            self.archived.take().unwrap_or_default(),
            self.summary.take().unwrap_or(SummaryOutcome::NotCalled),
            self.flushed.take(),
        )
    }
}

/// An offload of a conversation as a machine: its saves, then nothing.
#[derive(Clone, Debug)]
pub struct Offloading {
    plan: OffloadPlan,
    answered: Option<Vec<Outcome>>,
}

impl From<OffloadPlan> for Offloading {
    fn from(plan: OffloadPlan) -> Self {
        Offloading {
            plan,
            answered: None,
        }
    }
}

impl Machine for Offloading {
    type Output = OffloadedMessages;

    fn next(&self) -> Need<'_> {
        match &self.answered {
            None if !self.plan.is_empty() => Need::Saves(self.plan.saves().collect()),
            _ => Need::Done,
        }
    }

    /// Takes the saves' outcomes ([`Event::Saved`]).
    fn handle(&mut self, event: Event) {
        if let Event::Saved(outcomes) = event {
            self.answered = Some(outcomes);
        }
    }

    /// The offloads whose save was confirmed, made.
    fn done(self, _: &mut Counter) -> OffloadedMessages {
        self.plan.apply(&self.answered.unwrap_or_default())
    }
}

/// The offload of one result as a machine: its save (when the result is to be offloaded),
/// then nothing.
#[derive(Clone, Debug)]
pub struct ResultOffloading {
    plan: ResultPlan,
    answered: Option<Outcome>,
}

impl From<ResultPlan> for ResultOffloading {
    fn from(plan: ResultPlan) -> Self {
        ResultOffloading {
            plan,
            answered: None,
        }
    }
}

impl Machine for ResultOffloading {
    type Output = OffloadedResult;

    fn next(&self) -> Need<'_> {
        match (self.plan.save(), &self.answered) {
            (Some(save), None) => Need::Saves(vec![save]),
            _ => Need::Done,
        }
    }

    /// Takes the save's outcome ([`Event::Saved`]).
    fn handle(&mut self, event: Event) {
        if let Event::Saved(outcomes) = event {
            let none = || Outcome::Failed("the save has no outcome".to_owned());
            self.answered = Some(outcomes.into_iter().next().unwrap_or_else(none));
        }
    }

    /// The result, the pointer in its place when its save was confirmed.
    fn done(self, _: &mut Counter) -> OffloadedResult {
        self.plan.apply(self.answered.as_ref())
    }
}
