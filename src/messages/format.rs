//! The formats a conversation comes in, and the options of reading one.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A message format: the JSON shape one SDK uses for a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Format {
    /// OpenAI Chat Completions (`messages` of the `/v1/chat/completions` request).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages (`messages`, and `system`, of the `/v1/messages` request).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Vercel AI SDK `ModelMessage` (v5; also the v4 `args`/`result` names), and `UIMessage`
    /// (what `useChat` holds: `parts` instead of `content`).
    #[serde(rename = "aisdk", alias = "ai-sdk")]
    AiSdk,
}

impl Format {
    /// Every format, in the order detection breaks ties.
    pub const ALL: [Format; 3] = [Format::OpenAi, Format::Anthropic, Format::AiSdk];

    /// The name used in options and reports: `openai`, `anthropic` or `aisdk`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::AiSdk => "aisdk",
        }
    }

    /// The format a name in options means (`ai-sdk` also reads as `aisdk`).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "ai-sdk" => Some(Format::AiSdk),
            _ => Format::ALL.into_iter().find(|f| f.name() == name),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Options for reading, validating and repairing messages. From JS: `{ format?, allowPendingCalls? }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MessagesOptions {
    /// The input's format; when absent it is detected ([`detect_format`]), and plain
    /// conversations that every format reads alike are read as OpenAI.
    pub format: Option<Format>,
    /// Accept tool calls without results when only results follow them (the host is about to
    /// run the tools). Default `false`.
    pub allow_pending_calls: bool,
}
