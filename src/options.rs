//! Options read from JSON with the path of the field at fault: `thresholds.prune: invalid type:
//! string "high", expected f64` (which the package's error class puts in a JS caller's words,
//! pkg-template/errors.js: `expected a number, found the string "high"`).
//!
//! serde's errors name what was wrong, not where. Every options type of the context layer
//! defaults its fields (`#[serde(default)]`), so an object holding one of its fields alone is
//! one it can read, and a field at fault fails alone too, with the same error. [`from_value`]
//! reads the options once; only when that fails does it look for the field, reading the options
//! again with one field at a time kept along the way down. That costs a few reads of the
//! small options object on an error, and no code on the way that succeeds (the
//! `serde_path_to_error` crate, which tracks the path while reading, was 49 KB of the
//! `context-keeper/lite` build's code).

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Why options could not be read: where (`thresholds.prune`, `tools.allow[0]`; empty for
/// the options themselves) and serde's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    /// The path of the field at fault, from the options object.
    pub path: String,
    /// What was wrong with it.
    pub message: String,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_str() {
            "" => f.write_str(&self.message),
            path => write!(f, "{path}: {}", self.message),
        }
    }
}

impl std::error::Error for PathError {}

/// One step down a JSON value.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// Reads `T` from `value`.
///
/// # Errors
/// serde's error, with the path of the deepest field whose value, kept alone on its way
/// down from the root, fails with the same message. An object that fails alike with none of
/// its fields (a required one is missing) is named itself; the options' own path (empty)
/// when no field fails alone (two that are wrong only together, say).
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, PathError> {
    // NOTE: options objects are small; the copy is what the search reads.
    let whole = value.clone();
    let message = match T::deserialize(value) {
        Ok(options) => return Ok(options),
        Err(err) => err.to_string(),
    };
    let fails_alike = |probe: Option<Value>| match probe.map(T::deserialize) {
        Some(Err(err)) => err.to_string() == message,
        _ => false,
    };
    let mut path: Vec<Step> = Vec::new();
    'down: loop {
        let (steps, empty): (Vec<Step>, Value) = match at(&whole, &path) {
            Some(Value::Object(map)) => (
                map.keys().cloned().map(Step::Key).collect(),
                Value::Object(Map::new()),
            ),
            Some(Value::Array(items)) => (
                (0..items.len()).map(Step::Index).collect(),
                Value::Array(Vec::new()),
            ),
            _ => break,
        };
        // NOTE: an object that fails with none of its fields (a required one is missing) is
        // the one at fault; any field of it alone would fail alike.
        if !path.is_empty() && fails_alike(keep_only(&whole, &path, Some(&empty))) {
            break;
        }
        for step in steps {
            path.push(step);
            if fails_alike(keep_only(&whole, &path, None)) {
                continue 'down;
            }
            path.pop();
        }
        break;
    }
    Err(PathError {
        path: render(&path),
        message,
    })
}

/// The value at `path`.
fn at<'v>(value: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, step| match (v, step) {
        (Value::Object(map), Step::Key(key)) => map.get(key),
        (Value::Array(items), Step::Index(i)) => items.get(*i),
        _ => None,
    })
}

/// `value` with every object and array along `path` holding only the next step's field (an
/// array keeps its one item, now at index 0), and the value at the end whole, or `end`.
fn keep_only(value: &Value, path: &[Step], end: Option<&Value>) -> Option<Value> {
    let Some((step, rest)) = path.split_first() else {
        return Some(end.unwrap_or(value).clone());
    };
    Some(match (value, step) {
        (Value::Object(map), Step::Key(key)) => {
            let mut one = Map::new();
            one.insert(key.clone(), keep_only(map.get(key)?, rest, end)?);
            Value::Object(one)
        }
        (Value::Array(items), Step::Index(i)) => {
            Value::Array(vec![keep_only(items.get(*i)?, rest, end)?])
        }
        _ => return None,
    })
}

/// `thresholds.prune`, `tools.allow[0]`.
fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(key) if out.is_empty() => out.push_str(key),
            Step::Key(key) => {
                out.push('.');
                out.push_str(key);
            }
            Step::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

// NOTE: proptest is a host-only dev-dependency.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use proptest::prelude::any;
    use proptest::sample::{subsequence, Index};
    use serde_json::json;

    use super::*;
    use crate::context::compact::CompactOptions;
    use crate::context::keeper::KeeperOptions;
    use crate::context::prune::PruneOptions;

    fn path_of<T: DeserializeOwned + fmt::Debug>(value: Value) -> (String, String) {
        let err = from_value::<T>(value).unwrap_err();
        (err.path, err.message)
    }

    #[test]
    fn good_options_are_read_at_every_depth() {
        let value = json!({"model": "gpt-4o", "thresholds": {"prune": 0.8}, "reserveTokens": 0.1});
        let options: KeeperOptions = from_value(value).unwrap();
        // The flattened flush field included; the rest defaulted.
        assert_eq!(options.model.as_deref(), Some("gpt-4o"));
        assert_eq!(options.thresholds.prune, 0.8);
        assert_eq!(options.flush.reserve_tokens, 0.1);
        let defaults = KeeperOptions::default();
        assert_eq!(options.thresholds.compact, defaults.thresholds.compact);
        assert_eq!(options.flush.flush_margin, defaults.flush.flush_margin);
    }

    #[test]
    fn errors_name_the_field_at_fault() {
        let (path, message) = path_of::<KeeperOptions>(
            json!({"model": "gpt-4o", "thresholds": {"compact": 0.9, "prune": "high"}}),
        );
        assert_eq!(path, "thresholds.prune");
        assert_eq!(message, "invalid type: string \"high\", expected f64");
        // Fields flattened in from another struct (the flush's) are found too.
        let (path, message) =
            path_of::<KeeperOptions>(json!({"model": "gpt-4o", "reserveTokens": "x"}));
        assert_eq!(path, "reserveTokens");
        assert_eq!(message, "invalid type: string \"x\", expected f64");
        assert_eq!(
            path_of::<CompactOptions>(json!({"sessionId": "s", "flushMargin": []})).0,
            "flushMargin"
        );
        let (path, message) = path_of::<KeeperOptions>(json!({"thresholds": {"bogus": 1}}));
        assert_eq!(path, "thresholds.bogus");
        assert!(message.starts_with("unknown field `bogus`"), "{message}");
        assert_eq!(path_of::<KeeperOptions>(json!({"modle": "x"})).0, "modle");
        assert_eq!(
            path_of::<PruneOptions>(json!({"tools": {"allow": ["read", 1]}})).0,
            "tools.allow[1]"
        );
        // A nested object missing a required field is the one named, not its first field.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            need: u32,
            other: Option<u32>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            #[serde(default)]
            name: String,
            inner: Option<Inner>,
        }
        let (path, message) = path_of::<Outer>(json!({"name": "x", "inner": {"other": 1}}));
        assert_eq!(
            (path.as_str(), message.as_str()),
            ("inner", "missing field `need`")
        );
        assert_eq!(
            path_of::<Outer>(json!({"inner": {"need": 1, "other": "2"}})).0,
            "inner.other"
        );
        // Not an object at all: the options themselves.
        assert_eq!(path_of::<KeeperOptions>(json!(7)).0, "");
    }

    /// A field's path, a good value and a bad one.
    type Field = (&'static str, fn() -> Value, fn() -> Value);

    // Fields of the keeper's options at every depth.
    const FIELDS: &[Field] = &[
        ("model", || json!("gpt-4o"), || json!(4)),
        ("contextWindow", || json!(64_000), || json!("big")),
        ("minTurnsBetween", || json!(2), || json!(-2)),
        ("reserveTokens", || json!(0.1), || json!("x")),
        ("flushPrompt", || json!("save"), || json!([])),
        ("thresholds.prune", || json!(0.8), || json!(true)),
        ("thresholds.compactTarget", || json!(0.4), || json!({})),
        ("offload.limitTokens", || json!(9_000), || json!(1.5)),
        ("offload.exclude", || json!(["read"]), || json!("read")),
        ("prune.softTrimChars", || json!(500), || json!(null)),
        ("prune.tools.allow", || json!(["bash"]), || json!(7)),
        ("compact.targetTokens", || json!(1_000), || json!("many")),
        ("cacheBreakpoints", || json!(true), || json!("yes")),
    ];

    fn set(root: &mut Value, path: &str, value: Value) {
        let mut node = root;
        let mut keys = path.split('.').peekable();
        while let Some(key) = keys.next() {
            let map = node.as_object_mut().unwrap();
            if keys.peek().is_none() {
                map.insert(key.to_owned(), value);
                return;
            }
            node = map.entry(key.to_owned()).or_insert_with(|| json!({}));
        }
    }

    proptest::proptest! {
        /// Any set of good fields reads; with one of them bad, the error names that field,
        /// whatever the others and their order.
        #[test]
        fn the_bad_field_is_the_one_named(
            picked in subsequence((0..FIELDS.len()).collect::<Vec<_>>(), 1..FIELDS.len()),
            bad in any::<Index>(),
            reversed in any::<bool>(),
        ) {
            let mut picked = picked;
            if reversed {
                picked.reverse();
            }
            let mut good = json!({});
            for &i in &picked {
                set(&mut good, FIELDS[i].0, FIELDS[i].1());
            }
            proptest::prop_assert!(from_value::<KeeperOptions>(good.clone()).is_ok(), "{good}");
            let wrong = picked[bad.index(picked.len())];
            let mut options = good;
            set(&mut options, FIELDS[wrong].0, FIELDS[wrong].2());
            let err = from_value::<KeeperOptions>(options.clone()).unwrap_err();
            proptest::prop_assert_eq!(err.path.as_str(), FIELDS[wrong].0, "{}", options);
        }
    }

    #[test]
    fn paths_render_keys_and_indices() {
        let path = [
            Step::Key("tools".into()),
            Step::Key("allow".into()),
            Step::Index(3),
            Step::Key("name".into()),
        ];
        assert_eq!(render(&path), "tools.allow[3].name");
        assert_eq!(render(&[]), "");
    }
}
