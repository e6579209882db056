//! The wasm tests shared by Node (`wasm_node.rs`) and the browser (`wasm_browser.rs`): the
//! exports called as JS calls them, inside a real wasm instance.

use context_keeper::bindings::{count_tokens, estimate_tokens, CountOptions};
use js_sys::{Error, Object, RangeError, Reflect, TypeError};
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
fn errors_are_error_objects_of_the_right_class() {
    let err = JsValue::from(
        count_tokens("x".into(), Some(options(&[("encoding", "gpt2")]))).unwrap_err(),
    );
    assert!(err.is_instance_of::<RangeError>());
    assert_eq!(
        message(err),
        "unknown encoding \"gpt2\"; known encodings: o200k_base, cl100k_base"
    );
    let err = JsValue::from(count_tokens(JsValue::from_f64(1.0), None).unwrap_err());
    assert!(err.is_instance_of::<TypeError>());
    assert_eq!(message(err), "text: expected a string, found a number");
    let not_an_object: CountOptions = JsValue::from_str("o200k_base").unchecked_into();
    let err = JsValue::from(count_tokens("x".into(), Some(not_an_object)).unwrap_err());
    assert!(err.is_instance_of::<TypeError>());
    assert_eq!(message(err), "options: expected an object, found a string");
    let err = JsValue::from(estimate_tokens(JsValue::NULL).unwrap_err());
    assert!(err.is_instance_of::<TypeError>());
}

#[wasm_bindgen_test]
fn estimate_runs_in_wasm() {
    assert_eq!(
        estimate_tokens("".into()).map_err(JsValue::from).unwrap(),
        0
    );
    let n = estimate_tokens("The quick brown fox jumps over the lazy dog.".into())
        .map_err(JsValue::from)
        .unwrap();
    assert!((8..=12).contains(&n), "{n}");
}
