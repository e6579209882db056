//! Counting a list of messages that a host holds as objects of its own (JS objects, in the
//! bindings), reading as few of them as it can: what a host remembers of the messages it has
//! read ([`Memo`], [`Learnt`]) and the count that uses it ([`ListCount`]).
//!
//! The host recognises a message object it has read before and that has not changed since (the
//! bindings keep a `WeakMap` and a snapshot of each object); it hands such a message over as
//! [`Listed::Known`], with what was learnt of it, and every other message read
//! ([`Listed::read`]). The count takes a known message's tokens from the count cache by key;
//! only when the cache let that count go, or the list is read in another format than the
//! message was, does it ask the host for the message's value ([`ListCount::advance`] returns
//! its index, [`ListCount::supply`] takes the value). So the count is sans-IO: it never calls
//! the host, and the host holds no lock of the counter while it reads a message (its getters
//! may call back into the package).
//!
//! The count is the one [`Counter::count_bounded`] makes of the same list, byte for byte.

use std::collections::VecDeque;

use serde_json::{Map, Value};

use super::cache::MessageKey;
use super::conversation::{messages_options, CountMessagesError, Counting, MessagesCount};
use super::counter::Counter;
use super::memo::{Learnt, Memo};
use super::options::CountMessagesOptions;
use crate::messages::{self, parse_messages_value, Format, FormatVotes, Role};

/// A message of the list as the host hands it over.
#[derive(Clone, Debug, PartialEq)]
pub enum Listed {
    /// Read before (its memo id) and unchanged since: read again only if its count is needed
    /// and the cache no longer has it.
    Known(u64, Learnt),
    /// Read now: its JSON value, its votes, and its memo id when the host will recognise it.
    Read {
        id: Option<u64>,
        votes: FormatVotes,
        value: Value,
    },
}

impl Listed {
    /// The message with memo id `id`, if the memo still knows it.
    pub fn recall(id: u64, memo: &mut Memo) -> Option<Listed> {
        memo.learnt(id).map(|learnt| Listed::Known(id, learnt))
    }

    /// A message read now; with `memo`, it is remembered there (a host that can recognise the
    /// object later keeps [`Listed::id`] with it).
    pub fn read(value: Value, memo: Option<&mut Memo>) -> Listed {
        let votes = FormatVotes::of_message(&value);
        let id = memo.map(|memo| {
            let counted = None;
            memo.remember(Learnt { votes, counted })
        });
        Listed::Read { id, votes, value }
    }

    /// Its memo id, if it has one.
    pub fn id(&self) -> Option<u64> {
        match self {
            Listed::Known(id, _) => Some(*id),
            Listed::Read { id, .. } => *id,
        }
    }

    fn votes(&self) -> FormatVotes {
        match self {
            Listed::Known(_, learnt) => learnt.votes,
            Listed::Read { votes, .. } => *votes,
        }
    }
}

/// A count of a listed conversation in progress: call [`ListCount::advance`] until it
/// returns `None`, giving it each message it asks for, then [`ListCount::finish`].
///
/// ```
/// use context_keeper::counting::{Counter, CountMessagesOptions, ListCount, Listed};
/// use serde_json::json;
/// let mut counter = Counter::new();
/// let hello = json!({"role": "user", "content": "hello world"});
/// let options = CountMessagesOptions::default();
/// // First count: the message is read, and remembered.
/// let listed = vec![Listed::read(hello.clone(), Some(counter.memo_mut()))];
/// let id = listed[0].id().unwrap();
/// let mut count = ListCount::start(&mut counter, None, listed, &options, None).unwrap();
/// assert_eq!(count.advance(&mut counter).unwrap(), None);
/// assert_eq!(count.finish().0.total, 9);
/// // Again: known and unchanged, it is counted by key, without its value.
/// let listed = vec![Listed::recall(id, counter.memo_mut()).unwrap()];
/// let mut count = ListCount::start(&mut counter, None, listed, &options, None).unwrap();
/// assert_eq!(count.advance(&mut counter).unwrap(), None);
/// assert_eq!(count.finish().0.total, 9);
/// ```
#[derive(Debug)]
pub struct ListCount {
    counting: Counting,
    format: Format,
    listed: VecDeque<Listed>,
    /// The index of the next message of `listed`.
    next: u32,
    /// The message asked for and not supplied yet: its id and votes.
    asked: Option<(u64, FormatVotes)>,
    /// Its value, once supplied.
    supplied: Option<Value>,
}

impl ListCount {
    /// Starts counting the list `listed`, in the request object `envelope` (its other fields:
    /// system prompt, model, tools) when there is one. The format is `options.format`, else
    /// the one the envelope and the messages vote for, else OpenAI's.
    ///
    /// # Errors
    /// As [`Counter::start`].
    pub fn start(
        counter: &mut Counter,
        envelope: Option<Map<String, Value>>,
        listed: Vec<Listed>,
        options: &CountMessagesOptions,
        stop_above: Option<u64>,
    ) -> Result<ListCount, CountMessagesError> {
        let mut votes = envelope
            .as_ref()
            .map(FormatVotes::of_envelope)
            .unwrap_or_default();
        for message in &listed {
            votes.add(message.votes());
        }
        let format = options.format.or(votes.winner()).unwrap_or(Format::OpenAi);
        // NOTE: the request object without its messages: its system prompt, model and tools.
        let head = match envelope {
            None => Value::Array(Vec::new()),
            Some(mut envelope) => {
                envelope.insert("messages".to_owned(), Value::Array(Vec::new()));
                Value::Object(envelope)
            }
        };
        let head = parse_messages_value(head, &messages_options(Some(format)))?;
        let counting = counter.start(&head, options, stop_above)?;
        Ok(ListCount {
            counting,
            format,
            listed: listed.into(),
            next: 0,
            asked: None,
            supplied: None,
        })
    }

    /// The format the list is read in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Counts on from the cache and the values at hand, learning into the counter's memo
    /// ([`Counter::memo_mut`]) what each message read taught. Returns the index of a message whose value it needs (hand it to
    /// [`ListCount::supply`], then call this again), or `None` when the count is done.
    ///
    /// # Errors
    /// A message that is not one of the format (the error names it: `messages[3].role`), or
    /// an encoding this build left out.
    pub fn advance(&mut self, counter: &mut Counter) -> Result<Option<u32>, CountMessagesError> {
        loop {
            let (id, votes, value) = match (self.asked, self.supplied.take()) {
                (Some(_), None) => return Ok(Some(self.next)),
                (Some((id, votes)), Some(value)) => {
                    self.asked = None;
                    (Some(id), votes, value)
                }
                (None, _) => {
                    // NOTE: past the limit the rest is still read (not counted): a later
                    // compaction block that drops what came before starts the count again.
                    let Some(message) = self.listed.pop_front() else {
                        return Ok(None);
                    };
                    match message {
                        Listed::Known(id, learnt) => {
                            if self.add_known(learnt.counted, counter) {
                                self.next += 1;
                                continue;
                            }
                            // NOTE: it still reads as it did, so it keeps its id; only its
                            // value is needed (for another format, or a count the cache let go).
                            self.asked = Some((id, learnt.votes));
                            return Ok(Some(self.next));
                        }
                        Listed::Read { id, votes, value } => (id, votes, value),
                    }
                }
            };
            let i = self.next;
            self.next += 1;
            let message = messages::parse_message(self.format, value)
                .map_err(|e| e.under(format_args!("messages[{i}]")))?;
            let key = self.counting.add(&message, counter.cache_mut())?;
            if let Some(id) = id {
                let counted = Some((self.format, message.role(), key));
                let memo = counter.memo_mut();
                memo.insert(id, Learnt { votes, counted });
                memo.keep_message(id, message);
            }
        }
    }

    /// Counts a known message by its key, if it was counted in this format and the cache
    /// still has it.
    fn add_known(
        &mut self,
        counted: Option<(Format, Role, MessageKey)>,
        counter: &mut Counter,
    ) -> bool {
        match counted {
            Some((read_as, role, key)) if read_as == self.format => {
                self.counting.add_known(role, key, counter.cache_mut())
            }
            _ => false,
        }
    }

    /// The value of the message [`ListCount::advance`] asked for (`Value::Null` where the host
    /// reads nothing, as `JSON.stringify` writes nothing for `undefined`).
    pub fn supply(&mut self, value: Value) {
        if self.asked.is_some() {
            self.supplied = Some(value);
        }
    }

    /// The count, and whether it stopped at the limit (it is then partial).
    pub fn finish(self) -> (MessagesCount, bool) {
        self.counting.finish(self.format)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::counting::MEMO_CAPACITY;
    use crate::messages::{parse_messages_value, MessagesOptions};

    /// Fixtures that are not conversations of any format, each with the reason; every other
    /// fixture must parse, so one the parser newly rejects fails the tests instead of being
    /// dropped from them.
    const EXPECTED_INVALID: &[(&str, &str)] = &[];

    /// Every conversation fixture but those of [`EXPECTED_INVALID`], which must fail to parse.
    fn fixtures() -> Vec<(String, Value)> {
        let dir = format!("{}/tests/data/messages", env!("CARGO_MANIFEST_DIR"));
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".input.json") {
                continue;
            }
            let value: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let parsed = parse_messages_value(value.clone(), &MessagesOptions::default());
            let invalid = EXPECTED_INVALID
                .iter()
                .find(|(n, _)| name == format!("{n}.input.json"));
            match (parsed, invalid) {
                (Ok(_), None) => out.push((name, value)),
                (Err(err), None) => panic!("{name} does not parse: {err}"),
                (Ok(_), Some((_, why))) => panic!("{name} parses, but is listed invalid: {why}"),
                (Err(_), Some(_)) => {}
            }
        }
        assert!(out.len() >= 10, "{} fixtures", out.len());
        out
    }

    /// The list and the request object around it, as the bindings split them.
    fn split(value: &Value) -> (Vec<Value>, Option<Map<String, Value>>) {
        match value {
            Value::Array(list) => (list.clone(), None),
            Value::Object(obj) => {
                let mut envelope = obj.clone();
                let Some(Value::Array(list)) = envelope.remove("messages") else {
                    panic!("no messages list");
                };
                (list, Some(envelope))
            }
            _ => panic!("not a conversation"),
        }
    }

    /// What the host would do: each message known when `ids` has its id, else read (and
    /// remembered into `ids`); returns the count and the indexes the count asked to read.
    fn count_listed(
        counter: &mut Counter,
        value: &Value,
        ids: &mut Vec<Option<u64>>,
        options: &CountMessagesOptions,
        stop_above: Option<u64>,
    ) -> Result<((MessagesCount, bool), Vec<u32>), CountMessagesError> {
        let (list, envelope) = split(value);
        ids.resize(list.len(), None);
        let mut listed = Vec::new();
        for (message, id) in list.iter().zip(ids.iter_mut()) {
            let known = id.and_then(|id| Listed::recall(id, counter.memo_mut()));
            listed.push(known.unwrap_or_else(|| {
                let read = Listed::read(message.clone(), Some(counter.memo_mut()));
                *id = read.id();
                read
            }));
        }
        let mut count = ListCount::start(counter, envelope, listed, options, stop_above)?;
        let mut asked = Vec::new();
        while let Some(i) = count.advance(counter)? {
            asked.push(i);
            count.supply(list[i as usize].clone());
        }
        Ok((count.finish(), asked))
    }

    fn whole(
        counter: &mut Counter,
        value: &Value,
        options: &CountMessagesOptions,
        stop_above: Option<u64>,
    ) -> (MessagesCount, bool) {
        let conv = parse_messages_value(
            value.clone(),
            &crate::counting::messages_options(options.format),
        )
        .unwrap();
        counter.count_bounded(&conv, options, stop_above).unwrap()
    }

    #[test]
    fn a_listed_count_is_the_count_of_the_whole_conversation() {
        for (name, value) in fixtures() {
            for model in [None, Some("gpt-4o"), Some("claude-sonnet-4-5")] {
                let options = CountMessagesOptions {
                    model: model.map(str::to_owned),
                    ..CountMessagesOptions::default()
                };
                let expected = whole(&mut Counter::new(), &value, &options, None);
                let mut counter = Counter::new();
                let mut ids = Vec::new();
                let (first, asked) =
                    count_listed(&mut counter, &value, &mut ids, &options, None).unwrap();
                assert_eq!(first, expected, "{name} {model:?}");
                assert!(asked.is_empty(), "{name}: read messages are not asked for");
                // Again, every message known: counted by key, none read.
                let (second, asked) =
                    count_listed(&mut counter, &value, &mut ids, &options, None).unwrap();
                assert_eq!(second, expected, "{name} {model:?}, again");
                assert!(asked.is_empty(), "{name}: {asked:?} asked for");
            }
        }
    }

    #[test]
    fn a_known_message_is_read_again_when_its_count_is_gone_or_another_format_reads_it() {
        let value = json!([
            {"role": "user", "content": "hello world"},
            {"role": "assistant", "content": "hi there"},
            {"role": "user", "content": "bye"},
        ]);
        let options = CountMessagesOptions::default();
        let expected = whole(&mut Counter::new(), &value, &options, None);
        let mut counter = Counter::with_capacity(2);
        let mut ids = Vec::new();
        count_listed(&mut counter, &value, &mut ids, &options, None).unwrap();
        // The cache (2 entries) let the first count go; the memo still knows every message.
        let (again, asked) = count_listed(&mut counter, &value, &mut ids, &options, None).unwrap();
        assert_eq!(again, expected);
        assert!(asked.contains(&0), "{asked:?}");
        assert!(ids.iter().all(Option::is_some));
        // Read as Anthropic, every known message is read again, and counted as Anthropic's.
        let anthropic = CountMessagesOptions {
            format: Some(Format::Anthropic),
            ..CountMessagesOptions::default()
        };
        let expected = whole(&mut Counter::new(), &value, &anthropic, None);
        let mut counter = Counter::new();
        let mut ids = Vec::new();
        count_listed(&mut counter, &value, &mut ids, &options, None).unwrap();
        let (as_anthropic, asked) =
            count_listed(&mut counter, &value, &mut ids, &anthropic, None).unwrap();
        assert_eq!((as_anthropic, asked), (expected, vec![0, 1, 2]));
    }

    #[test]
    fn a_listed_count_stops_where_the_whole_one_does() {
        let (_, value) = fixtures().into_iter().next().unwrap();
        let options = CountMessagesOptions::default();
        let total = whole(&mut Counter::new(), &value, &options, None).0.total;
        for limit in [0, total / 3, total / 2, total - 1, total] {
            let expected = whole(&mut Counter::new(), &value, &options, Some(limit));
            let mut counter = Counter::new();
            let mut ids = Vec::new();
            let (first, _) =
                count_listed(&mut counter, &value, &mut ids, &options, Some(limit)).unwrap();
            let (second, _) =
                count_listed(&mut counter, &value, &mut ids, &options, Some(limit)).unwrap();
            assert_eq!((&first, &second), (&expected, &expected), "limit {limit}");
            assert_eq!(first.1, limit < total);
        }
    }

    #[test]
    fn errors_name_the_message_whether_read_at_once_or_on_request() {
        let options = CountMessagesOptions::default();
        let bad = json!([{"role": "user", "content": "ok"}, {"role": "wizard", "content": "x"}]);
        let err =
            count_listed(&mut Counter::new(), &bad, &mut Vec::new(), &options, None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("messages[1].role: unknown role"),
            "{err}"
        );
        // Known as an OpenAI message, then read on request as Anthropic's, which has no system role.
        let value = json!([{"role": "user", "content": "ok"}, {"role": "system", "content": "x"}]);
        let mut counter = Counter::new();
        let mut ids = Vec::new();
        count_listed(&mut counter, &value, &mut ids, &options, None).unwrap();
        let anthropic = CountMessagesOptions {
            format: Some(Format::Anthropic),
            ..CountMessagesOptions::default()
        };
        let err = count_listed(&mut counter, &value, &mut ids, &anthropic, None).unwrap_err();
        assert!(err.to_string().starts_with("messages[1].role:"), "{err}");
        // A request object's field of the wrong type is named too.
        let request = json!({"model": 4, "messages": []});
        let err = count_listed(
            &mut Counter::new(),
            &request,
            &mut Vec::new(),
            &options,
            None,
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("model: expected"), "{err}");
    }

    #[test]
    fn the_memo_is_bounded_and_never_gives_an_id_twice() {
        let mut memo = Memo::default();
        let first = memo.remember(Learnt::default());
        for _ in 0..MEMO_CAPACITY * 2 {
            memo.remember(Learnt::default());
        }
        assert!(memo.len() <= MEMO_CAPACITY, "{}", memo.len());
        assert_eq!(memo.learnt(first), None);
        let kept = memo.remember(Learnt::default());
        memo.clear();
        assert!(memo.is_empty());
        assert_eq!(memo.learnt(kept), None);
        assert!(memo.remember(Learnt::default()) > kept);
    }
}
