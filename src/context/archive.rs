//! The archive of a fold: the messages a summary replaces, stored before anything is replaced
//! (DESIGN.md, "Never lose data"). One record per fold under
//! `[namespace, sessionId, "archive", name]` (its JSON, which [`read_archive`] reads back), and
//! the same span as a Markdown transcript under `name.md`. A record names the previous fold's
//! archive, so the chain of archives holds every message a session folded, in order.

use std::cell::Cell;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(target_arch = "wasm32")]
use tsify::Tsify;

use super::text::ByteCount;
use super::{transcript, Outcome, Save, NAMESPACE};
use crate::messages::{Format, Message};

/// The kind of key archives are stored under.
pub const KIND: &str = "archive";

/// The store key of a compaction's archive (its JSON; the transcript is the same name with
/// `.md`).
pub fn archive_key(session_id: &str, name: &str) -> Vec<String> {
    vec![
        NAMESPACE.to_owned(),
        session_id.to_owned(),
        KIND.to_owned(),
        name.to_owned(),
    ]
}

/// The prefix of a session's archives.
pub fn archive_prefix(session_id: &str) -> Vec<String> {
    vec![NAMESPACE.to_owned(), session_id.to_owned(), KIND.to_owned()]
}

/// Messages that serialize as the list of their JSON ([`Message::to_value`]), one message at
/// a time: the JSON of a whole span is never built as one tree (for a 10 MB history, that tree
/// held as much memory again as the history).
#[derive(Clone, Debug, Default)]
pub struct MessageValues(Vec<Message>);

impl MessageValues {
    /// The messages (shared, not copied).
    pub fn new(messages: Vec<Message>) -> MessageValues {
        MessageValues(messages)
    }

    /// Each message's JSON.
    pub fn to_values(&self) -> Vec<Value> {
        self.0.iter().map(Message::to_value).collect()
    }

    /// The messages.
    pub fn as_slice(&self) -> &[Message] {
        &self.0
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for MessageValues {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && (self.0.iter().zip(&other.0)).all(|(a, b)| a == b || a.to_value() == b.to_value())
    }
}

impl Serialize for MessageValues {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(Message::to_value))
    }
}

/// An archive as it is written: what [`ArchiveRecord`] reads back, its messages serialized one
/// at a time.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ArchiveOut<'a> {
    pub version: u32,
    pub number: u32,
    pub format: Format,
    pub previous: Option<&'a [String]>,
    pub messages: &'a MessageValues,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
}

impl ArchiveOut<'_> {
    /// The archive's JSON, in a buffer of its exact size: a first pass measures it (each
    /// message's JSON made and dropped), so the buffer never grows by doubling, which held up
    /// to three times the archive's size at once.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut len = ByteCount(0);
        if serde_json::to_writer(&mut len, self).is_err() {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(len.0);
        match serde_json::to_writer(&mut out, self) {
            Ok(()) => out,
            Err(_) => Vec::new(),
        }
    }
}

/// What a compaction's (or a rolling fold's) archive saves are made from: their keys and the
/// span.
#[derive(Clone, Debug)]
pub(crate) struct ArchiveSpan {
    /// The JSON's key, then the Markdown transcript's.
    keys: [Vec<String>; 2],
    messages: MessageValues,
    /// The index of the span's first message in the conversation (the transcript's numbers).
    body_start: usize,
    number: u32,
    format: Format,
    previous: Option<Vec<String>>,
    continues: bool,
    /// The length of each save once made.
    made: [Cell<Option<usize>>; 2],
}

impl ArchiveSpan {
    /// The saves of `messages` (the span, whose first is message `body_start`) under `key` (the
    /// JSON's; the transcript's is the same with `.md`).
    pub(crate) fn new(
        key: Vec<String>,
        messages: MessageValues,
        body_start: usize,
        record: (u32, Format, Option<Vec<String>>, bool),
    ) -> ArchiveSpan {
        let (number, format, previous, continues) = record;
        let mut md = key.clone();
        if let Some(name) = md.last_mut() {
            name.push_str(".md");
        }
        ArchiveSpan {
            keys: [key, md],
            messages,
            body_start,
            number,
            format,
            previous,
            continues,
            made: Default::default(),
        }
    }

    fn make(&self, i: usize) -> Option<Save> {
        let key = self.keys.get(i)?.clone();
        let bytes = match i {
            0 => ArchiveOut {
                version: 1,
                number: self.number,
                format: self.format,
                previous: self.previous.as_deref(),
                messages: &self.messages,
                continues: self.continues,
            }
            .to_bytes(),
            _ => transcript::render(self.messages.as_slice(), self.body_start, None).into_bytes(),
        };
        if let Some(made) = self.made.get(i) {
            made.set(Some(bytes.len()));
        }
        Some(Save { key, bytes })
    }
}

/// A compaction's archive saves: its JSON (what [`read_archive`] reads), then its Markdown
/// transcript. Each is made when asked for ([`ArchiveSaves::make`], [`ArchiveSaves::iter`]),
/// so a driver that stores each one (or hands it across to JS) before it asks for the next
/// never holds both copies of the span at once: for a 10 MB history, 7 MB each.
#[derive(Clone, Copy, Debug)]
pub struct ArchiveSaves<'a>(Option<&'a ArchiveSpan>);

impl<'a> ArchiveSaves<'a> {
    pub(crate) fn new(span: Option<&'a ArchiveSpan>) -> Self {
        ArchiveSaves(span)
    }

    /// How many: 2, or 0 when there is nothing to compact.
    pub fn len(&self) -> usize {
        self.0.map_or(0, |a| a.keys.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Save `i`'s key.
    pub fn key(&self, i: usize) -> Option<&'a [String]> {
        self.0?.keys.get(i).map(Vec::as_slice)
    }

    /// Save `i`, made now.
    pub fn make(&self, i: usize) -> Option<Save> {
        self.0?.make(i)
    }

    /// Each save, in order, made as the iterator reaches it.
    pub fn iter(&self) -> impl Iterator<Item = Save> + 'a {
        let saves = *self;
        (0..saves.len()).filter_map(move |i| saves.make(i))
    }

    /// Every save, made now.
    pub fn to_vec(&self) -> Vec<Save> {
        self.iter().collect()
    }

    /// The saves that `outcomes` (one per save, in order) do not confirm, with the reason.
    pub fn failures(&self, outcomes: &[Outcome]) -> Vec<SaveFailure> {
        (0..self.len())
            .filter_map(|i| {
                let reason = match outcomes.get(i) {
                    Some(Outcome::Saved) => return None,
                    Some(Outcome::Failed(reason)) => reason.clone(),
                    None => "the save has no outcome".to_owned(),
                };
                Some(SaveFailure {
                    key: self.key(i).unwrap_or_default().to_vec(),
                    reason,
                })
            })
            .collect()
    }

    /// Save `i`'s length in bytes, once it was made (a save never made was never stored).
    pub fn made_len(&self, i: usize) -> Option<usize> {
        self.0?.made.get(i)?.get()
    }
}

/// The archive as stored (JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveRecord {
    /// 1.
    pub version: u32,
    /// The compaction's number.
    pub number: u32,
    /// The messages' format.
    pub format: Format,
    /// The key of the previous compaction's archive, whose messages come before these.
    pub previous: Option<Vec<String>>,
    /// The archived messages, as they were.
    pub messages: Vec<Value>,
    /// Whether the first message continues the previous archive's last one: an AI SDK
    /// `UIMessage` cut at a step by both compactions, whose next parts these are
    /// (`readArchive` joins them back into one message).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
}

/// An archive write that failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(Tsify))]
#[serde(rename_all = "camelCase")]
pub struct SaveFailure {
    /// The key.
    pub key: Vec<String>,
    /// Why.
    pub reason: String,
}

/// Reads a stored archive.
pub fn read_archive(bytes: &[u8]) -> Option<ArchiveRecord> {
    crate::json::from_bytes(bytes)
}

/// What [`read_archive`] reads of an archive but its messages, which are checked to be a list
/// of JSON values and skipped, not built: whether an archive is a record this version reads,
/// for a reader that parses its messages itself (the bindings hand the text to `JSON.parse`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // NOTE: the fields are what is checked; none is read.
struct ArchiveHead {
    version: u32,
    number: u32,
    format: Format,
    previous: Option<Vec<String>>,
    messages: Vec<serde::de::IgnoredAny>,
    #[serde(default)]
    continues: bool,
}

/// Whether `bytes` are an archive [`read_archive`] reads, without building its messages.
pub fn is_archive(bytes: &[u8]) -> bool {
    crate::json::from_bytes::<ArchiveHead>(bytes).is_some()
}
