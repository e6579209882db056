//! Messages as a readable Markdown transcript: what the summarizer reads (within a budget) and
//! what an archive keeps beside its JSON (whole).
//!
//! One section per message (`### 12. assistant`), its parts in order: text as it is, thinking
//! as a quote, tool calls and results as fenced blocks naming the tool and the call id, images
//! and files as a bracketed note. Nothing is parsed back from it: the archive's JSON is the
//! copy that round-trips.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

use super::text::{utf16_len, utf16_prefix, utf16_suffix, ByteCount};
use crate::messages::{Message, PartKind, Segment, ToolInput};

/// The shortest a long text is cut to when a transcript must fit a budget: head and tail of
/// half this each (UTF-16 units).
const MIN_PART_UNITS: usize = 400;

/// The transcript of `messages`, numbered from `first` (their index in the conversation).
/// With `budget` (UTF-16 units), long texts are cut to a head and a tail, shorter and shorter,
/// until the transcript fits; if even that is too long, messages from the middle are left out
/// with a note saying how many. Without it, everything is written whole.
pub fn render(messages: &[Message], first: usize, budget: Option<usize>) -> String {
    let Some(budget) = budget else {
        return render_with(messages, first, None);
    };
    let mut cap = budget;
    loop {
        if let Some(out) = render_within(messages, first, cap, budget) {
            return out;
        }
        if cap <= MIN_PART_UNITS {
            return elide_middle(messages, first, budget, cap);
        }
        cap = (cap / 2).max(MIN_PART_UNITS);
    }
}

/// Keeps whole sections from both ends (the start has the task, the end the latest state;
/// the end gets two thirds of the budget) and notes how many were left out between.
fn elide_middle(messages: &[Message], first: usize, budget: usize, cap: usize) -> String {
    let names = call_names(messages);
    let sections: Vec<String> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut out = String::new();
            section(&mut out, m, first + i, Some(cap), &names);
            out
        })
        .collect();
    let head_budget = budget / 3;
    let mut used = 0;
    let mut head = 0;
    for s in &sections {
        let n = utf16_len(s);
        if used + n > head_budget {
            break;
        }
        used += n;
        head += 1;
    }
    let mut tail = 0;
    for s in sections.iter().skip(head).rev() {
        let n = utf16_len(s);
        if used + n + 80 > budget {
            break;
        }
        used += n;
        tail += 1;
    }
    let left_out = sections.len() - head - tail;
    let mut out = String::new();
    for s in sections.iter().take(head) {
        out.push_str(s);
    }
    if left_out > 0 {
        let _ = writeln!(
            out,
            "[... {left_out} messages left out here to fit the budget ...]\n"
        );
    }
    for s in sections.iter().skip(head + left_out) {
        out.push_str(s);
    }
    out
}

/// Everything, whole, in a buffer of the exact size: a first pass measures each section
/// without keeping it, so the buffer of a 10 MB span's transcript never grows by doubling.
fn render_with(messages: &[Message], first: usize, cap: Option<usize>) -> String {
    let names = call_names(messages);
    let mut len = ByteCount(0);
    for (i, message) in messages.iter().enumerate() {
        section(&mut len, message, first + i, cap, &names);
    }
    let mut out = String::with_capacity(len.0);
    for (i, message) in messages.iter().enumerate() {
        section(&mut out, message, first + i, cap, &names);
    }
    out
}

/// The transcript with texts cut to `cap`, when it is no longer than `budget` UTF-16 units;
/// `None` as soon as it is longer (what was written so far dropped).
fn render_within(messages: &[Message], first: usize, cap: usize, budget: usize) -> Option<String> {
    let names = call_names(messages);
    let mut out = String::new();
    let mut units = 0;
    let mut one = String::new();
    for (i, message) in messages.iter().enumerate() {
        one.clear();
        section(&mut one, message, first + i, Some(cap), &names);
        units += utf16_len(&one);
        if units > budget {
            return None;
        }
        out.push_str(&one);
    }
    Some(out)
}

/// The tool name of each call id, for results that do not name their tool (OpenAI `tool`
/// messages).
fn call_names(messages: &[Message]) -> HashMap<&str, &str> {
    messages
        .iter()
        .flat_map(Message::parts)
        .filter(|p| p.kind() == PartKind::ToolCall)
        .filter_map(|p| Some((p.call_id()?, p.tool_name()?)))
        .collect()
}

/// `text`, or its head and tail of `cap / 2` units each around a note of what was cut.
fn capped(text: &str, cap: Option<usize>) -> std::borrow::Cow<'_, str> {
    let Some(cap) = cap else {
        return text.into();
    };
    let len = utf16_len(text);
    if len <= cap {
        return text.into();
    }
    let half = cap / 2;
    let head = text.get(..utf16_prefix(text, half)).unwrap_or_default();
    let tail = text.get(utf16_suffix(text, half)..).unwrap_or_default();
    format!(
        "{head}\n[... {} characters cut ...]\n{tail}",
        len - 2 * half
    )
    .into()
}

/// A fence longer than any run of backticks in `text`.
fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

fn fenced(out: &mut impl Write, text: &str) {
    let f = fence(text);
    let _ = writeln!(out, "{f}\n{text}\n{f}");
}

fn media_note(raw: &Value) -> String {
    let ty = raw.get("type").and_then(Value::as_str).unwrap_or("media");
    let name = ["filename", "name", "title"]
        .iter()
        .find_map(|k| raw.get(*k).and_then(Value::as_str));
    let media = ["mediaType", "mimeType", "media_type"]
        .iter()
        .find_map(|k| raw.get(*k).and_then(Value::as_str))
        .or_else(|| {
            raw.get("source")
                .and_then(|s| s.get("media_type"))
                .and_then(Value::as_str)
        });
    match (name, media) {
        (Some(n), Some(m)) => format!("[{ty}: {n}, {m}]"),
        (Some(n), None) => format!("[{ty}: {n}]"),
        (None, Some(m)) => format!("[{ty}: {m}]"),
        (None, None) => format!("[{ty}]"),
    }
}

/// One message's section, written to `out`.
fn section(
    out: &mut impl Write,
    message: &Message,
    index: usize,
    cap: Option<usize>,
    names: &HashMap<&str, &str>,
) {
    let _ = write!(out, "### {index}. {}\n\n", message.role().name());
    for part in message.parts() {
        match part.kind() {
            PartKind::Text => {
                let _ = writeln!(out, "{}\n", capped(part.text().unwrap_or_default(), cap));
            }
            PartKind::Compaction => {
                let summary = part
                    .compaction_marker()
                    .map(|m| m.summary)
                    .unwrap_or_default();
                let _ = writeln!(out, "Earlier summary:\n\n{}\n", capped(&summary, cap));
            }
            PartKind::Reasoning => {
                let text = capped(part.text().unwrap_or_default(), cap);
                for line in text.lines() {
                    let _ = writeln!(out, "> {line}");
                }
                let _ = out.write_char('\n');
            }
            PartKind::RedactedReasoning => {
                let _ = out.write_str("[redacted thinking]\n\n");
            }
            PartKind::Image | PartKind::File => {
                let _ = writeln!(out, "{}\n", media_note(part.raw()));
            }
            PartKind::ToolCall => {
                let name = part.tool_name().unwrap_or("tool");
                let id = part.call_id().unwrap_or("no id");
                let input = match part.tool_input() {
                    Some(ToolInput::Text(text)) => text.to_owned(),
                    Some(ToolInput::Json(value)) => value.to_string(),
                    None => String::new(),
                };
                let _ = writeln!(out, "Tool call `{name}` ({id}):");
                fenced(out, &capped(&input, cap));
                let _ = out.write_char('\n');
                if part.holds_result() {
                    result_section(out, part, name, id, cap);
                }
            }
            PartKind::ToolResult => {
                let id = part.call_id().unwrap_or("no id");
                let name = (part.tool_name())
                    .or_else(|| names.get(id).copied())
                    .unwrap_or("tool");
                result_section(out, part, name, id, cap);
            }
            PartKind::Unknown => {
                let ty = part.raw().get("type").and_then(Value::as_str);
                let _ = writeln!(out, "[{} part]\n", ty.unwrap_or("unknown"));
            }
            PartKind::UiOnly => {}
        }
    }
}

fn result_section(
    out: &mut impl Write,
    part: &crate::messages::Part,
    name: &str,
    id: &str,
    cap: Option<usize>,
) {
    let flag = if part.is_error() { " (error)" } else { "" };
    let _ = writeln!(out, "Result of `{name}` ({id}){flag}:");
    let mut text = String::new();
    for segment in part.result_content() {
        match segment {
            Segment::Text(t) => text.push_str(t),
            Segment::Json(v) => text.push_str(&v.to_string()),
            Segment::Media(v) => text.push_str(&media_note(v)),
        }
        text.push('\n');
    }
    fenced(out, capped(text.trim_end_matches('\n'), cap).as_ref());
    let _ = out.write_char('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{parse_messages, MessagesOptions};
    use serde_json::json;

    fn conv(v: Value) -> Vec<Message> {
        let (_, messages) = parse_messages(&v, &MessagesOptions::default())
            .unwrap()
            .split_messages();
        messages
    }

    #[test]
    fn every_part_is_written_in_order() {
        let messages = conv(json!([
            {"role": "user", "content": "fix `src/a.rs`"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"cat src/a.rs\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "fn main() {}\n```x```"}
        ]));
        let t = render(&messages, 0, None);
        assert!(t.starts_with("### 0. user\n\nfix `src/a.rs`\n"), "{t}");
        assert!(t.contains("Tool call `bash` (c1):\n```\n{\"command\":\"cat src/a.rs\"}\n```"));
        // a result holding a fence gets a longer one
        assert!(t.contains("Result of `bash` (c1):\n````\nfn main() {}\n```x```\n````"));
    }

    #[test]
    fn a_budget_cuts_long_texts_then_leaves_out_the_middle() {
        let long = "x".repeat(50_000);
        let mut list = vec![json!({"role": "user", "content": "the task"})];
        for i in 0..100 {
            list.push(json!({"role": "assistant", "content": format!("step {i} {long}")}));
        }
        let messages = conv(Value::Array(list));
        let whole = render(&messages, 0, None);
        assert!(utf16_len(&whole) > 2_000_000);
        let t = render(&messages, 0, Some(20_000));
        assert!(utf16_len(&t) <= 20_000, "{}", utf16_len(&t));
        assert!(t.starts_with("### 0. user\n\nthe task"));
        assert!(t.contains("characters cut"));
        assert!(t.contains("messages left out here"));
        assert!(t.contains("step 99"), "the latest state stays");
        // a budget the whole fits in changes nothing
        let small = conv(json!([{"role": "user", "content": "hi"}]));
        assert_eq!(render(&small, 3, Some(1_000)), render(&small, 3, None));
    }
}
