use serde_json::{json, Value};

use super::*;
use crate::count::count_tokens;
use crate::encoding::Encoding;
use crate::messages::{
    parse_messages, parse_messages_value, Conversation, Format, MessagesOptions,
};
use crate::model::model_info;

fn conv(value: &Value) -> Conversation {
    parse_messages(value, &MessagesOptions::default()).unwrap()
}

fn count(value: &Value, options: &CountMessagesOptions) -> MessagesCount {
    count_conversation(&conv(value), options, &mut CountCache::new(64)).unwrap()
}

fn model(name: &str) -> CountMessagesOptions {
    CountMessagesOptions {
        model: Some(name.to_owned()),
        ..CountMessagesOptions::default()
    }
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The example of OpenAI's cookbook ("How to count tokens with tiktoken").
fn cookbook_messages() -> Value {
    json!([
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
        {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."}
    ])
}

#[test]
fn openai_framing_matches_the_cookbook() {
    let messages = cookbook_messages();
    // The cookbook prints 124 for gpt-4o and 129 for gpt-4 and gpt-3.5-turbo.
    let cases = [
        ("gpt-4o", Encoding::O200kBase, 124),
        ("gpt-4", Encoding::Cl100kBase, 129),
        ("gpt-3.5-turbo", Encoding::Cl100kBase, 129),
    ];
    for (name, encoding, printed) in cases {
        let counted = count(&messages, &model(name));
        // The cookbook's formula: 3 per message, every string value, 1 per name, 3 at the end.
        let mut expected = 3;
        for m in messages.as_array().unwrap() {
            expected += 3;
            for (key, value) in m.as_object().unwrap() {
                expected += count_tokens(value.as_str().unwrap(), encoding).unwrap() as u64;
                expected += u64::from(key == "name");
            }
        }
        assert_eq!(counted.total, expected, "{name}");
        assert_eq!(counted.total, printed, "{name}");
        assert!(counted.exact && counted.model.as_ref().unwrap().known);
        assert_eq!(counted.per_message.iter().sum::<u64>() + 3, counted.total);
        assert_eq!(counted.by_kind.total(), counted.total);
        assert_eq!(counted.by_role.values().sum::<u64>() + 3, counted.total);
    }
}

#[test]
fn openai_tool_definitions_match_the_cookbook() {
    let messages = json!([
        {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
        {"role": "user", "content": "What's the weather like in San Francisco?"}
    ]);
    let tools = json!([{"type": "function", "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}
        }, "required": ["location"]}
    }}]);
    // The cookbook prints 101 for gpt-4o and 105 for gpt-4.
    for (name, expected) in [("gpt-4o", 101), ("gpt-4", 105)] {
        let options = CountMessagesOptions {
            tools: Some(tools.clone()),
            ..model(name)
        };
        let counted = count(&messages, &options);
        assert_eq!(counted.total, expected, "{name}");
        assert!(counted.tools > 0 && !counted.exact);
    }
}

#[test]
fn every_kind_is_counted_where_it_belongs() {
    let input = fixture("messages/anthropic-thinking-tools.input.json");
    let counted = count(&input, &CountMessagesOptions::default());
    let k = counted.by_kind;
    assert!(
        k.text > 0 && k.tool_calls > 0 && k.tool_results > 0 && k.reasoning > 0 && k.overhead > 0
    );
    // The request names claude-sonnet-4-5: Anthropic's area rule; the 1x1 PNG costs 1 token.
    assert_eq!(k.images, 1);
    assert_eq!(counted.model.as_ref().unwrap().name, "claude-sonnet-4");
    assert!(!counted.exact && counted.system > 0 && counted.tools > 0);
    assert_eq!(counted.format, Format::Anthropic);
    assert_eq!(k.total(), counted.total);
    assert_eq!(
        counted.per_message.iter().sum::<u64>() + counted.system + counted.tools + 3,
        counted.total
    );
    let reasoning =
        count_tokens("I should read both files in parallel.", Encoding::O200kBase).unwrap() as u64;
    let data = input["messages"][3]["content"][0]["data"].as_str().unwrap();
    let redacted = (data.len() as u64).div_ceil(REDACTED_CHARS_PER_TOKEN);
    assert_eq!(k.reasoning, reasoning + redacted);

    let input = fixture("messages/openai-images-refusal.input.json");
    let counted = count(&input, &CountMessagesOptions::default());
    // A low-detail image is 85, whatever its size; the audio clip and the PDF are flat.
    assert_eq!(counted.by_kind.images, 85);
    assert_eq!(counted.by_kind.files, 2 * DEFAULT_FILE_TOKENS);
    assert!(!counted.exact);
    assert_eq!(counted.model.as_ref().unwrap().name, "gpt-4o");
    // The base64 data is never text: the user message is its text, its name, images and files.
    let user = 3
        + 1
        + 1
        + count_tokens("alice", Encoding::O200kBase).unwrap() as u64
        + count_tokens("What is in this picture?", Encoding::O200kBase).unwrap() as u64
        + 85
        + 2 * DEFAULT_FILE_TOKENS;
    assert_eq!(counted.per_message[1], user);
}

#[test]
fn images_follow_the_provider_rule() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let openai = |image: Value| json!([{"role": "user", "content": [image]}]);
    let high = openai(
        json!({"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "high", "width": 1024, "height": 1024}}),
    );
    let counted = count(&high, &model("gpt-4o"));
    assert_eq!((counted.by_kind.images, counted.exact), (765, true));
    let tall = openai(
        json!({"type": "image_url", "image_url": {"url": "https://x/a.png", "width": 2048, "height": 4096}}),
    );
    assert_eq!(count(&tall, &model("gpt-4o")).by_kind.images, 1105);
    let unknown = openai(json!({"type": "image_url", "image_url": {"url": "https://x/a.png"}}));
    let counted = count(&unknown, &model("gpt-4o"));
    assert_eq!((counted.by_kind.images, counted.exact), (765, false));
    let inline = openai(
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}}),
    );
    let counted = count(&inline, &model("gpt-4o"));
    assert_eq!(
        (counted.by_kind.images, counted.by_kind.text, counted.exact),
        (255, 0, true)
    );
    let anthropic = json!([{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://x/a.jpg"}, "width": 1000, "height": 1000}
    ]}]);
    // Anthropic's 28-pixel patches: 36 x 36.
    assert_eq!(
        count(&anthropic, &model("claude-sonnet-4-5"))
            .by_kind
            .images,
        1296
    );
    let gemini =
        json!([{"role": "user", "content": [{"type": "image", "image": "https://x/a.png"}]}]);
    let counted = count(&gemini, &model("gemini-2.5-pro"));
    assert_eq!((counted.by_kind.images, counted.exact), (4 * 258, false));
}

#[test]
fn images_are_priced_per_model() {
    let openai = |image: Value| json!([{"role": "user", "content": [image]}]);
    let image = |w: u32, h: u32| {
        openai(
            json!({"type": "image_url", "image_url": {"url": "https://x/a.png", "width": w, "height": h}}),
        )
    };
    let images = |model_name: &str, w: u32, h: u32| {
        let counted = count(&image(w, h), &model(model_name));
        (counted.by_kind.images, counted.exact)
    };
    // OpenAI's guide: tiles priced per family...
    assert_eq!(images("gpt-4o", 1024, 1024), (85 + 4 * 170, true));
    assert_eq!(images("gpt-4o-mini-2024-07-18", 1024, 1024), (25_501, true));
    assert_eq!(images("gpt-5", 1024, 1024), (70 + 4 * 140, true));
    assert_eq!(images("gpt-5-chat-latest", 1024, 1024), (630, true));
    assert_eq!(images("o3", 1024, 1024), (75 + 4 * 150, true));
    assert_eq!(images("o1-2024-12-17", 1024, 1024), (675, true));
    // ...and 32-pixel patches times a multiplier for the small models (1,024 patches here;
    // 1800 x 2400 shrinks to 33 x 44 = 1,452).
    assert_eq!(images("gpt-4.1-mini", 1024, 1024), (1_659, true));
    assert_eq!(images("gpt-4.1-nano", 1024, 1024), (2_520, true));
    assert_eq!(images("gpt-5-mini", 1800, 2400), (2_353, true));
    assert_eq!(images("o4-mini", 1024, 1024), (1_762, true));
    // A patch model ignores `detail: low`; a tile model charges its base alone.
    let low = openai(
        json!({"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low", "width": 1024, "height": 1024}}),
    );
    assert_eq!(count(&low, &model("gpt-4.1-mini")).by_kind.images, 1_659);
    assert_eq!(count(&low, &model("gpt-4o-mini")).by_kind.images, 2_833);
    // Claude: the standard tier fits 1,568 pixels and 1,568 patches; Opus 4.7 and later read
    // up to 2,576 pixels and 4,784 patches (Anthropic's examples: 1928 x 1928 is 1,521 and
    // 4,761).
    let claude = |model_name: &str, w: u32, h: u32| {
        let part = json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://x/a.jpg"}, "width": w, "height": h}
        ]}]);
        count(&part, &model(model_name)).by_kind.images
    };
    assert_eq!(claude("claude-sonnet-4-5", 1928, 1928), 1_521);
    assert_eq!(claude("claude-opus-4-7", 1928, 1928), 4_761);
    assert_eq!(claude("claude-sonnet-4-5", 1568, 728), 56 * 26);
    // A sliver still costs its patch, not 0.
    assert_eq!(claude("claude-3-5-sonnet", 10_000, 1), 56);
    // Gemini 2.x: one crop within 384 x 384, else crops of the shortest side / 1.5.
    let gemini = |w: u32, h: u32| {
        let part = json!([{"role": "user", "content": [
            {"type": "image", "image": "https://x/a.png", "width": w, "height": h}
        ]}]);
        let counted = count(&part, &model("gemini-2.0-flash"));
        (counted.by_kind.images, counted.exact)
    };
    assert_eq!(gemini(384, 300), (258, false));
    assert_eq!(gemini(1536, 768), (3 * 2 * 258, false));
}

#[test]
fn a_stated_zero_size_gets_the_default() {
    let openai = |image: Value| json!([{"role": "user", "content": [image]}]);
    let zero = openai(
        json!({"type": "image_url", "image_url": {"url": "https://x/a.png", "width": 0, "height": 0}}),
    );
    let counted = count(&zero, &model("gpt-4o"));
    assert_eq!((counted.by_kind.images, counted.exact), (765, false));
    let claude = json!([{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://x/a.jpg"}, "width": 0, "height": 10}
    ]}]);
    let counted = count(&claude, &model("claude-sonnet-4"));
    assert_eq!((counted.by_kind.images, counted.exact), (1_568, false));
}

#[test]
fn every_fixture_counts_in_every_format() {
    let dir = format!("{}/tests/data/messages", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".input.json") {
            continue;
        }
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Ok(conversation) = parse_messages(&value, &MessagesOptions::default()) else {
            continue;
        };
        let counted = count_conversation(
            &conversation,
            &CountMessagesOptions::default(),
            &mut CountCache::new(8),
        )
        .unwrap();
        assert_eq!(counted.by_kind.total(), counted.total, "{name}");
        assert_eq!(
            counted.per_message.len(),
            conversation.messages().len(),
            "{name}"
        );
        seen += 1;
    }
    assert!(seen >= 10);
}

fn long_conversation(n: usize) -> Value {
    let mut list = Vec::new();
    for i in 0..n {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        list.push(json!({"role": role, "content": format!("message {i}: the quick brown fox {}", "jumps ".repeat(i % 7))}));
    }
    Value::Array(list)
}

#[test]
fn the_cache_only_changes_the_cost() {
    let mut value = long_conversation(1_000);
    let options = model("claude-sonnet-4");
    let mut cache = CountCache::new(DEFAULT_CAPACITY);
    let first = count_conversation(&conv(&value), &options, &mut cache).unwrap();
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (0, 1_000));
    // Counting again is all hits and the same result.
    let again = count_conversation(&conv(&value), &options, &mut cache).unwrap();
    assert_eq!(again, first);
    assert_eq!(cache.stats().tokenizer_calls, stats.tokenizer_calls);
    // Append one message: only it reaches the tokenizer (its role and its text).
    value
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": "one more"}));
    let before = cache.stats();
    let appended = count_conversation(&conv(&value), &options, &mut cache).unwrap();
    let after = cache.stats();
    assert_eq!(after.misses - before.misses, 1);
    assert_eq!(after.tokenizer_calls - before.tokenizer_calls, 2);
    let fresh = count_conversation(&conv(&value), &options, &mut CountCache::new(2)).unwrap();
    assert_eq!(appended, fresh);
    // Another encoding is another key.
    let cl100k = CountMessagesOptions {
        encoding: Some(Encoding::Cl100kBase),
        ..options.clone()
    };
    let other = count_conversation(&conv(&value), &cl100k, &mut cache).unwrap();
    assert_eq!(
        other,
        count_conversation(&conv(&value), &cl100k, &mut CountCache::new(2)).unwrap()
    );
    assert!(cache.len() <= DEFAULT_CAPACITY);
}

#[test]
fn the_cache_stays_bounded() {
    let value = long_conversation(500);
    let mut cache = CountCache::new(100);
    let first =
        count_conversation(&conv(&value), &CountMessagesOptions::default(), &mut cache).unwrap();
    assert!(cache.len() <= 100);
    let again =
        count_conversation(&conv(&value), &CountMessagesOptions::default(), &mut cache).unwrap();
    assert_eq!(first, again);
}

#[test]
fn within_limit_stops_early() {
    let value = long_conversation(1_000);
    let conversation = conv(&value);
    let options = CountMessagesOptions::default();
    let total = count_conversation(&conversation, &options, &mut CountCache::new(2))
        .unwrap()
        .total;
    let mut cache = CountCache::new(DEFAULT_CAPACITY);
    assert_eq!(
        within_limit(&conversation, total, &options, &mut cache).unwrap(),
        Some(total)
    );
    assert_eq!(
        within_limit(&conversation, total - 1, &options, &mut cache).unwrap(),
        None
    );
    let mut cache = CountCache::new(DEFAULT_CAPACITY);
    assert_eq!(
        within_limit(&conversation, 100, &options, &mut cache).unwrap(),
        None
    );
    assert!(cache.stats().misses < 20, "{:?}", cache.stats());
}

#[test]
fn overrides_merge_over_the_registry() {
    let mut models = ModelOverrides::default();
    models.insert(
        "gpt-4o",
        ModelOverride {
            context_window: Some(64_000),
            ..ModelOverride::default()
        },
    );
    models.insert(
        "acme/my-llm",
        ModelOverride {
            encoding: Some(Encoding::Cl100kBase),
            per_message: Some(5),
            ..ModelOverride::default()
        },
    );
    models.insert(
        "gpt-4",
        ModelOverride {
            max_output: Some(1),
            ..ModelOverride::default()
        },
    );
    let info = model_info_with("gpt-4o-2024-08-06", &models);
    assert_eq!(
        (info.name.as_str(), info.context_window, info.exact),
        ("gpt-4o", 64_000, true)
    );
    // gpt-4o-mini has an entry of its own, more specific than the caller's `gpt-4o`.
    assert_eq!(
        model_info_with("gpt-4o-mini", &models).context_window,
        128_000
    );
    let info = model_info_with("ACME/my-llm-7b", &models);
    assert_eq!(
        (
            info.known,
            info.exact,
            info.encoding,
            info.framing.per_message
        ),
        (true, false, Encoding::Cl100kBase, 5)
    );
    assert_eq!(model_info_with("gpt-4-turbo", &models).max_output, 4_096);
    assert_eq!(model_info_with("gpt-4-0613", &models).max_output, 1);
    assert!(!model_info_with("other", &models).known);
    // The page's figures no longer hold where the caller's entry sets a limit; an entry that
    // changes only the counting keeps them.
    let limited = model_info_with("gpt-4o", &models);
    assert_eq!((limited.source, limited.checked), (None, None));
    assert!(model_info_with("gpt-4-turbo", &models).source.is_some());
    assert_eq!(model_info_with("ACME/my-llm-7b", &models).source, None);
    let mut counting_only = ModelOverrides::default();
    counting_only.insert(
        "gpt-4o",
        ModelOverride {
            per_message: Some(4),
            ..ModelOverride::default()
        },
    );
    assert_eq!(
        model_info_with("gpt-4o", &counting_only).source,
        model_info("gpt-4o").source
    );

    let options = CountMessagesOptions::from_value(&json!({
        "model": "my-llm", "models": {"my-llm": {"contextWindow": 1000, "framing": {"perMessage": 10}}}
    }))
    .unwrap();
    let counted = count(&json!([{"role": "user", "content": "hi"}]), &options);
    assert_eq!(counted.per_message[0], 10 + 1 + 1);
    assert_eq!(counted.model.unwrap().context_window, 1000);
}

#[test]
fn options_errors_name_the_field() {
    let err = |v: Value| CountMessagesOptions::from_value(&v).unwrap_err();
    let e = err(json!({"encoding": "p50k_base"}));
    assert!(
        e.is_range_error() && e.to_string().contains("options.encoding"),
        "{e}"
    );
    let e = err(json!({"models": {"x": {"contextWindow": "big"}}}));
    assert_eq!(
        e.to_string(),
        "options.models[\"x\"].contextWindow: expected a whole number of tokens, found a string"
    );
    assert!(!err(json!({"tools": 3})).is_range_error());
    assert!(err(json!({"format": "gemini"})).is_range_error());
    assert!(err(json!({"models": {"x": {"provider": "acme"}}})).is_range_error());
    assert!(!err(json!({"models": {"x": {"images": {"rule": "tiles"}}}})).is_range_error());
    assert_eq!(
        CountMessagesOptions::from_value(&Value::Null).unwrap(),
        CountMessagesOptions::default()
    );
    let e = count_messages_str(
        r#"[{"role": "user", "content": 5}]"#,
        &CountMessagesOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "messages[0].content: expected a string or an array, found a number"
    );
}

#[test]
fn calibration_scales_only_approximate_models() {
    let json = r#"[{"role": "user", "content": "calibrate me, please"}]"#;
    let options = model("zz-calibration-test");
    let raw = count_messages_str(json, &options).unwrap();
    assert!(!raw.calibrated && raw.uncalibrated.is_none());
    let calibration = calibrate(
        "zz-calibration-test",
        &ModelOverrides::default(),
        raw.total,
        raw.total * 3 / 2,
    );
    assert!(calibration.applied);
    let scaled = count_messages_str(json, &options).unwrap();
    assert!(scaled.calibrated);
    assert_eq!(scaled.uncalibrated, Some(raw.total));
    assert_eq!(
        scaled.total,
        (raw.total as f64 * calibration.ratio).round() as u64
    );
    assert_eq!(
        within_limit_str(json, scaled.total, &options).unwrap(),
        Some(scaled.total)
    );
    assert_eq!(
        within_limit_str(json, scaled.total - 1, &options).unwrap(),
        None
    );
    // Exact models are never calibrated; ratios are clamped.
    assert!(!calibrate("gpt-4o", &ModelOverrides::default(), 10, 20).applied);
    assert_eq!(
        calibrate("zz-calibration-test", &ModelOverrides::default(), 10, 1_000).ratio,
        2.0
    );
}

#[test]
fn two_counters_share_neither_calibration_nor_cache() {
    let conv = conv(&json!([{"role": "user", "content": "hello world"}]));
    let options = model("zz-two-counters");
    let (mut a, mut b) = (Counter::new(), Counter::with_capacity(16));
    let raw = b.count(&conv, &options).unwrap();
    assert_eq!(b.cache_stats().misses, 1);

    // A calibration recorded in `a` scales `a`'s counts only.
    let calibration = a.calibrate("zz-two-counters", &ModelOverrides::default(), 10, 15);
    assert!(calibration.applied);
    assert_eq!(a.ratio_for(&conv, &options), Some(1.5));
    assert_eq!(b.ratio_for(&conv, &options), None);
    let scaled = a.count(&conv, &options).unwrap();
    assert!(scaled.calibrated);
    assert_eq!(scaled.total, (raw.total as f64 * 1.5).round() as u64);
    let again = b.count(&conv, &options).unwrap();
    assert_eq!(again, raw);
    assert!(!again.calibrated);
    // Nor does the default counter see it (no other test calibrates this model).
    assert_eq!(ratio_for(&conv, &options), None);

    // Each has its own memo: `a` counted the message afresh although `b` had it.
    assert_eq!((a.cache_stats().hits, a.cache_stats().misses), (0, 1));
    assert_eq!((b.cache_stats().hits, b.cache_stats().misses), (1, 1));
    b.clear_cache();
    assert_eq!(b.cache_stats(), CacheStats::default());
    a.count(&conv, &options).unwrap();
    assert_eq!((a.cache_stats().hits, a.cache_stats().misses), (1, 1));

    // Clearing `a`'s calibrations leaves `b`'s.
    b.calibrate("zz-two-counters", &ModelOverrides::default(), 10, 5);
    a.clear_calibrations();
    assert_eq!(a.ratio_for(&conv, &options), None);
    assert_eq!(b.ratio_for(&conv, &options), Some(0.5));
}

#[test]
fn a_counter_keeps_at_most_max_calibrations() {
    let mut counter = Counter::with_capacity(2);
    let none = ModelOverrides::default();
    for i in 0..=MAX_CALIBRATIONS {
        assert!(
            counter
                .calibrate(&format!("zz-many-{i}"), &none, 10, 12)
                .applied
        );
    }
    let ratio = |counter: &Counter, name: &str| counter.ratio_for(&conv(&json!([])), &model(name));
    assert_eq!(ratio(&counter, "zz-many-0"), None, "the oldest went");
    assert_eq!(ratio(&counter, "zz-many-1"), Some(1.2));
    assert_eq!(
        ratio(&counter, &format!("zz-many-{MAX_CALIBRATIONS}")),
        Some(1.2)
    );
}

#[test]
fn counting_by_keys_alone_equals_counting_the_messages() {
    let dir = format!("{}/tests/data/messages", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".input.json") {
            continue;
        }
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Ok(conv) = parse_messages(&value, &MessagesOptions::default()) else {
            continue;
        };
        let mut cache = CountCache::new(DEFAULT_CAPACITY);
        let options = model("gpt-4o");
        let mut first = Counting::start(&conv, &options, None, None, &mut cache).unwrap();
        let keys: Vec<MessageKey> = (conv.messages().iter())
            .map(|m| first.add(m, &mut cache).unwrap())
            .collect();
        let (by_messages, _) = first.finish(conv.format());
        let calls = cache.stats().tokenizer_calls;
        let mut again = Counting::start(&conv, &options, None, None, &mut cache).unwrap();
        for (message, key) in conv.messages().iter().zip(&keys) {
            assert!(again.add_known(message.role(), *key, &mut cache));
        }
        assert_eq!(
            again.finish(conv.format()).0,
            by_messages,
            "{}",
            path.display()
        );
        assert_eq!(
            cache.stats().tokenizer_calls,
            calls,
            "nothing tokenized again"
        );
        // Under other rules (another encoding) the same keys find nothing.
        let other = model("gpt-4");
        let mut under_other = Counting::start(&conv, &other, None, None, &mut cache).unwrap();
        if let (Some(message), Some(key)) = (conv.messages().first(), keys.first()) {
            assert!(!under_other.add_known(message.role(), *key, &mut cache));
        }
    }
}

#[test]
fn every_prefix_of_every_fixture_counts_the_same_cached_and_fresh() {
    let dir = format!("{}/tests/data/messages", env!("CARGO_MANIFEST_DIR"));
    let mut shared = CountCache::new(DEFAULT_CAPACITY);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".input.json") {
            continue;
        }
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Ok(full) = parse_messages(&value, &MessagesOptions::default()) else {
            continue;
        };
        for options in [
            CountMessagesOptions::default(),
            model("claude-sonnet-4"),
            model("gemini-2.5-pro"),
        ] {
            let mut conversation = full.clone();
            let all = std::mem::take(conversation.messages_mut());
            for message in all {
                conversation.messages_mut().push(message);
                let cached = count_conversation(&conversation, &options, &mut shared).unwrap();
                let fresh =
                    count_conversation(&conversation, &options, &mut CountCache::new(2)).unwrap();
                assert_eq!(cached, fresh, "{}", path.display());
            }
        }
    }
}

#[test]
fn calibration_from_a_usage_report() {
    let usage = json!({
        "model": "zz-usage-test",
        "inputTokens": 30,
        "messages": [{"role": "user", "content": "hello world"}],
    });
    // 9 estimated (2 + 3 + 1 + 3), 30 reported: clamped to 2.
    let calibration = calibrate_usage(&usage).unwrap();
    assert_eq!(
        (
            calibration.model.as_str(),
            calibration.ratio,
            calibration.applied
        ),
        ("zz-usage-test", 2.0, true)
    );
    let calibration =
        calibrate_usage(&json!({"model": "zz-usage-test", "inputTokens": 12, "estimated": 10}))
            .unwrap();
    assert_eq!(calibration.ratio, 1.2);
    let err = calibrate_usage(&json!({"model": "zz-usage-test"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "usage.inputTokens: expected a whole number of tokens, found nothing"
    );
    let err = calibrate_usage(&json!({"model": "zz-usage-test", "inputTokens": 5})).unwrap_err();
    assert!(err.to_string().starts_with("usage.estimated"), "{err}");
    assert!(calibrate_usage(&json!([])).is_err());
    // A reported 0 is a usage field read wrong (no request has no input): refused, and the
    // calibration recorded before stays.
    let err =
        calibrate_usage(&json!({"model": "zz-usage-test", "inputTokens": 0, "estimated": 10}))
            .unwrap_err();
    assert_eq!(
        err.to_string(),
        "usage.inputTokens: expected a positive number of tokens, found 0"
    );
    assert!(matches!(err, CountMessagesError::Options(e) if e.is_range_error()));
    let json = r#"[{"role": "user", "content": "hello world"}]"#;
    let count = count_messages_str(json, &model("zz-usage-test")).unwrap();
    assert_eq!((count.uncalibrated, count.total), (Some(9), 11));
}

fn tokens(text: &str) -> u64 {
    count_tokens(text, Encoding::O200kBase).unwrap() as u64
}

#[test]
fn ui_messages_count_their_parts_not_zero() {
    // What `useChat` holds: `parts`, no `content`.
    let ui =
        json!([{"id": "1", "role": "user", "parts": [{"type": "text", "text": "hello world"}]}]);
    let counted = count(&ui, &CountMessagesOptions::default());
    assert_eq!(counted.format, Format::AiSdk);
    assert_eq!((counted.by_kind.text, counted.total), (2, 9));
    // The same as the ModelMessage convertToModelMessages makes of it.
    let model_message =
        json!([{"role": "user", "content": [{"type": "text", "text": "hello world"}]}]);
    assert_eq!(
        counted.by_kind,
        count(&model_message, &CountMessagesOptions::default()).by_kind
    );
    // Read as OpenAI or Anthropic, it is an error naming the field, not an empty message.
    for format in [Format::OpenAi, Format::Anthropic] {
        let options = CountMessagesOptions {
            format: Some(format),
            ..CountMessagesOptions::default()
        };
        let err = count_value(ui.clone(), &options, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("messages[0].content: expected a string")
                && err.contains("found none but `parts` (an AI SDK UIMessage)")
                && err.contains("convertToModelMessages"),
            "{err}"
        );
    }
}

#[test]
fn ui_messages_count_as_convert_to_model_messages_sends_them() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let ui = json!([
        {"id": "s", "role": "system", "parts": [
            {"type": "text", "text": "Be brief."},
            {"type": "data-config", "data": {"theme": "dark"}}]},
        {"id": "u", "role": "user", "parts": [
            {"type": "text", "text": "What is the weather in Paris?"},
            {"type": "file", "mediaType": "image/png", "url": format!("data:image/png;base64,{png}")},
            {"type": "reasoning", "text": "never sent from a user"}]},
        {"id": "a", "role": "assistant", "metadata": {"model": "x"}, "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "Look up the weather first."},
            {"type": "tool-weather", "toolCallId": "c1", "state": "output-available",
             "input": {"city": "Paris"}, "output": {"temp": 21}},
            {"type": "dynamic-tool", "toolName": "news", "toolCallId": "c2", "state": "output-error",
             "input": {"q": "Paris"}, "errorText": "news service down"},
            {"type": "tool-book", "toolCallId": "c3", "state": "output-denied", "input": {"hotel": 1},
             "approval": {"id": "a1", "approved": false, "reason": "too expensive"}},
            {"type": "tool-draft", "toolCallId": "c4", "state": "input-streaming", "input": {"text": "half a"}},
            {"type": "step-start"},
            {"type": "text", "text": "It is 21 degrees in Paris."},
            {"type": "source-url", "sourceId": "s1", "url": "https://example.com/weather"},
            {"type": "data-status", "data": {"done": true}}]}
    ]);
    // What convertToModelMessages makes of it (the data parts dropped, no convertDataPart).
    let converted = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [
            {"type": "text", "text": "What is the weather in Paris?"},
            {"type": "file", "mediaType": "image/png", "data": format!("data:image/png;base64,{png}")}]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "Look up the weather first."},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": {"city": "Paris"}},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "news", "input": {"q": "Paris"}},
            {"type": "tool-call", "toolCallId": "c3", "toolName": "book", "input": {"hotel": 1}}]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "c1", "toolName": "weather", "output": {"type": "json", "value": {"temp": 21}}},
            {"type": "tool-result", "toolCallId": "c2", "toolName": "news", "output": {"type": "error-text", "value": "news service down"}},
            {"type": "tool-result", "toolCallId": "c3", "toolName": "book", "output": {"type": "error-text", "value": "too expensive"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It is 21 degrees in Paris."}]}
    ]);
    let options = model("gpt-4o");
    let counted = count(&ui, &options);
    let expected = count(&converted, &options);
    assert_eq!(counted.format, Format::AiSdk);
    assert_eq!(counted.by_kind, expected.by_kind);
    assert_eq!(counted.total, expected.total);
    assert_eq!(counted.per_message.len(), 3);
    assert_eq!(counted.by_kind.images, 255); // the 1x1 PNG, one tile
    assert_eq!(
        counted.by_kind.reasoning,
        tokens("Look up the weather first.")
    );
    assert_eq!(
        counted.by_kind.tool_results,
        tokens(r#"{"temp":21}"#) + tokens("news service down") + tokens("too expensive")
    );
    // The system message counts its text only; the data part makes the count an estimate.
    assert_eq!(counted.per_message[0], 3 + 1 + tokens("Be brief."));
    let system_only = count(&json!([ui[0].clone()]), &options);
    assert!(!system_only.exact);
    let text_only = json!([{"role": "user", "parts": [ui[1]["parts"][0].clone()]}]);
    assert!(count(&text_only, &options).exact);
}

#[test]
fn an_assistant_refusal_counts_as_text() {
    let refusal = "I'm sorry, I cannot help with that request.";
    let input = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "refusal": refusal}
    ]);
    let counted = count(&input, &model("gpt-4o"));
    assert_eq!(counted.by_kind.text, tokens("hi") + tokens(refusal));
    assert_eq!(counted.per_message[1], 3 + 1 + tokens(refusal));
    assert!(counted.exact);
}

#[test]
fn v4_experimental_content_counts_instead_of_the_result() {
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let input = json!([
        {"role": "user", "content": "Take a screenshot."},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "screenshot", "args": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "screenshot",
            "result": {"data": png},
            "experimental_content": [
                {"type": "text", "text": "The screen shows a login form."},
                {"type": "image", "data": png, "mimeType": "image/png"}]}]}
    ]);
    let counted = count(&input, &model("gpt-4o"));
    assert_eq!(counted.format, Format::AiSdk);
    // The text as a tool result, the image by its rule; the base64 `result` never as text.
    assert_eq!(
        counted.by_kind.tool_results,
        tokens("The screen shows a login form.")
    );
    assert_eq!(counted.by_kind.images, 255);
    // Replacing the result's text replaces what the provider receives.
    let mut conv = conv(&input);
    conv.messages_mut()[2].parts_mut()[0]
        .set_result_text("cleared")
        .unwrap();
    let value = conv.to_value();
    assert!(value[2]["content"][0].get("experimental_content").is_none());
    let cleared = count(&value, &model("gpt-4o"));
    assert_eq!(
        (cleared.by_kind.tool_results, cleared.by_kind.images),
        (tokens("cleared"), 0)
    );
}

#[test]
fn without_a_model_only_openai_messages_are_exact() {
    let plain = json!([{"role": "user", "content": "hello world"}]);
    let anthropic =
        json!({"system": "Be brief.", "messages": [{"role": "user", "content": "hello world"}]});
    let aisdk = json!([{"role": "user", "content": [{"type": "text", "text": "hello world", "providerOptions": {}}]}]);
    let none = CountMessagesOptions::default();
    let o200k = CountMessagesOptions {
        encoding: Some(Encoding::O200kBase),
        ..CountMessagesOptions::default()
    };
    let as_anthropic = CountMessagesOptions {
        format: Some(Format::Anthropic),
        ..CountMessagesOptions::default()
    };
    let exact = |input: &Value, options: &CountMessagesOptions| {
        let conv = parse_messages_value(input.clone(), &messages_options(options.format)).unwrap();
        let counted = count_conversation(&conv, options, &mut CountCache::new(8)).unwrap();
        (counted.format, counted.exact)
    };
    assert_eq!(exact(&plain, &none), (Format::OpenAi, true));
    assert_eq!(exact(&plain, &as_anthropic), (Format::Anthropic, false));
    assert_eq!(exact(&anthropic, &none), (Format::Anthropic, false));
    assert_eq!(exact(&anthropic, &o200k), (Format::Anthropic, false));
    assert_eq!(exact(&aisdk, &none), (Format::AiSdk, false));
    assert_eq!(exact(&aisdk, &o200k), (Format::AiSdk, true));
    // A named model decides, whatever the format.
    assert_eq!(exact(&aisdk, &model("gpt-4o")), (Format::AiSdk, true));
}

#[test]
fn shape_errors_say_what_was_found() {
    let err = |json: &str| {
        count_messages_str(json, &CountMessagesOptions::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(r#"{"foo": 1}"#),
        "messages: expected an array of messages or a request object with a `messages` array, found an object without `messages`"
    );
    assert_eq!(
        err(r#"{"messages": {"role": "user"}}"#),
        "messages.messages: expected an array, found an object"
    );
    assert_eq!(
        err("true"),
        "messages: expected an array of messages or a request object with a `messages` array, found a boolean"
    );
}

#[test]
fn usage_errors_name_their_place_in_the_report() {
    let err = |usage: Value| calibrate_usage(&usage).unwrap_err().to_string();
    assert_eq!(
        err(json!({"model": "zz-usage-errors", "inputTokens": null, "estimated": 3})),
        "usage.inputTokens: expected a whole number of tokens, found null"
    );
    assert_eq!(
        err(json!({"model": "zz-usage-errors", "inputTokens": 1.5, "estimated": 3})),
        "usage.inputTokens: expected a whole number of tokens, found a number"
    );
    let messages = json!([
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": 5}
    ]);
    assert_eq!(
        err(json!({"model": "zz-usage-errors", "inputTokens": 10, "messages": messages})),
        "usage.messages[2].content: expected a string or an array, found a number"
    );
    assert_eq!(
        err(
            json!({"model": "zz-usage-errors", "inputTokens": 10, "messages": {"system": 5, "messages": []}, "format": "anthropic"})
        ),
        "usage.messages.system: expected a string or an array, found a number"
    );
    assert_eq!(
        err(json!({"model": "zz-usage-errors", "inputTokens": 10, "messages": {"foo": 1}})),
        "usage.messages: expected an array of messages or a request object with a `messages` array, found an object without `messages`"
    );
    let e = err(
        json!({"model": "zz-usage-errors", "inputTokens": 10, "estimated": 5, "encoding": "p50k_base"}),
    );
    assert!(e.starts_with("usage.encoding: unknown encoding"), "{e}");
    // `estimated: null` is absent, as before.
    let e = err(json!({"model": "zz-usage-errors", "inputTokens": 10, "estimated": null}));
    assert!(e.starts_with("usage.estimated:"), "{e}");
}

#[test]
fn what_precedes_an_anthropic_compaction_block_counts_nothing() {
    let long = "the earlier work, read in full ".repeat(200);
    let before = json!({"role": "user", "content": long});
    let block = json!({"role": "assistant", "content": [
        {"type": "text", "text": long},
        {"type": "compaction", "content": "Summary: the work so far."},
        {"type": "text", "text": "Carrying on."}]});
    let after = json!({"role": "user", "content": "next"});
    let options = model("claude-sonnet-4");
    let counted = count(&json!([before, block, after]), &options);
    // the API drops every block before the compaction block, its message's own too
    assert_eq!(counted.per_message[0], 0);
    let alone = count(
        &json!([{"role": "assistant", "content": [
            {"type": "compaction", "content": "Summary: the work so far."},
            {"type": "text", "text": "Carrying on."}]}, after]),
        &options,
    );
    assert_eq!(counted.per_message[1..], alone.per_message[..]);
    assert_eq!(counted.total, alone.total);
    assert_eq!(counted.by_kind, alone.by_kind);
    assert_eq!(counted.by_role, alone.by_role);
    assert_eq!(counted.by_kind.total(), counted.total);
    // the summary counts as text
    let summary = count_tokens("Summary: the work so far.", Encoding::O200kBase).unwrap() as u64;
    assert!(alone.by_kind.text >= summary);
    // a failed compaction (`content: null`) is a no-op for the API: nothing is dropped
    let failed = json!([before, {"role": "assistant", "content": [
        {"type": "text", "text": "x"}, {"type": "compaction", "content": null}]}, after]);
    assert!(count(&failed, &options).per_message[0] > 1_000);
    // the same, read one message at a time through the keyed path, with a warm memo
    let mut counter = Counter::new();
    let input = conv(&json!([before, block, after]));
    let (first, keys) = counter.count_keyed(&input, &options, &[]).unwrap();
    let known: Vec<Option<MessageKey>> = keys.into_iter().map(Some).collect();
    let (again, _) = counter.count_keyed(&input, &options, &known).unwrap();
    assert_eq!(first, counted);
    assert_eq!(again, counted);
    // a limit passed before the block does not stop the count: the block drops it
    let limit = counted.total;
    assert_eq!(
        within_limit(&input, limit, &options, &mut CountCache::new(8)).unwrap(),
        Some(limit)
    );
    let mut cache = CountCache::new(8);
    let mut lazy = Counting::start(&input, &options, None, Some(limit), &mut cache).unwrap();
    let keys: Vec<MessageKey> = (input.messages().iter())
        .map(|m| lazy.add(m, &mut cache).unwrap())
        .collect();
    assert_eq!(lazy.finish(Format::Anthropic), (counted.clone(), false));
    let mut known = Counting::start(&input, &options, None, Some(limit), &mut cache).unwrap();
    for (m, key) in input.messages().iter().zip(&keys) {
        assert!(known.add_known(m.role(), *key, &mut cache));
    }
    assert_eq!(known.finish(Format::Anthropic), (counted.clone(), false));
    // a request's system prompt and tools are not message blocks: they stay
    let request = json!({"system": "You are terse.", "messages": [before, block, after]});
    let with_system = count(&request, &options);
    assert!(with_system.system > 0);
    assert_eq!(with_system.total, counted.total + with_system.system);
}

#[test]
fn an_ai_sdk_part_carrying_an_anthropic_compaction_drops_what_precedes_it() {
    let long = "the earlier work ".repeat(300);
    let input = json!([
        {"role": "user", "content": [{"type": "text", "text": long}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Summary.", "providerOptions": {"anthropic": {"type": "compaction"}}}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]}]);
    let counted = count(&input, &model("claude-sonnet-4"));
    assert_eq!(counted.format, Format::AiSdk);
    assert_eq!(counted.per_message[0], 0);
    assert!(counted.per_message[1] > 0 && counted.per_message[2] > 0);
    // an OpenAI compaction item drops nothing: the window /responses/compact returns keeps
    // the user messages before it
    let openai = json!([
        {"role": "user", "content": long},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA".repeat(100)},
        {"role": "user", "content": "next"}]);
    let counted = count(&openai, &model("gpt-4o"));
    assert!(counted.per_message[0] > 500);
    // opaque: a quarter of its characters, as encrypted reasoning, and never exact
    assert_eq!(
        counted.by_kind.reasoning,
        500u64.div_ceil(REDACTED_CHARS_PER_TOKEN)
    );
    assert!(!counted.exact);
}

#[test]
fn earlier_thinking_counts_only_for_the_models_that_keep_it() {
    // Two user turns, each a tool loop with thinking: Sonnet 4.5 keeps only the current
    // turn's thinking (the first turn's is dropped once the second user message starts),
    // Opus 4.6 keeps all of it (Anthropic's extended-thinking docs, per model).
    let first = "Plan: read the config first, then the tests.";
    let second = "Now the parser: it reads the header twice.";
    let input = json!([
        {"role": "user", "content": "Why does the build fail?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": first, "signature": "sig-1"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "build.toml"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "[build]\nstrict = true"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Strict mode is on."}]},
        {"role": "user", "content": "And the parser?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": second, "signature": "sig-2"},
            {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "src/parse.rs"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "fn header() {}"}]}
    ]);
    let tokens = |t: &str| count_tokens(t, Encoding::O200kBase).unwrap() as u64;
    let keeps = count(&input, &model("claude-opus-4-6"));
    let drops = count(&input, &model("claude-sonnet-4-5"));
    assert!(keeps.model.as_ref().unwrap().earlier_thinking);
    assert!(!drops.model.as_ref().unwrap().earlier_thinking);
    assert_eq!(keeps.by_kind.reasoning, tokens(first) + tokens(second));
    assert_eq!(drops.by_kind.reasoning, tokens(second));
    assert_eq!(keeps.total - drops.total, tokens(first));
    assert_eq!(keeps.per_message[1] - drops.per_message[1], tokens(first));
    assert_eq!(keeps.per_message[5], drops.per_message[5]);
    assert_eq!(drops.per_message.iter().sum::<u64>() + 3, drops.total);
    // the same from the cache: a message counted before is not read again, and dropped alike
    let mut cache = CountCache::new(64);
    let c = conv(&input);
    let once = count_conversation(&c, &model("claude-sonnet-4-5"), &mut cache).unwrap();
    let again = count_conversation(&c, &model("claude-sonnet-4-5"), &mut cache).unwrap();
    assert_eq!(once, again);
    assert_eq!(once.total, drops.total);
    // a caller's entry says otherwise
    let mut models = ModelOverrides::default();
    models.insert(
        "claude-sonnet-4-5",
        ModelOverride {
            earlier_thinking: Some(true),
            ..ModelOverride::default()
        },
    );
    let overridden = count(
        &input,
        &CountMessagesOptions {
            models,
            ..model("claude-sonnet-4-5")
        },
    );
    assert_eq!(overridden.total, keeps.total);
    // a user message right after tool results is sent with them (AI SDK messages, whose
    // provider merges them into one user message): the turn goes on
    let aisdk = json!([
        {"role": "user", "content": "Why does the build fail?"},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": first, "providerOptions": {"anthropic": {"signature": "sig-1"}}},
            {"type": "tool-call", "toolCallId": "t1", "toolName": "read", "input": {"path": "build.toml"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "read", "output": {"type": "text", "value": "strict = true"}}]},
        {"role": "user", "content": "Keep going."},
        {"role": "assistant", "content": [{"type": "text", "text": "Strict mode is on."}]},
        {"role": "user", "content": "And the parser?"}
    ]);
    let counted = count(&aisdk, &model("claude-sonnet-4-5"));
    assert_eq!(
        counted.by_kind.reasoning, 0,
        "dropped once the user's own turn starts"
    );
    let cut = json!(aisdk.as_array().unwrap()[..4].to_vec());
    let counted = count(&cut, &model("claude-sonnet-4-5"));
    assert_eq!(
        counted.by_kind.reasoning,
        tokens(first),
        "kept while the turn goes on"
    );
}
