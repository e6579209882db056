//! Request objects (`{model, system, tools, tool_choice, messages}`) and tool definitions.

use serde_json::{json, Value};

use super::*;
use crate::count::count_tokens;
use crate::encoding::Encoding;
use crate::messages::{detect_format, parse_messages, repair_messages, Format, MessagesOptions};

fn counted(input: Value, options: &CountMessagesOptions) -> MessagesCount {
    count_value(input, options, None).unwrap().0
}

fn error(input: Value, options: &CountMessagesOptions) -> CountMessagesError {
    count_value(input, options, None).unwrap_err()
}

fn with_model(name: &str) -> CountMessagesOptions {
    CountMessagesOptions {
        model: Some(name.to_owned()),
        ..CountMessagesOptions::default()
    }
}

fn tokens(text: &str) -> u64 {
    count_tokens(text, Encoding::O200kBase).unwrap() as u64
}

/// Two OpenAI messages that vote for OpenAI (a call and its result) after a user turn.
fn openai_turns() -> Value {
    json!([
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}
    ])
}

fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city"},
            "unit": {"type": "string", "enum": ["c", "f"]}
        },
        "required": ["city"]
    })
}

#[test]
fn request_fields_of_the_wrong_type_are_errors_naming_them() {
    let messages = json!([{"role": "user", "content": "hi"}]);
    let none = CountMessagesOptions::default();
    let cases = [
        (
            json!({"model": 5, "messages": messages}),
            "model: expected a string (or an AI SDK model with a modelId), found a number",
        ),
        (
            json!({"tools": "x", "messages": messages}),
            "tools: expected an array or an object, found a string",
        ),
        (
            json!({"tools": [1, 2, null], "messages": messages}),
            "tools[0]: expected a tool definition object, found a number",
        ),
        (
            json!({"tools": [{"name": "a"}, null], "messages": messages}),
            "tools[1]: expected a tool definition object, found null",
        ),
        (
            json!({"tools": {"weather": "sunny"}, "messages": messages}),
            "tools[\"weather\"]: expected a tool definition object, found a string",
        ),
        (
            json!({"tools": [{"type": "function", "function": "ls"}], "messages": messages}),
            "tools[0].function: expected an object, found a string",
        ),
        (
            json!({"tools": [{"name": 7}], "messages": messages}),
            "tools[0].name: expected a string, found a number",
        ),
        (
            json!({"tools": [{"name": "a", "input_schema": "{}"}], "messages": messages}),
            "tools[0].input_schema: expected a JSON Schema object, found a string",
        ),
        (
            json!({"tool_choice": 1, "messages": messages}),
            "tool_choice: expected a string or an object, found a number",
        ),
    ];
    for (input, message) in cases {
        let err = error(input, &none);
        assert!(matches!(err, CountMessagesError::Parse(_)), "{err:?}");
        assert_eq!(err.to_string(), message);
    }
    // A wrong field of the request object is reported even when the options name the model.
    let err = error(
        json!({"model": [], "messages": messages}),
        &with_model("gpt-4o"),
    );
    assert!(err.to_string().starts_with("model: "), "{err}");
    // Tools from the options are named as options.
    let options = CountMessagesOptions {
        tools: Some(json!([{"name": "ok"}, null])),
        ..CountMessagesOptions::default()
    };
    let err = error(messages.clone(), &options);
    assert!(matches!(err, CountMessagesError::Options(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "options.tools[1]: expected a tool definition object, found null"
    );
    // null is absent, as everywhere else.
    let plain = counted(messages.clone(), &none);
    let nulls = json!({"model": null, "tools": null, "tool_choice": null, "system": null, "messages": messages});
    assert_eq!(counted(nulls, &none), plain);
    // The same errors through the lazy path (Counting::start) and within_limit.
    let conv = parse_messages(
        &json!({"model": 5, "messages": []}),
        &MessagesOptions::default(),
    )
    .unwrap();
    let err = Counting::start(&conv, &none, None, None, &mut CountCache::new(4)).unwrap_err();
    assert!(err.to_string().starts_with("model: "), "{err}");
    assert!(within_limit(&conv, 10, &none, &mut CountCache::new(4)).is_err());
}

#[test]
fn an_ai_sdk_model_object_names_the_model() {
    // generateText's arguments, as JSON shows them: the model is an object with its modelId.
    let input = json!({
        "model": {"specificationVersion": "v2", "provider": "openai.chat", "modelId": "gpt-4o-mini"},
        "messages": [{"role": "user", "content": "hi"}]
    });
    let count = counted(input, &CountMessagesOptions::default());
    assert_eq!(count.model.unwrap().name, "gpt-4o-mini");
}

#[test]
fn the_system_prompt_is_counted_in_every_valid_shape() {
    let none = CountMessagesOptions::default();
    let text = "Answer in one short sentence.";
    let system_tokens = 3 + tokens("system") + tokens(text);
    let plain = json!([{"role": "user", "content": "hi"}]);
    let block = json!({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}});
    let shapes = [
        json!(text),
        json!([block]),
        json!([{"type": "text", "text": "Answer in one"}, {"type": "text", "text": " short sentence."}]),
    ];
    for system in shapes {
        // With plain messages and with OpenAI messages that outvote the system's shape.
        for messages in [plain.clone(), openai_turns()] {
            let input = json!({"system": system, "messages": messages});
            let count = counted(input.clone(), &none);
            assert!(count.system > 0, "{input}");
            assert_eq!(count.by_role["system"], count.system);
            if system.is_string() || system.as_array().is_some_and(|a| a.len() == 1) {
                assert_eq!(count.system, system_tokens, "{input}");
            }
            // Reading and writing it back leaves the request object as it was.
            let repaired = repair_messages(&input, &MessagesOptions::default()).unwrap();
            assert_eq!(repaired.messages, input);
        }
    }
    // Named formats read it too.
    for format in [Format::OpenAi, Format::Anthropic] {
        let options = CountMessagesOptions {
            format: Some(format),
            ..CountMessagesOptions::default()
        };
        let count = counted(json!({"system": [block], "messages": plain}), &options);
        assert_eq!(count.system, system_tokens, "{format:?}");
    }
}

#[test]
fn a_system_prompt_no_format_has_is_an_error_naming_it() {
    let none = CountMessagesOptions::default();
    let plain = json!([{"role": "user", "content": "hi"}]);
    let object = json!({"type": "text", "text": "Be brief."});
    for messages in [plain.clone(), openai_turns()] {
        let err = error(json!({"system": object, "messages": messages}), &none);
        assert_eq!(
            err.to_string(),
            "system: expected a string or an array, found an object"
        );
    }
    let err = error(json!({"system": 5, "messages": plain}), &none);
    assert_eq!(
        err.to_string(),
        "system: expected a string or an array, found a number"
    );
    let err = error(json!({"system": [5], "messages": plain}), &none);
    assert!(err.to_string().starts_with("system[0]"), "{err}");
}

#[test]
fn a_request_objects_tools_and_tool_choice_tell_its_format() {
    let user = json!([{"role": "user", "content": "hi"}]);
    let aisdk = json!({"tools": {"weather": {"description": "d", "inputSchema": {"jsonSchema": weather_schema()}}}, "messages": user});
    assert_eq!(detect_format(&aisdk), Some(Format::AiSdk));
    // generateText's arguments: a string system (both formats have one) and a tool map.
    let mut args = aisdk.clone();
    args["system"] = json!("Be brief.");
    assert_eq!(detect_format(&args), Some(Format::AiSdk));
    let count = counted(args, &CountMessagesOptions::default());
    assert_eq!(
        (count.format, count.system),
        (Format::AiSdk, 3 + tokens("system") + tokens("Be brief."))
    );
    let anthropic =
        json!({"tools": [{"name": "weather", "input_schema": weather_schema()}], "messages": user});
    assert_eq!(detect_format(&anthropic), Some(Format::Anthropic));
    let openai =
        json!({"tools": [{"type": "function", "function": {"name": "weather"}}], "messages": user});
    assert_eq!(detect_format(&openai), Some(Format::OpenAi));
    let forced = json!({"tool_choice": {"type": "any"}, "messages": user});
    assert_eq!(detect_format(&forced), Some(Format::Anthropic));
    let required = json!({"tool_choice": "required", "messages": user});
    assert_eq!(detect_format(&required), Some(Format::OpenAi));
    let sdk_choice = json!({"toolChoice": "required", "messages": user});
    assert_eq!(detect_format(&sdk_choice), Some(Format::AiSdk));
}

/// The same weather tool in the shapes the AI SDK passes it.
fn sdk_tools(schema: Value, key: &str) -> Value {
    json!({"weather": {"description": "Get the weather", key: schema}})
}

#[test]
fn ai_sdk_tools_count_their_json_schema() {
    let user = json!([{"role": "user", "content": "What is the weather in Paris?"}]);
    let openai_shaped = json!([{"type": "function", "function": {
        "name": "weather", "description": "Get the weather", "parameters": weather_schema()}}]);
    for model in ["gpt-4o", "claude-sonnet-4-5", "gemini-2.5-pro"] {
        let tools_of = |tools: Value| {
            let options = CountMessagesOptions {
                tools: Some(tools),
                ..with_model(model)
            };
            counted(user.clone(), &options).tools
        };
        let reference = tools_of(sdk_tools(weather_schema(), "inputSchema"));
        assert!(reference > 0);
        // jsonSchema() (v5 inputSchema, v4 parameters) holds the same JSON Schema.
        let wrapped = json!({"jsonSchema": weather_schema()});
        assert_eq!(
            tools_of(sdk_tools(wrapped.clone(), "inputSchema")),
            reference,
            "{model}"
        );
        assert_eq!(
            tools_of(sdk_tools(wrapped, "parameters")),
            reference,
            "{model}"
        );
        if model == "gpt-4o" {
            // The cookbook's count reads the same properties whatever the shape.
            assert_eq!(tools_of(openai_shaped.clone()), reference);
        }
    }
    // For Claude an AI SDK entry counts as the definition Anthropic receives.
    let options = CountMessagesOptions {
        tools: Some(sdk_tools(weather_schema(), "inputSchema")),
        ..with_model("claude-sonnet-4-5")
    };
    let sent = json!([{"name": "weather", "description": "Get the weather", "input_schema": weather_schema()}]);
    assert_eq!(
        counted(user, &options).tools,
        tokens(&sent.to_string()) + anthropic_tool_prompt("claude-sonnet-4-5", ToolChoice::Auto)
    );
}

/// `z.object({ city: z.string(), unit: z.enum(["c", "f"]).optional(), days: z.number().int() })`
/// as `JSON.stringify` writes it with Zod 4.
fn zod4_schema() -> Value {
    json!({"def": {"type": "object", "shape": {
        "city": {"def": {"type": "string"}, "type": "string"},
        "unit": {"def": {"type": "optional", "innerType": {"def": {"type": "enum", "entries": {"c": "c", "f": "f"}},
            "type": "enum", "enum": {"c": "c", "f": "f"}, "options": ["c", "f"]}}, "type": "optional"},
        "days": {"def": {"type": "number", "checks": [{"def": {"type": "number", "check": "number_format",
            "abort": false, "format": "safeint"}, "type": "number", "isFinite": true}]}, "type": "number", "isFinite": true}
    }}, "type": "object"})
}

#[test]
fn a_zod_schema_counts_as_its_json_schema_never_its_internals() {
    let user = json!([{"role": "user", "content": "What is the weather in Paris?"}]);
    // What Zod 4's toJSONSchema writes for it (as the AI SDK asks: draft 7, input types).
    let written = json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "days": {"type": "integer"}
        },
        "required": ["city", "days"],
        "additionalProperties": false,
        "$schema": "http://json-schema.org/draft-07/schema#"
    });
    for model in ["gpt-4o", "claude-sonnet-4-5"] {
        let tools_of = |schema: Value, key: &str| {
            let options = CountMessagesOptions {
                tools: Some(sdk_tools(schema, key)),
                ..with_model(model)
            };
            let count = counted(user.clone(), &options);
            assert!(!count.exact);
            count.tools
        };
        let zod = tools_of(zod4_schema(), "inputSchema");
        assert_eq!(zod, tools_of(written.clone(), "inputSchema"), "{model}");
        assert_eq!(zod, tools_of(zod4_schema(), "parameters"), "{model}");
    }
}

#[test]
fn a_zod_3_object_hides_its_properties_and_is_priced_as_a_guess() {
    let user = json!([{"role": "user", "content": "hi"}]);
    // z.object({...}) of Zod 3: its shape is a function, so JSON shows no properties.
    let hidden = json!({"_def": {"unknownKeys": "strip", "catchall": {"_def": {"typeName": "ZodNever"}},
        "typeName": "ZodObject"}, "~standard": {"version": 1, "vendor": "zod"}, "_cached": null});
    let options = CountMessagesOptions {
        tools: Some(sdk_tools(hidden.clone(), "parameters")),
        ..with_model("claude-sonnet-4-5")
    };
    let sent = json!([{"name": "weather", "description": "Get the weather", "input_schema":
        {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}}]);
    assert_eq!(
        counted(user.clone(), &options).tools,
        tokens(&sent.to_string()) + OPAQUE_OBJECT_TOKENS + 346
    );
    // After a parse Zod 3 caches its shape, descriptions included: then they count.
    let cached = json!({"_def": {"typeName": "ZodObject"}, "_cached": {"shape": {
        "city": {"_def": {"checks": [], "typeName": "ZodString", "description": "The city"}},
        "unit": {"_def": {"typeName": "ZodOptional", "innerType": {"_def": {"typeName": "ZodEnum", "values": ["c", "f"]}}}}
    }, "keys": ["city", "unit"]}});
    let options = CountMessagesOptions {
        tools: Some(sdk_tools(cached, "parameters")),
        ..with_model("gpt-4o")
    };
    let plain = CountMessagesOptions {
        tools: Some(sdk_tools(weather_schema(), "parameters")),
        ..with_model("gpt-4o")
    };
    assert_eq!(
        counted(user.clone(), &options).tools,
        counted(user, &plain).tools
    );
}

#[test]
fn claude_requests_with_tools_count_anthropics_tool_use_system_prompt() {
    let input = |model: &str, choice: Option<Value>| {
        let mut request = json!({
            "model": model,
            "tools": [{"name": "read_file", "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
            "messages": [{"role": "user", "content": "read a.txt"}]
        });
        if let Some(choice) = choice {
            request["tool_choice"] = choice;
        }
        request
    };
    let definitions = |request: &Value| tokens(&request["tools"].to_string());
    let none = CountMessagesOptions::default();
    let cases = [
        ("claude-sonnet-4-5-20250929", None, 346),
        ("claude-opus-4-1", Some(json!({"type": "auto"})), 346),
        ("claude-haiku-4-5", Some(json!({"type": "none"})), 346),
        ("claude-sonnet-4", Some(json!({"type": "any"})), 313),
        (
            "claude-3-7-sonnet-latest",
            Some(json!({"type": "tool", "name": "read_file"})),
            313,
        ),
        ("claude-3-5-sonnet-20241022", None, 346),
        ("claude-3-5-sonnet-20240620", None, 294),
        (
            "claude-3-5-sonnet-20240620",
            Some(json!({"type": "any"})),
            261,
        ),
        ("claude-3-5-haiku-20241022", None, 264),
        (
            "claude-3-5-haiku-20241022",
            Some(json!({"type": "any"})),
            340,
        ),
        ("claude-3-opus-20240229", None, 530),
        (
            "claude-3-opus-20240229",
            Some(json!({"type": "tool", "name": "x"})),
            281,
        ),
        ("claude-3-sonnet-20240229", None, 159),
        (
            "claude-3-sonnet-20240229",
            Some(json!({"type": "any"})),
            235,
        ),
        ("claude-3-haiku-20240307", None, 264),
        ("anthropic/claude-3-opus", None, 530),
    ];
    for (model, choice, prompt) in cases {
        let request = input(model, choice.clone());
        let count = counted(request.clone(), &none);
        assert_eq!(
            count.tools,
            definitions(&request) + prompt,
            "{model} {choice:?}"
        );
        assert_eq!(
            count.per_message.iter().sum::<u64>() + count.system + count.tools + 3,
            count.total
        );
        assert_eq!(count.by_kind.total(), count.total);
    }
    // The option wins over the request's tool_choice; the AI SDK's toolChoice is read too.
    let options = CountMessagesOptions {
        tool_choice: Some(ToolChoice::Any),
        ..CountMessagesOptions::default()
    };
    let request = input("claude-sonnet-4-5", Some(json!({"type": "auto"})));
    assert_eq!(
        counted(request.clone(), &options).tools,
        definitions(&request) + 313
    );
    let mut request = input("claude-sonnet-4-5", None);
    request["toolChoice"] = json!({"type": "tool", "toolName": "read_file"});
    assert_eq!(
        counted(request.clone(), &none).tools,
        definitions(&request) + 313
    );
    // No tools, no prompt; and no other provider's count changes.
    let empty = json!({"model": "claude-sonnet-4-5", "tools": [], "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(counted(empty, &none).tools, 0);
    let gpt = counted(input("gpt-4o", None), &none);
    let gpt_alone = counted(
        input("gpt-4o", None),
        &CountMessagesOptions {
            tools: Some(json!([])),
            ..none.clone()
        },
    );
    assert!(gpt.tools > 0 && gpt.tools < 50 && gpt_alone.tools == 0);
}

#[test]
fn the_tool_choice_option_is_checked() {
    let err = |v: Value| CountMessagesOptions::from_value(&v).unwrap_err();
    let e = err(json!({"toolChoice": 5}));
    assert!(!e.is_range_error());
    assert_eq!(
        e.to_string(),
        "options.toolChoice: expected a string or an object, found a number"
    );
    let e = err(json!({"toolChoice": "sometimes"}));
    assert!(
        e.is_range_error()
            && e.to_string()
                .starts_with("options.toolChoice: unknown tool choice"),
        "{e}"
    );
    for (value, choice) in [
        (json!("auto"), ToolChoice::Auto),
        (json!("none"), ToolChoice::Auto),
        (json!("required"), ToolChoice::Any),
        (json!({"type": "tool", "toolName": "x"}), ToolChoice::Any),
        (
            json!({"type": "function", "function": {"name": "x"}}),
            ToolChoice::Any,
        ),
        (
            json!({"type": "allowed_tools", "mode": "required", "tools": []}),
            ToolChoice::Any,
        ),
        (
            json!({"type": "allowed_tools", "mode": "auto", "tools": []}),
            ToolChoice::Auto,
        ),
    ] {
        let options = CountMessagesOptions::from_value(&json!({"toolChoice": value})).unwrap();
        assert_eq!(options.tool_choice, Some(choice), "{value}");
    }
}
