//! A planned compaction finished: the fold's summary checked and pinned ([`crate::context::fold`]),
//! the marker written in place of the span and recorded as an overlay; or the conversation as it
//! was, with where and why it failed.

use super::*;

impl CompactPlan {
    /// Applies the compaction: checks the summary and writes the marker, or hands the
    /// conversation back as it was with the reason. `archive` holds one outcome per save.
    pub fn finish(
        mut self,
        archive: &[Outcome],
        summary: SummaryOutcome,
        flushed: Option<FlushOutcome>,
        counter: &mut Counter,
    ) -> Compacted {
        let flush = match (self.flush.take(), flushed) {
            (Some(request), Some(outcome)) => {
                self.state_changed = true;
                Some(flush::record(&request, outcome, &mut self.state))
            }
            _ => None,
        };
        let Some(work) = self.work.take() else {
            return self.unchanged(flush);
        };
        let failures = self.saves().failures(archive);
        // NOTE: the archive and the request went to the host; what follows needs neither,
        // and on a 10 MB history they hold as much memory as the history again.
        self.request = None;
        self.archive = None;
        if let Some(reason) = fold::archive_failed(&failures, "nothing was replaced") {
            let mut out = self.failed(Phase::Archive, reason, flush);
            out.report.failures = failures;
            return out;
        }
        let measure = Measure::for_model(self.options.model.as_deref());
        let span = span_of(&self.conversation, &work);
        let tail = tail_of(&self.conversation, &work);
        let messages = self.conversation.messages();
        // what the replaced messages count: with a message cut at a step, all of it but the
        // rest that stays
        let replaced = match &tail {
            Some(rest) => sum(&self.per_message, work.head, work.split + 1).saturating_sub(
                single_count(rest, &self.conversation, &self.options, &measure, counter),
            ),
            None => sum(&self.per_message, work.head, work.split),
        };
        let first_request = work
            .first_request
            .and_then(|i| messages.get(i))
            .and_then(|m| m.parts().first())
            .filter(|p| p.kind() == PartKind::Text)
            .and_then(|p| p.text());
        let kept_from = work.split + usize::from(tail.is_some());
        let folding = Folding {
            span: &span,
            kept: (tail.iter())
                .chain(messages.get(kept_from..).unwrap_or_default())
                .collect(),
            task: first_request,
            // NOTE: the task goes into the summary only when it is summarized; kept verbatim
            // ahead of the marker, a copy in the summary would only take its room.
            heuristic_task: first_request.filter(|_| work.first_summarized.is_some()),
            previous: work.previous.as_ref().map(|p| p.summary.as_str()),
            replaced,
            bound: None,
            heuristic_tokens: self.options.target_tokens,
            max_pinned: self.options.max_pinned,
        };
        let fold::Summary {
            text: summary,
            heuristic,
            mut pinned,
            ..
        } = match fold::summarize(&folding, summary, &measure) {
            Ok(summary) => summary,
            Err((phase, reason)) => return self.failed(phase, reason, flush),
        };
        // the marker, and the conversation with it in place of the span
        let mut marker = CompactionMarker {
            number: self.number,
            time: self.options.now.clone(),
            archived_messages: self.archived,
            tokens_before: self.total,
            tokens_after: self.total,
            head: work.head as u64,
            key: crate::context::archive::archive_key(&self.options.session_id, &self.name),
            iterations: None,
            summary,
        };
        let Some(probe) = marker_message(&self.conversation, &marker, work.shape, &work.lead)
        else {
            return self.failed(
                Phase::Check,
                "the marker could not be written in this format".to_owned(),
                flush,
            );
        };
        let marker_tokens =
            single_count(&probe, &self.conversation, &self.options, &measure, counter);
        // NOTE: a marker that costs as much as what it replaces (a few short messages) saves
        // nothing and takes their exact words from the model's view: not made.
        if marker_tokens >= replaced {
            return self.failed(
                Phase::Check,
                format!(
                    "the marker ({marker_tokens} tokens) would not be smaller than the {replaced} tokens it replaces"
                ),
                flush,
            );
        }
        marker.tokens_after = self.total.saturating_sub(replaced) + marker_tokens;
        let Some(marker_msg) = marker_message(&self.conversation, &marker, work.shape, &work.lead)
        else {
            return self.failed(
                Phase::Check,
                "the marker could not be written in this format".to_owned(),
                flush,
            );
        };
        let summary_tokens = measure.tokens(&marker.summary);
        let to_part = tail.is_some().then(|| match self.tail_of {
            Some((at, input, before)) if at == work.split => (input, before + work.split_part),
            _ => (input_index(&self.origin, work.split), work.split_part),
        });
        let has_tail = tail.is_some();
        let mut conversation = self.conversation;
        conversation.messages_mut().splice(
            work.head..kept_from,
            std::iter::once(marker_msg).chain(tail),
        );
        let origin: Vec<Option<usize>> = self
            .origin
            .get(..work.head)
            .unwrap_or_default()
            .iter()
            .copied()
            .chain(std::iter::once(None))
            .chain(has_tail.then_some(None))
            .chain(
                self.origin
                    .get(kept_from..)
                    .unwrap_or_default()
                    .iter()
                    .copied(),
            )
            .collect();
        let span_in_input = Span {
            from: span_start(&self.origin, work.head),
            to: to_part.map_or_else(|| input_index(&self.origin, work.split), |(to, _)| to),
            to_part: to_part.map(|(_, part)| part),
        };
        self.state.push(Overlay {
            marker: CompactionMarker {
                summary: String::new(),
                ..marker.clone()
            },
            summary: marker.summary.clone(),
            shape: work.shape,
            end: self.end,
            end_part: self.end_part,
            cuts: std::mem::take(&mut self.cuts),
            chain: self.chain_end.map(Chain::to_hex),
        });
        let report = CompactReport {
            outcome: CompactOutcome::Compacted,
            reason: None,
            phase: None,
            reapplied: self.reapplied,
            span: Some(span_in_input),
            tokens_before: self.total,
            tokens_after: marker.tokens_after,
            replaced_tokens: replaced,
            summary_tokens,
            heuristic,
            pinned: std::mem::take(&mut pinned),
            first_request_summarized: work.first_summarized.is_some(),
            estimated: self.estimated,
            failures: Vec::new(),
            flush,
        };
        Compacted {
            conversation,
            origin,
            marker: Some(MarkerInfo::from(&marker)),
            report,
            state: Some(self.state),
        }
    }

    /// The conversation as planned (with a re-applied compaction, if any), unchanged.
    pub(super) fn unchanged(self, flush: Option<FlushReport>) -> Compacted {
        let outcome = if self.reapplied.is_some() {
            CompactOutcome::Reapplied
        } else {
            CompactOutcome::Unchanged
        };
        let mut report = CompactReport::unchanged(outcome, self.reason.clone(), self.total);
        report.reapplied = self.reapplied;
        report.estimated = self.estimated;
        report.flush = flush;
        let marker = self
            .conversation
            .messages()
            .iter()
            .rev()
            .find_map(marker_of)
            .map(|m| MarkerInfo::from(&m));
        Compacted {
            state: self.state_changed.then_some(self.state),
            conversation: self.conversation,
            origin: self.origin,
            marker,
            report,
        }
    }

    /// A failure: the conversation as planned (a re-applied compaction stays: it is the
    /// stored summary of the same messages), the reason, and the flush if one ran.
    pub(super) fn failed(
        self,
        phase: Phase,
        reason: String,
        flush: Option<FlushReport>,
    ) -> Compacted {
        let mut out = self.unchanged(flush);
        out.report.outcome = CompactOutcome::Failed;
        out.report.phase = Some(phase);
        out.report.reason = Some(reason);
        out
    }
}

/// The input index of planned message `at`: the first message from `at` on that is the
/// input's own, or one past the last input message.
pub(super) fn input_index(origin: &[Option<usize>], at: usize) -> usize {
    origin
        .get(at..)
        .unwrap_or_default()
        .iter()
        .flatten()
        .next()
        .copied()
        .unwrap_or_else(|| origin.iter().flatten().max().map_or(0, |m| m + 1))
}

/// The input index where planned message `at` starts: its own, or when it is a re-applied
/// marker (not the input's) the first input message it stands for, after the last kept one.
pub(super) fn span_start(origin: &[Option<usize>], at: usize) -> usize {
    match origin.get(at) {
        Some(Some(i)) => *i,
        _ => origin
            .get(..at)
            .unwrap_or_default()
            .iter()
            .flatten()
            .last()
            .map_or(0, |i| i + 1),
    }
}
