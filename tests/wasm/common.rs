//! The wasm tests shared by Node (`wasm_node.rs`) and the browser (`wasm_browser.rs`): the
//! exports called as JS calls them, inside a real wasm instance.

use context_keeper::bindings::{count_tokens, estimate_tokens, CountOptions};
use js_sys::{Error, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

const TEXTS: &str = include_str!("../data/texts.json");
const EXPECTED: &str = include_str!("../data/texts.expected.json");

fn options(pairs: &[(&str, &str)]) -> CountOptions {
    let object = Object::new();
    for (key, value) in pairs {
        Reflect::set(&object, &(*key).into(), &(*value).into()).unwrap();
    }
    object.unchecked_into()
}

fn message(err: JsValue) -> String {
    err.dyn_into::<Error>().unwrap().message().into()
}

/// The `name`, `kind` and `path` of a thrown error. Without an entry module no class is
/// registered, so it is an `Error` named like the package's class.
fn thrown(err: &JsValue) -> (String, String, Option<String>) {
    let field = |key: &str| Reflect::get(err, &key.into()).unwrap().as_string();
    (
        field("name").unwrap(),
        field("kind").unwrap(),
        field("path"),
    )
}

#[wasm_bindgen_test]
fn counts_equal_npm_tiktoken_inside_wasm() {
    let texts: serde_json::Map<String, serde_json::Value> = serde_json::from_str(TEXTS).unwrap();
    let expected: serde_json::Value = serde_json::from_str(EXPECTED).unwrap();
    for (name, text) in &texts {
        for encoding in ["o200k_base", "cl100k_base"] {
            let got = count_tokens(
                text.as_str().unwrap().into(),
                Some(options(&[("encoding", encoding)])),
            )
            .map_err(JsValue::from)
            .unwrap();
            assert_eq!(
                got as u64,
                expected[name][encoding].as_u64().unwrap(),
                "{name} {encoding}"
            );
        }
    }
}

#[wasm_bindgen_test]
fn models_pick_their_encoding() {
    let text = "fn main() { println!(\"héllo 世界\"); }";
    let count = |pairs: &[(&str, &str)]| {
        count_tokens(text.into(), Some(options(pairs)))
            .map_err(JsValue::from)
            .unwrap()
    };
    assert_eq!(
        count(&[("model", "gpt-4")]),
        count(&[("encoding", "cl100k_base")])
    );
    assert_eq!(
        count(&[("model", "gpt-4o-mini")]),
        count(&[("encoding", "o200k_base")])
    );
    assert_ne!(
        count(&[("encoding", "cl100k_base")]),
        count(&[("encoding", "o200k_base")])
    );
}

#[wasm_bindgen_test]
fn errors_are_error_objects_with_kind_and_path() {
    let err = JsValue::from(
        count_tokens("x".into(), Some(options(&[("encoding", "gpt2")]))).unwrap_err(),
    );
    assert_eq!(
        thrown(&err),
        (
            "ContextKeeperError".into(),
            "encoding".into(),
            Some("options.encoding".into())
        )
    );
    assert_eq!(
        message(err),
        "unknown encoding \"gpt2\"; known encodings: o200k_base, cl100k_base"
    );
    let err = JsValue::from(count_tokens(JsValue::from_f64(1.0), None).unwrap_err());
    assert_eq!(thrown(&err).1, "options");
    assert_eq!(thrown(&err).2.as_deref(), Some("text"));
    assert_eq!(message(err), "text: expected a string, found a number");
    let not_an_object: CountOptions = JsValue::from_str("o200k_base").unchecked_into();
    let err = JsValue::from(count_tokens("x".into(), Some(not_an_object)).unwrap_err());
    assert_eq!(thrown(&err).2.as_deref(), Some("options"));
    assert_eq!(message(err), "options: expected an object, found a string");
    let err = JsValue::from(estimate_tokens(JsValue::NULL).unwrap_err());
    assert!(err.is_instance_of::<Error>());
    assert_eq!(thrown(&err).0, "ContextKeeperError");
}

#[wasm_bindgen_test]
fn estimate_runs_in_wasm() {
    assert_eq!(
        estimate_tokens("".into()).map_err(JsValue::from).unwrap(),
        0
    );
    // 12 tokens exactly.
    let text = "The estimate counts words, digits and punctuation without any vocabulary.";
    let n = estimate_tokens(text.into()).map_err(JsValue::from).unwrap();
    assert!((10..=14).contains(&n), "{n}");
}

/// The JS values the walk must read as `JSON.stringify` does: what SDK messages hold, and what
/// they should not (holes, `undefined`, functions, symbols, `toJSON`, non-finite numbers, lone
/// surrogates, integer-like keys, which objects list first), plus a seeded random mix of all.
const HOSTILE: &str = r#"(() => {
  let seed = 7;
  const rand = (n) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const leaves = [0, -0, 1.5, -2, 2 ** 53, 2 ** 64, 1e21, 1e-7, NaN, Infinity, -Infinity, true, false, null,
    undefined, "", "plain", "quote \" backslash \\ newline \n tab \t nul \0", "lone \ud800 surrogate \udfff",
    "emoji 🦀 and 世界", "x".repeat(300) + "é".repeat(300), () => 1, Symbol("s"), new Date(Date.UTC(2026, 10, 22)),
    { toJSON: (key) => `key:${key}` }, { toJSON: () => undefined }, { toJSON: () => ({ nested: [1, undefined] }) },
    new Uint8Array([1, 2]), new Map([[1, 2]]), [, 1, , 2], { 2: "b", 1: "a", z: 1, y: undefined, [Symbol("k")]: 1 }];
  const make = (depth) => {
    if (depth > 4 || rand(3) === 0) return leaves[rand(leaves.length)];
    if (rand(2) === 0) return Array.from({ length: rand(4) }, () => make(depth + 1));
    const out = {};
    for (let i = rand(5); i > 0; i--) out[["role", "content", "10", "type", "x y", "", "__proto__x"][rand(7)] + i] = make(depth + 1);
    return out;
  };
  return [...leaves, leaves, ...Array.from({ length: 400 }, () => make(0))];
})()"#;

#[wasm_bindgen_test]
fn the_walk_reads_what_json_stringify_writes() {
    let cases: js_sys::Array = js_sys::eval(HOSTILE).unwrap().unchecked_into();
    assert!(cases.length() > 400);
    for value in cases.iter() {
        // NOTE: JSON.stringify escapes a lone surrogate, which reads as U+FFFD (the only
        // lone surrogates here are the two of the leaf that holds them).
        let expected = js_sys::JSON::stringify(&value)
            .ok()
            .and_then(|s| s.as_string())
            .map(|s| {
                s.replace("\\ud800", "\\ufffd")
                    .replace("\\udfff", "\\ufffd")
            });
        let read = context_keeper::bindings::read_json(&value).unwrap();
        let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
        assert_eq!(
            read.as_deref().map(parse),
            expected.as_deref().map(parse),
            "{expected:?}"
        );
    }
}

#[wasm_bindgen_test]
fn the_walk_names_the_place_of_what_has_no_json_form() {
    let read = |code: &str| context_keeper::bindings::read_json(&js_sys::eval(code).unwrap());
    assert_eq!(
        read("[{ role: 'user', content: [{ type: 'text', n: 1n }] }]").unwrap_err(),
        "value[0].content[0].n: cannot be read as JSON: a BigInt has no JSON form"
    );
    assert_eq!(
        read("({ 'a key': { get bad() { throw new Error('boom'); } } })").unwrap_err(),
        "value[\"a key\"].bad: cannot be read as JSON: boom"
    );
    let cycle = read("(() => { const a = { b: {} }; a.b.a = a; return [a]; })()").unwrap_err();
    assert!(cycle.starts_with("value[0].b.a.b.a"), "{cycle}");
    assert!(
        cycle.ends_with(": cannot be read as JSON: it is circular (an object contains itself)"),
        "{cycle}"
    );
    let deep = read("(() => { let v = 1; for (let i = 0; i < 100000; i++) v = [v]; return v; })()")
        .unwrap_err();
    assert!(deep.ends_with("nests deeper than 128 levels"), "{deep}");
    assert!(deep.len() < 200, "a long path is shortened: {deep}");
}

/// Strings are copied into wasm memory in one batch and cut apart again: lone surrogates at the
/// ends of neighbouring strings and keys must not pair up, NULs inside strings must stay, and
/// long strings (copied on their own) sit between batched ones.
#[wasm_bindgen_test]
fn the_walk_keeps_neighbouring_strings_apart() {
    let value = js_sys::eval(
        r#"[
          "end \ud83e", "\udd80 start", { "\ud83e": "\udd80", "a\u0000b": "\u0000" },
          "x".repeat(300) + "\ud83e", "\udd80" + "é".repeat(300), "", ["", "\u0000", ""],
          { "": "", "🦀": "🦀".repeat(200), "k": "🦀".repeat(129) }
        ]"#,
    )
    .unwrap();
    let expected = js_sys::JSON::stringify(&value)
        .unwrap()
        .as_string()
        .unwrap()
        .replace("\\ud83e", "\\ufffd")
        .replace("\\udd80", "\\ufffd");
    let read = context_keeper::bindings::read_json(&value)
        .unwrap()
        .unwrap();
    let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    assert_eq!(parse(&read), parse(&expected));
}

/// Nesting: 128 levels read, 129 do not; what toJSON returns is read under the same key.
#[wasm_bindgen_test]
fn the_walk_reads_128_levels_and_to_json_results() {
    let read = |code: &str| context_keeper::bindings::read_json(&js_sys::eval(code).unwrap());
    let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    assert_eq!(read(&nest(128)).unwrap(), Some(nest(128)));
    assert!(read(&nest(129))
        .unwrap_err()
        .ends_with("nests deeper than 128 levels"));
    assert_eq!(
        read("({ a: { toJSON: (k) => ({ [k]: k }) }, b: [{ toJSON: (k) => 'i' + k }] })").unwrap(),
        Some(r#"{"a":{"a":"a"},"b":["i0"]}"#.to_owned())
    );
}
