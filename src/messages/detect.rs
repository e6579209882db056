//! Which format a conversation is in, from the fields only one format uses.

use serde_json::Value;

use super::format::Format;

/// The format of `input` (a message array, or an object with `messages`), from the fields only
/// one format has; `None` when nothing tells them apart (plain string contents), in which case
/// every format reads the input the same way and parsing uses OpenAI.
///
/// Each telling field is a vote and the most votes win; ties go to OpenAI, then Anthropic.
///
/// ```
/// use context_keeper::messages::{detect_format, Format};
/// let anthropic = serde_json::json!([{"role": "assistant", "content": [
///     {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]}]);
/// assert_eq!(detect_format(&anthropic), Some(Format::Anthropic));
/// assert_eq!(detect_format(&serde_json::json!([{"role": "user", "content": "hi"}])), None);
/// ```
pub fn detect_format(input: &Value) -> Option<Format> {
    let mut votes = FormatVotes::default();
    let messages = match input {
        Value::Array(list) => list,
        Value::Object(envelope) => {
            votes.add(FormatVotes::of_envelope(envelope));
            match envelope.get("messages") {
                Some(Value::Array(list)) => list,
                _ => return votes.winner(),
            }
        }
        _ => return None,
    };
    for message in messages {
        votes.add(FormatVotes::of_message(message));
    }
    votes.winner()
}

/// The evidence for each format, summed over a conversation's parts; [`detect_format`] in
/// pieces, for callers that read the messages one at a time and remember each one's votes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FormatVotes {
    openai: u32,
    anthropic: u32,
    aisdk: u32,
}

impl FormatVotes {
    /// The votes of a request object's own fields (its `messages` aside): its `system`, the
    /// shape of its `tools` and its tool choice.
    pub fn of_envelope(envelope: &serde_json::Map<String, Value>) -> FormatVotes {
        let mut votes = FormatVotes::default();
        match envelope.get("system") {
            // NOTE: a top-level system is Anthropic's shape (AI SDK's generateText takes one
            // too, but only as a string; OpenAI's Chat Completions has none). An object is no
            // format's: it gets no vote, and reading it names it.
            Some(Value::Array(_)) => votes.anthropic += 2,
            Some(Value::String(_)) => votes.anthropic += 1,
            _ => {}
        }
        match envelope.get("tools") {
            // NOTE: the AI SDK keys its tools by name (which no other format does, so it
            // outweighs a string `system`, which the AI SDK has too); OpenAI wraps each in
            // `function` (Chat) or types it `function` (Responses); Anthropic gives each an
            // `input_schema`.
            Some(Value::Object(map)) if !map.is_empty() => votes.aisdk += 2,
            Some(Value::Array(list)) => {
                let has = |key: &str| list.iter().any(|t| t.get(key).is_some());
                let typed = |ty: &str| {
                    (list.iter()).any(|t| t.get("type").and_then(Value::as_str) == Some(ty))
                };
                if has("function") || typed("function") {
                    votes.openai += 1;
                }
                if has("input_schema") {
                    votes.anthropic += 1;
                }
            }
            _ => {}
        }
        match envelope.get("tool_choice") {
            Some(Value::String(_)) => votes.openai += 1,
            Some(Value::Object(choice)) => match choice.get("type").and_then(Value::as_str) {
                Some("auto" | "any" | "tool" | "none") => votes.anthropic += 1,
                Some(_) => votes.openai += 1,
                None => {}
            },
            _ => {}
        }
        if envelope.contains_key("toolChoice") {
            votes.aisdk += 1;
        }
        votes
    }

    /// The votes of one message.
    pub fn of_message(message: &Value) -> FormatVotes {
        let mut votes = FormatVotes::default();
        let Value::Object(obj) = message else {
            return votes;
        };
        match obj.get("role").and_then(Value::as_str) {
            Some("developer" | "function") => votes.openai += 1,
            Some("tool") => {
                if obj.contains_key("tool_call_id") {
                    votes.openai += 1;
                }
                if obj.get("content").is_some_and(Value::is_array) {
                    votes.aisdk += 1;
                }
            }
            _ => {}
        }
        if obj.contains_key("tool_calls") || obj.contains_key("function_call") {
            votes.openai += 1;
        }
        if obj.contains_key("providerOptions") || obj.contains_key("experimental_providerMetadata")
        {
            votes.aisdk += 1;
        }
        // NOTE: `parts` and no `content`: an AI SDK UIMessage, as `useChat` holds it.
        if super::aisdk::is_ui_message(obj) {
            votes.aisdk += 1;
        }
        let Some(Value::Array(parts)) = obj.get("content") else {
            return votes;
        };
        for part in parts {
            let Value::Object(part) = part else { continue };
            if part.contains_key("providerOptions") {
                votes.aisdk += 1;
            }
            match part.get("type").and_then(Value::as_str) {
                Some(
                    "tool_use"
                    | "tool_result"
                    | "thinking"
                    | "redacted_thinking"
                    | "document"
                    | "server_tool_use"
                    | "web_search_tool_result"
                    | "search_result"
                    // NOTE: a `compaction` block inside a message's content is Anthropic's;
                    // OpenAI's compaction item is a role-less item of its own.
                    | "compaction",
                ) => votes.anthropic += 1,
                Some("image_url" | "input_audio" | "refusal") => votes.openai += 1,
                Some("tool-call" | "tool-result" | "reasoning" | "redacted-reasoning") => {
                    votes.aisdk += 1
                }
                Some("image") if part.contains_key("source") => votes.anthropic += 1,
                Some("image") if part.contains_key("image") => votes.aisdk += 1,
                Some("file") if part.contains_key("file") => votes.openai += 1,
                Some("file") if part.contains_key("data") || part.contains_key("mediaType") => {
                    votes.aisdk += 1
                }
                _ => {}
            }
        }
        // NOTE: Anthropic's messages are only `user` and `assistant`: a block type of its in a
        // message of another role (a `tool` message holding a stray `tool_use`) is no vote
        // for a format that cannot read that message.
        if !matches!(
            obj.get("role").and_then(Value::as_str),
            Some("user" | "assistant")
        ) {
            votes.anthropic = 0;
        }
        votes
    }

    /// Adds `other`'s votes to these.
    pub fn add(&mut self, other: FormatVotes) {
        self.openai = self.openai.saturating_add(other.openai);
        self.anthropic = self.anthropic.saturating_add(other.anthropic);
        self.aisdk = self.aisdk.saturating_add(other.aisdk);
    }

    /// The format with the most votes (ties: OpenAI, then Anthropic); `None` without any.
    pub fn winner(&self) -> Option<Format> {
        let best = self.openai.max(self.anthropic).max(self.aisdk);
        if best == 0 {
            None
        } else if self.openai == best {
            Some(Format::OpenAi)
        } else if self.anthropic == best {
            Some(Format::Anthropic)
        } else {
            Some(Format::AiSdk)
        }
    }
}
