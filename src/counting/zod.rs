//! A JSON Schema estimated from what a Zod schema shows of itself as JSON.
//!
//! The AI SDK takes tool input schemas as Zod schemas and converts them to JSON Schema before
//! sending them (`z.toJSONSchema` for Zod 4, a bundled `zod-to-json-schema` for Zod 3). This
//! crate sees a Zod schema only as `JSON.stringify` writes it: Zod 4 as `{ def, type }` (its
//! descriptions live in a registry outside the object, so they are lost), Zod 3 as `{ _def }`
//! (descriptions kept, but an object's `shape` is a function, so its properties are lost unless
//! a parse left them in `_cached`). From that the JSON Schema is rebuilt as far as it shows:
//! types, properties, `required`, enums, literals, arrays, unions. An object whose properties
//! cannot be seen is [`OPAQUE_OBJECT_TOKENS`]. Either way the result is an estimate.

use serde_json::{json, Map, Value};

/// The tokens assumed for an object schema whose properties cannot be seen (a Zod 3 object):
/// about the size of `{"type":"object","properties":{...},"required":[...]}` with two or three
/// properties and short descriptions, a guess.
pub const OPAQUE_OBJECT_TOKENS: u64 = 50;

/// Schemas nested deeper than this are read as `{}` (any value).
const MAX_DEPTH: usize = 32;

/// Whether `value` is a Zod schema as JSON (Zod 4's `{ def, type }` or `_zod`, Zod 3's
/// `{ _def }`), not a JSON Schema: no JSON Schema keyword is named `def`, `_def` or `_zod`.
pub(crate) fn is_zod(value: &Value) -> bool {
    let Value::Object(obj) = value else {
        return false;
    };
    obj.contains_key("_zod")
        || obj.get("_def").is_some_and(Value::is_object)
        || (obj.get("def").is_some_and(Value::is_object)
            && obj.get("type").is_some_and(Value::is_string))
}

/// The JSON Schema a Zod schema stands for, as far as its JSON shows, and how many of its
/// objects hid their properties (each to be priced at [`OPAQUE_OBJECT_TOKENS`]).
pub(crate) fn estimate(schema: &Value) -> (Value, u64) {
    let mut reader = Reader { opaque: 0 };
    let mut out = reader.schema(schema, 0);
    // NOTE: both of the AI SDK's conversions name the draft they write.
    if let Value::Object(obj) = &mut out {
        obj.insert("$schema".to_owned(), json!(DRAFT_7));
    }
    (out, reader.opaque)
}

/// The `$schema` of the AI SDK's JSON Schemas.
const DRAFT_7: &str = "http://json-schema.org/draft-07/schema#";

struct Reader {
    opaque: u64,
}

fn str_field<'a>(def: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    def.get(key).and_then(Value::as_str)
}

impl Reader {
    fn schema(&mut self, schema: &Value, depth: usize) -> Value {
        if depth >= MAX_DEPTH {
            return json!({});
        }
        let Value::Object(obj) = schema else {
            return json!({});
        };
        if let Some(Value::Object(def)) = obj.get("def") {
            return self.zod4(def, depth);
        }
        if let Some(Value::Object(def)) = obj.get("_def") {
            let mut out = self.zod3(obj, def, depth);
            if let (Some(description), Value::Object(out)) =
                (str_field(def, "description"), &mut out)
            {
                out.insert(
                    "description".to_owned(),
                    Value::String(description.to_owned()),
                );
            }
            return out;
        }
        json!({})
    }

    fn list(&mut self, items: Option<&Value>, depth: usize) -> Vec<Value> {
        match items {
            Some(Value::Array(items)) => items.iter().map(|s| self.schema(s, depth + 1)).collect(),
            _ => Vec::new(),
        }
    }

    /// Zod 4: `def.type` names the kind; wrappers hold `innerType`.
    fn zod4(&mut self, def: &Map<String, Value>, depth: usize) -> Value {
        let inner = |key: &str| def.get(key);
        match str_field(def, "type").unwrap_or("") {
            "string" => match str_field(def, "format") {
                Some(format) => json!({"type": "string", "format": format}),
                None => json!({"type": "string"}),
            },
            "number" if integer(def) => json!({"type": "integer"}),
            "number" => json!({"type": "number"}),
            "bigint" => json!({"type": "integer"}),
            "boolean" => json!({"type": "boolean"}),
            "null" => json!({"type": "null"}),
            "literal" => literal(inner("values")),
            "enum" => match inner("entries") {
                Some(Value::Object(entries)) => {
                    json!({"type": "string", "enum": entries.values().cloned().collect::<Vec<_>>()})
                }
                _ => json!({"type": "string"}),
            },
            "array" => match inner("element") {
                Some(element) => json!({"type": "array", "items": self.schema(element, depth + 1)}),
                None => json!({"type": "array"}),
            },
            "object" => match inner("shape") {
                Some(Value::Object(shape)) => self.object(shape, depth, |s| {
                    s.get("def")
                        .and_then(|d| d.get("type"))
                        .and_then(Value::as_str)
                }),
                _ => json!({"type": "object"}),
            },
            "optional" | "default" | "prefault" | "readonly" | "catch" | "nonoptional" => {
                self.inner(inner("innerType"), depth)
            }
            "nullable" => nullable(self.inner(inner("innerType"), depth)),
            "union" => self.union(def, depth),
            "intersection" => self.intersection(def, depth),
            "tuple" => self.tuple(def, depth),
            "record" => self.record(def, depth),
            "pipe" => self.inner(inner("in"), depth),
            _ => json!({}),
        }
    }

    /// Zod 3: `_def.typeName` names the kind. An object's shape is a function (absent in JSON),
    /// so its properties show only in `_cached` (filled by a first parse).
    fn zod3(
        &mut self,
        schema: &Map<String, Value>,
        def: &Map<String, Value>,
        depth: usize,
    ) -> Value {
        let inner = |key: &str| def.get(key);
        match str_field(def, "typeName").unwrap_or("") {
            "ZodString" => json!({"type": "string"}),
            "ZodNumber" => json!({"type": "number"}),
            "ZodBigInt" => json!({"type": "integer"}),
            "ZodBoolean" => json!({"type": "boolean"}),
            "ZodNull" => json!({"type": "null"}),
            "ZodLiteral" => match inner("value") {
                Some(value) => json!({"const": value}),
                None => json!({}),
            },
            "ZodEnum" => match inner("values") {
                Some(values @ Value::Array(_)) => json!({"type": "string", "enum": values}),
                _ => json!({"type": "string"}),
            },
            "ZodNativeEnum" => match inner("values") {
                Some(Value::Object(values)) => {
                    json!({"enum": values.values().cloned().collect::<Vec<_>>()})
                }
                _ => json!({}),
            },
            "ZodArray" => match inner("type") {
                Some(element) => json!({"type": "array", "items": self.schema(element, depth + 1)}),
                None => json!({"type": "array"}),
            },
            "ZodObject" => {
                let shape = schema.get("_cached").and_then(|c| c.get("shape"));
                match shape {
                    Some(Value::Object(shape)) => self.object(shape, depth, |s| {
                        s.get("_def")
                            .and_then(|d| d.get("typeName"))
                            .and_then(Value::as_str)
                    }),
                    _ => {
                        self.opaque += 1;
                        json!({"type": "object"})
                    }
                }
            }
            "ZodOptional" | "ZodDefault" | "ZodCatch" | "ZodReadonly" => {
                self.inner(inner("innerType"), depth)
            }
            "ZodBranded" => self.inner(inner("type"), depth),
            "ZodNullable" => nullable(self.inner(inner("innerType"), depth)),
            "ZodUnion" | "ZodDiscriminatedUnion" => self.union(def, depth),
            "ZodIntersection" => self.intersection(def, depth),
            "ZodTuple" => self.tuple(def, depth),
            "ZodRecord" => self.record(def, depth),
            "ZodEffects" => self.inner(inner("schema"), depth),
            "ZodPipeline" => self.inner(inner("in"), depth),
            _ => json!({}),
        }
    }

    // NOTE: Zod 3 and 4 name the parts of these four kinds alike.
    fn union(&mut self, def: &Map<String, Value>, depth: usize) -> Value {
        json!({"anyOf": self.list(def.get("options"), depth)})
    }

    fn intersection(&mut self, def: &Map<String, Value>, depth: usize) -> Value {
        json!({"allOf": [
            self.inner(def.get("left"), depth),
            self.inner(def.get("right"), depth),
        ]})
    }

    fn tuple(&mut self, def: &Map<String, Value>, depth: usize) -> Value {
        json!({"type": "array", "prefixItems": self.list(def.get("items"), depth)})
    }

    fn record(&mut self, def: &Map<String, Value>, depth: usize) -> Value {
        json!({
            "type": "object",
            "additionalProperties": self.inner(def.get("valueType"), depth),
        })
    }

    fn inner(&mut self, schema: Option<&Value>, depth: usize) -> Value {
        schema.map_or_else(|| json!({}), |s| self.schema(s, depth + 1))
    }

    /// An object of `shape`; a property is required unless its kind (read by `kind`) makes it
    /// optional. Like the AI SDK's conversion, no other properties are allowed.
    fn object(
        &mut self,
        shape: &Map<String, Value>,
        depth: usize,
        kind: impl Fn(&Value) -> Option<&str>,
    ) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (key, property) in shape {
            let optional = matches!(
                kind(property),
                Some("optional" | "default" | "ZodOptional" | "ZodDefault")
            );
            if !optional {
                required.push(Value::String(key.clone()));
            }
            properties.insert(key.clone(), self.schema(property, depth + 1));
        }
        let mut out = Map::new();
        out.insert("type".to_owned(), json!("object"));
        out.insert("properties".to_owned(), Value::Object(properties));
        if !required.is_empty() {
            out.insert("required".to_owned(), Value::Array(required));
        }
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
        Value::Object(out)
    }
}

/// Whether a Zod 4 number is an integer: `z.int()` says so in its format, `z.number().int()`
/// in one of its checks.
fn integer(def: &Map<String, Value>) -> bool {
    let int_format =
        |def: &Map<String, Value>| str_field(def, "format").is_some_and(|f| f.contains("int"));
    int_format(def)
        || matches!(def.get("checks"), Some(Value::Array(checks)) if checks.iter().any(|check| {
            matches!(check.get("def"), Some(Value::Object(def)) if int_format(def))
        }))
}

fn literal(values: Option<&Value>) -> Value {
    match values {
        Some(Value::Array(values)) if values.len() == 1 => match values.first() {
            Some(value) => json!({"const": value}),
            None => json!({}),
        },
        Some(values @ Value::Array(_)) => json!({"enum": values}),
        _ => json!({}),
    }
}

fn nullable(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

/// What the AI SDK does to the JSON Schema of a Zod 4 schema before sending it
/// (`addAdditionalPropertiesToJsonSchema`): every object schema, down its properties and array
/// items, gets `additionalProperties: false` unless it holds a schema there. The bindings do it
/// to the JSON Schema a Zod 4 schema writes of itself (`toJSONSchema()`).
///
/// ```
/// use serde_json::json;
/// let mut schema = json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}});
/// context_keeper::counting::close_objects(&mut schema);
/// assert_eq!(schema["additionalProperties"], false);
/// assert_eq!(schema["properties"]["a"]["items"]["additionalProperties"], false);
/// ```
pub fn close_objects(schema: &mut Value) {
    close_from(schema, 0);
}

/// Schemas nested deeper than this are left as they are by [`close_objects`].
const CLOSE_DEPTH: usize = 128;

fn close_from(schema: &mut Value, depth: usize) {
    // NOTE: a schema read from JS nests at most 128 levels; this bound only makes that plain.
    if depth > CLOSE_DEPTH {
        return;
    }
    let Value::Object(obj) = schema else {
        return;
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("object") => {
            match obj.get_mut("additionalProperties") {
                Some(inner @ Value::Object(_)) => close_from(inner, depth + 1),
                _ => {
                    obj.insert("additionalProperties".to_owned(), Value::Bool(false));
                }
            }
            if let Some(Value::Object(properties)) = obj.get_mut("properties") {
                for property in properties.values_mut() {
                    close_from(property, depth + 1);
                }
            }
        }
        Some("array") => match obj.get_mut("items") {
            Some(Value::Array(items)) => {
                for item in items {
                    close_from(item, depth + 1);
                }
            }
            Some(item) => close_from(item, depth + 1),
            None => {}
        },
        _ => {}
    }
}
