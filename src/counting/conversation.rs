//! Counting one conversation: the request's setup (model, encoding, tools, framing), the
//! pass over its messages ([`Counting`]), and what it adds up to ([`MessagesCount`]).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::cache::{self, CountCache, MessageKey};
use super::options::{self, model_info_with, CountMessagesOptions, OptionsError};
use super::tally::{tally_message, ByKind, Rules, Tally, Tokenizer};
use super::tools::{self, BadChoice, BadTool, ToolChoice};
use crate::count::ESTIMATOR_ONLY;
use crate::encoding::{CountError, Encoding};
use crate::messages::{
    drops_earlier_context, Conversation, Format, Message, MessagesOptions, ParseError, Role,
};
use crate::model::{model_info, ModelInfo, Provider};

/// The count of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagesCount {
    /// Every token of the request: messages, system prompt, tools, reply priming; scaled by
    /// the calibration when `calibrated`.
    pub total: u64,
    /// The count before calibration, when one was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncalibrated: Option<u64>,
    /// Each message's tokens, framing included, in the order of `messages`.
    pub per_message: Vec<u64>,
    /// The request object's top-level `system` prompt (0 without one).
    pub system: u64,
    /// The tool definitions, with the tool use system prompt Anthropic adds for them (0
    /// without any).
    pub tools: u64,
    /// Tokens by role: the messages and the system prompt (not the tools or reply priming).
    pub by_role: BTreeMap<&'static str, u64>,
    /// Tokens by kind; the kinds add up to the uncalibrated total.
    pub by_kind: ByKind,
    /// Whether the count is the model's own: its tokenizer, and nothing estimated.
    pub exact: bool,
    /// Whether a calibration ([`Counter::calibrate`]) scaled `total`.
    pub calibrated: bool,
    /// The encoding counted with.
    pub encoding: Encoding,
    /// The format the messages were read in.
    pub format: Format,
    /// The model counted for, when one was named (in the options or the request object).
    pub model: Option<ModelInfo>,
}

/// Why a conversation could not be counted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CountMessagesError {
    /// An option is wrong.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// The messages are not a conversation of their format, or a field of the request object
    /// (`system`, `model`, `tools[2]`) is not what it must be; the message names the place.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The encoding's tables failed to load (a defect of the build).
    #[error(transparent)]
    Count(#[from] CountError),
}

/// The model, rules and fixed costs a count uses, decided once from the model named and the
/// options ([`setup`]).
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) model: Option<ModelInfo>,
    rules: Rules,
    provider: Provider,
    exact: bool,
}

impl Setup {
    /// Whether the model drops the thinking of earlier turns from its context
    /// ([`crate::model::keeps_earlier_thinking`]).
    fn drops_earlier_thinking(&self) -> bool {
        self.model.as_ref().is_some_and(|m| !m.earlier_thinking)
    }
}

/// What a request says besides its messages, read from the options, else the request object,
/// and checked: a field of the wrong type is an error naming it, never ignored.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// The model's name as given.
    pub(crate) model: Option<&'a str>,
    /// The tool definitions, and whether they came from the options.
    tools: Option<(&'a Value, bool)>,
    tool_choice: ToolChoice,
}

/// A field of the request object; `null` is absent.
fn envelope_field<'a>(conv: &'a Conversation, key: &str) -> Option<&'a Value> {
    conv.envelope.as_ref()?.get(key).filter(|v| !v.is_null())
}

impl<'a> Request<'a> {
    pub(crate) fn read(
        conv: &'a Conversation,
        options: &'a CountMessagesOptions,
    ) -> Result<Request<'a>, ParseError> {
        let model = match envelope_field(conv, "model") {
            None => None,
            Some(Value::String(name)) => Some(name.as_str()),
            // NOTE: the AI SDK's generateText takes the model as an object (`openai("gpt-4o")`),
            // which JSON shows with its `modelId`.
            Some(Value::Object(obj)) if obj.get("modelId").is_some_and(Value::is_string) => {
                obj.get("modelId").and_then(Value::as_str)
            }
            other => {
                return Err(ParseError::expected(
                    "model",
                    "a string (or an AI SDK model with a modelId)",
                    other,
                ))
            }
        };
        let tools = match envelope_field(conv, "tools") {
            None => None,
            Some(v @ (Value::Array(_) | Value::Object(_))) => Some(v),
            other => {
                return Err(ParseError::expected(
                    "tools",
                    "an array or an object",
                    other,
                ))
            }
        };
        let mut tool_choice = ToolChoice::Auto;
        for key in ["tool_choice", "toolChoice"] {
            if let Some(value) = envelope_field(conv, key) {
                // NOTE: a name this crate does not know is left to the provider to judge; it
                // only tells auto from forced, and auto is the default.
                tool_choice = match ToolChoice::read(value) {
                    Ok(choice) => choice,
                    Err(BadChoice::UnknownName(_)) => ToolChoice::Auto,
                    Err(BadChoice::WrongType) => {
                        return Err(ParseError::expected(
                            key,
                            "a string or an object",
                            Some(value),
                        ))
                    }
                };
                break;
            }
        }
        Ok(Request {
            model: options.model.as_deref().or(model),
            tools: match &options.tools {
                Some(tools) => Some((tools, true)),
                None => tools.map(|tools| (tools, false)),
            },
            tool_choice: options.tool_choice.unwrap_or(tool_choice),
        })
    }
}

impl BadTool<'_> {
    /// The error, with the path from the options or the request object.
    fn into_error(self, from_options: bool) -> CountMessagesError {
        if from_options {
            options::wrong(
                format!("options.tools{}", self.path),
                self.expected,
                self.found,
            )
            .into()
        } else {
            ParseError::expected(format!("tools{}", self.path), self.expected, self.found).into()
        }
    }
}

/// Whether counts for the model of `info` are its own tokenizer's in this build: the registry
/// says its encoding is its own, and the build has tables to count with ([`ESTIMATOR_ONLY`]).
/// Only the other models are calibrated.
pub(crate) fn counts_exactly(info: &ModelInfo) -> bool {
    info.exact && !ESTIMATOR_ONLY
}

/// What counting for `model` (or no model) with `options` uses.
pub(crate) fn setup(model: Option<&str>, format: Format, options: &CountMessagesOptions) -> Setup {
    match model {
        Some(name) => {
            let info = model_info_with(name, &options.models);
            let encoding = options.encoding.unwrap_or(info.encoding);
            Setup {
                rules: Rules {
                    encoding,
                    framing: info.framing,
                    images: info.images,
                },
                provider: info.provider,
                exact: counts_exactly(&info) && encoding == info.encoding,
                model: Some(info),
            }
        }
        None => {
            // NOTE: with no model, OpenAI's chat accounting with the chosen encoding. That is
            // the provider's own count only for OpenAI messages (o200k_base being the current
            // models' encoding, or the encoding the caller named). Claude's tokenizer is not
            // public; AI SDK messages go to a provider chosen at run time, so only an encoding
            // the caller named makes the count theirs.
            let chat = model_info("gpt-4o");
            let exact = !ESTIMATOR_ONLY
                && match format {
                    Format::OpenAi => true,
                    Format::AiSdk => options.encoding.is_some(),
                    Format::Anthropic => false,
                };
            Setup {
                rules: Rules {
                    encoding: options
                        .encoding
                        .unwrap_or_else(crate::model::default_encoding),
                    framing: chat.framing,
                    images: chat.images,
                },
                provider: Provider::OpenAi,
                exact,
                model: None,
            }
        }
    }
}

/// A conversation's count in progress, one message at a time: what [`count_conversation`]
/// and [`within_limit`] do in one call, for callers that read messages lazily (the JS
/// bindings, which skip reading the messages they counted before: see [`MessageKey`]).
///
/// ```
/// use context_keeper::counting::{Counting, CountCache, CountMessagesOptions};
/// use context_keeper::messages::{parse_messages, MessagesOptions};
/// let input = serde_json::json!([{"role": "user", "content": "hello world"}]);
/// let conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
/// let mut cache = CountCache::new(16);
/// let mut counting = Counting::start(&conv, &CountMessagesOptions::default(), None, None, &mut cache).unwrap();
/// let key = counting.add(&conv.messages()[0], &mut cache).unwrap();
/// // Counting the same message again needs only its key (and its role).
/// assert!(counting.add_known(conv.messages()[0].role(), key, &mut cache));
/// let (count, stopped) = counting.finish(conv.format());
/// assert_eq!((count.per_message, stopped), (vec![6, 6], false));
/// ```
#[derive(Debug)]
pub struct Counting {
    setup: Setup,
    keyer: cache::Keyer,
    ratio: Option<f64>,
    stop_above: Option<u64>,
    by_kind: ByKind,
    by_role: BTreeMap<&'static str, u64>,
    per_message: Vec<u64>,
    /// What the messages counted so far add to `by_kind` and `by_role`: taken off again when
    /// a later message holds a compaction block its provider drops them for.
    messages_kinds: ByKind,
    messages_roles: BTreeMap<&'static str, u64>,
    /// Messages added after the count stopped, not counted: a later compaction block that
    /// drops them starts the count again ([`Counting::add`]).
    skipped: usize,
    /// The thinking counted in each assistant message of the current turn (index, tokens):
    /// taken off again when a user turn starts, for a model that keeps only the current
    /// turn's thinking.
    turn_reasoning: Vec<(usize, u64)>,
    /// Whether the messages since the last assistant message hold tool results: a user
    /// message after them goes with the results (the provider sends them as one message).
    after_results: bool,
    system: u64,
    tools: u64,
    exact: bool,
    stopped: bool,
}

impl Counting {
    /// Starts counting the conversation `head` belongs to: its model and options decide the
    /// rules; its tool definitions and system prompt are counted now. Its messages are not:
    /// add them, in order, with [`Counting::add`] or [`Counting::add_known`]. `ratio` scales
    /// the total (a calibration); past `stop_above` (scaled) the count stops.
    ///
    /// Errors name a field of the request object (`model`, `tools[2]`, `tool_choice`) or of
    /// the options (`options.tools[2]`) that is not what it must be.
    pub fn start(
        head: &Conversation,
        options: &CountMessagesOptions,
        ratio: Option<f64>,
        stop_above: Option<u64>,
        cache: &mut CountCache,
    ) -> Result<Counting, CountMessagesError> {
        let request = Request::read(head, options)?;
        let setup = setup(request.model, head.format, options);
        let keyer = cache::Keyer::new(&setup.rules);
        let mut counting = Counting {
            by_kind: ByKind {
                overhead: u64::from(setup.rules.framing.reply_priming),
                ..ByKind::default()
            },
            exact: setup.exact,
            setup,
            keyer,
            ratio,
            stop_above,
            by_role: BTreeMap::new(),
            per_message: Vec::new(),
            messages_kinds: ByKind::default(),
            messages_roles: BTreeMap::new(),
            skipped: 0,
            turn_reasoning: Vec::new(),
            after_results: false,
            system: 0,
            tools: 0,
            stopped: false,
        };
        if let Some((defs, from_options)) = request.tools {
            let list = tools::read_tools(defs).map_err(|bad| bad.into_error(from_options))?;
            let mut tok = Tokenizer {
                encoding: counting.setup.rules.encoding,
                calls: 0,
            };
            let tokens = tools::tool_tokens(
                defs,
                &list,
                counting.setup.provider,
                request.model,
                request.tool_choice,
                &mut tok,
            )?;
            counting.exact &= tokens == 0;
            counting.tools = tokens;
            counting.by_kind.overhead += tokens;
        }
        if let Some(message) = head.system() {
            let key = counting.keyer.message_key(message);
            let tally = counting.tally(message, key, cache)?;
            counting.system = tally.kinds.total();
            counting.take(message.role(), tally);
        }
        counting.check_limit();
        Ok(counting)
    }

    /// The scaled total so far.
    fn scaled(&self, n: u64) -> u64 {
        self.ratio.map_or(n, |r| (n as f64 * r).round() as u64)
    }

    fn check_limit(&mut self) {
        // NOTE: thinking a later user turn will drop is not counted towards the stop: the
        // count can only end at or above what is left without it.
        let pending: u64 = match self.setup.drops_earlier_thinking() {
            true => self.turn_reasoning.iter().map(|(_, t)| t).sum(),
            false => 0,
        };
        let total = self.scaled(self.by_kind.total().saturating_sub(pending));
        self.stopped |= self.stop_above.is_some_and(|limit| total > limit);
    }

    fn tally(
        &mut self,
        message: &Message,
        key: MessageKey,
        cache: &mut CountCache,
    ) -> Result<Tally, CountError> {
        let key = self.keyer.key(key);
        if let Some(tally) = cache.get(key) {
            return Ok(tally);
        }
        let mut tok = Tokenizer {
            encoding: self.setup.rules.encoding,
            calls: 0,
        };
        let tally = tally_message(message, &self.setup.rules, &mut tok)?;
        cache.insert(key, tally, tok.calls);
        Ok(tally)
    }

    fn take(&mut self, role: Role, tally: Tally) {
        self.exact &= !tally.estimated;
        self.by_kind.add(&tally.kinds);
        *self.by_role.entry(role.name()).or_insert(0) += tally.kinds.total();
    }

    /// Whether the count passed its limit; adding more messages then does nothing.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Counts the next message, and returns its key for [`Counting::add_known`].
    ///
    /// Past the limit it counts nothing, unless the message holds a compaction block its
    /// provider drops everything before ([`drops_earlier_context`]): the count then starts
    /// again from it.
    pub fn add(
        &mut self,
        message: &Message,
        cache: &mut CountCache,
    ) -> Result<MessageKey, CountError> {
        let key = self.keyer.message_key(message);
        if self.stopped {
            if !drops_earlier(message) {
                self.skipped += 1;
                return Ok(key);
            }
            self.resume();
        }
        let tally = self.tally(message, key, cache)?;
        self.push(message.role(), tally);
        Ok(key)
    }

    /// A message that a later one's compaction block drops, counted as 0 without reading it
    /// (the caller knows: [`count_bounded`]).
    fn skip(&mut self) {
        self.per_message.push(0);
    }

    /// Counts again after a stop: a compaction block drops what the limit was passed with.
    fn resume(&mut self) {
        self.per_message
            .extend(std::iter::repeat_n(0, std::mem::take(&mut self.skipped)));
        self.stopped = false;
    }

    /// Counts the next message from its key and role alone, when `cache` still holds its count
    /// under this count's rules; false (and nothing counted) when it does not: then read the
    /// message and [`Counting::add`] it.
    pub fn add_known(&mut self, role: Role, key: MessageKey, cache: &mut CountCache) -> bool {
        match cache.get(self.keyer.key(key)) {
            Some(tally) if self.stopped && !tally.drops_earlier => {
                self.skipped += 1;
                true
            }
            Some(tally) => {
                self.resume();
                self.push(role, tally);
                true
            }
            None => false,
        }
    }

    fn push(&mut self, role: Role, tally: Tally) {
        if tally.drops_earlier {
            // NOTE: the provider drops every message before this one (Anthropic's
            // `compaction` block): they stay in `per_message`, as 0.
            self.by_kind.sub(&self.messages_kinds);
            for (name, tokens) in std::mem::take(&mut self.messages_roles) {
                let left = self
                    .by_role
                    .get(name)
                    .map_or(0, |sum| sum.saturating_sub(tokens));
                if left == 0 {
                    self.by_role.remove(name);
                } else {
                    self.by_role.insert(name, left);
                }
            }
            self.messages_kinds = ByKind::default();
            self.per_message.iter_mut().for_each(|n| *n = 0);
            self.turn_reasoning.clear();
        }
        if tally.starts_turn && !self.after_results && self.setup.drops_earlier_thinking() {
            self.drop_turn_reasoning();
        }
        self.after_results = tally.results || (role != Role::Assistant && self.after_results);
        if role == Role::Assistant && tally.kinds.reasoning > 0 {
            self.turn_reasoning
                .push((self.per_message.len(), tally.kinds.reasoning));
        }
        self.per_message.push(tally.kinds.total());
        self.messages_kinds.add(&tally.kinds);
        *self.messages_roles.entry(role.name()).or_insert(0) += tally.kinds.total();
        self.take(role, tally);
        self.check_limit();
    }

    /// Takes the thinking of the turn that just ended off the count: the model no longer sees
    /// it.
    fn drop_turn_reasoning(&mut self) {
        for (at, tokens) in std::mem::take(&mut self.turn_reasoning) {
            if let Some(n) = self.per_message.get_mut(at) {
                *n = n.saturating_sub(tokens);
            }
            self.by_kind.reasoning = self.by_kind.reasoning.saturating_sub(tokens);
            self.messages_kinds.reasoning = self.messages_kinds.reasoning.saturating_sub(tokens);
            for roles in [&mut self.by_role, &mut self.messages_roles] {
                if let Some(sum) = roles.get_mut(Role::Assistant.name()) {
                    *sum = sum.saturating_sub(tokens);
                }
            }
        }
    }

    /// The count, and whether it stopped at the limit (it is then partial). `format` is the
    /// format the messages were read in, reported back.
    pub fn finish(self, format: Format) -> (MessagesCount, bool) {
        let raw = self.by_kind.total();
        let count = MessagesCount {
            total: self.scaled(raw),
            uncalibrated: self.ratio.map(|_| raw),
            per_message: self.per_message,
            system: self.system,
            tools: self.tools,
            by_role: self.by_role,
            by_kind: self.by_kind,
            exact: self.exact,
            calibrated: self.ratio.is_some(),
            encoding: self.setup.rules.encoding,
            format,
            model: self.setup.model,
        };
        (count, self.stopped)
    }
}

/// Counts `conv`, stopping as soon as the (scaled) running total passes `stop_above`; the
/// flag says whether it stopped (and the count is then partial).
pub(crate) fn count_bounded(
    conv: &Conversation,
    options: &CountMessagesOptions,
    cache: &mut CountCache,
    ratio: Option<f64>,
    stop_above: Option<u64>,
) -> Result<(MessagesCount, bool), CountMessagesError> {
    let mut counting = Counting::start(conv, options, ratio, stop_above, cache)?;
    // NOTE: the messages before the latest compaction block that drops them count nothing:
    // they are not read, and the count may stop early only after it.
    let from = conv.messages().iter().rposition(drops_earlier).unwrap_or(0);
    for (i, message) in conv.messages().iter().enumerate() {
        if i < from {
            counting.skip();
            continue;
        }
        if counting.stopped() {
            break;
        }
        counting.add(message, cache)?;
    }
    Ok(counting.finish(conv.format()))
}

/// Counts a conversation with an explicit cache and no calibration: a pure function of its
/// arguments (the cache changes only the cost).
///
/// ```
/// use context_keeper::counting::{count_conversation, CountCache, CountMessagesOptions};
/// use context_keeper::messages::{parse_messages, MessagesOptions};
/// let input = serde_json::json!([{"role": "user", "content": "hello world"}]);
/// let conv = parse_messages(&input, &MessagesOptions::default()).unwrap();
/// let count = count_conversation(&conv, &CountMessagesOptions::default(), &mut CountCache::new(16)).unwrap();
/// // 2 of text, 3 + 1 ("user") per message, 3 to prime the reply.
/// assert_eq!((count.total, count.by_kind.text, count.per_message[0], count.exact), (9, 2, 6, true));
/// ```
pub fn count_conversation(
    conv: &Conversation,
    options: &CountMessagesOptions,
    cache: &mut CountCache,
) -> Result<MessagesCount, CountMessagesError> {
    Ok(count_bounded(conv, options, cache, None, None)?.0)
}

/// The total of `conv` if it is at most `limit` tokens, else `None`, tokenizing no further
/// than the message that crossed the limit.
pub fn within_limit(
    conv: &Conversation,
    limit: u64,
    options: &CountMessagesOptions,
    cache: &mut CountCache,
) -> Result<Option<u64>, CountMessagesError> {
    let (count, stopped) = count_bounded(conv, options, cache, None, Some(limit))?;
    Ok((!stopped).then_some(count.total))
}

/// Whether `message` holds a compaction block its provider drops everything before.
fn drops_earlier(message: &Message) -> bool {
    (message.parts().iter()).any(|p| drops_earlier_context(message.format(), p.raw()))
}

/// The messages options counting reads with: tool calls may be pending (counting happens
/// before the host runs them).
pub fn messages_options(format: Option<Format>) -> MessagesOptions {
    MessagesOptions {
        format,
        allow_pending_calls: true,
    }
}
