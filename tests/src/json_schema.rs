//! A validator for the subset of JSON Schema (2020-12) that `schemars` emits into the
//! OpenAPI description: `$ref` into the document, `type` (one or several), `enum`,
//! `const`, `properties`, `required`, `additionalProperties`, `items`, `anyOf`,
//! `oneOf`, `allOf`, `minimum`. Anything else is ignored (so it never rejects what a
//! full validator would accept for those keywords).

use serde_json::Value;

/// Checks `value` against `schema`, resolving `#/...` references in `root`. The error
/// names the JSON path of the first mismatch.
pub fn validate(schema: &Value, value: &Value, root: &Value) -> Result<(), String> {
    check(schema, value, root, "$", 0)
}

fn check(
    schema: &Value,
    value: &Value,
    root: &Value,
    at: &str,
    depth: usize,
) -> Result<(), String> {
    if depth > 64 {
        return Err(format!("{at}: schema nesting too deep"));
    }
    let schema = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{at}: no value is allowed here")),
        Value::Object(map) => map,
        _ => return Err(format!("{at}: the schema is not an object")),
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .ok_or_else(|| format!("{at}: unresolved $ref {reference}"))?;
        check(target, value, root, at, depth + 1)?;
    }
    if let Some(types) = schema.get("type") {
        let allowed: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.iter().any(|t| is_type(value, t)) {
            return Err(format!("{at}: {value} is not of type {allowed:?}"));
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            return Err(format!("{at}: {value} is not one of {options:?}"));
        }
    }
    if let Some(constant) = schema.get("const") {
        if constant != value {
            return Err(format!("{at}: {value} is not {constant}"));
        }
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if n < min {
            return Err(format!("{at}: {n} is below {min}"));
        }
    }
    if let Value::Object(fields) = value {
        let props = schema.get("properties").and_then(Value::as_object);
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !fields.contains_key(name) {
                return Err(format!("{at}: required field `{name}` is missing"));
            }
        }
        for (name, field) in fields {
            let path = format!("{at}.{name}");
            match props.and_then(|p| p.get(name)) {
                Some(sub) => check(sub, field, root, &path, depth + 1)?,
                None => {
                    if let Some(extra) = schema.get("additionalProperties") {
                        check(extra, field, root, &path, depth + 1)
                            .map_err(|e| format!("{e} (field not in the schema)"))?;
                    }
                }
            }
        }
    }
    if let (Some(items), Value::Array(list)) = (schema.get("items"), value) {
        for (i, item) in list.iter().enumerate() {
            check(items, item, root, &format!("{at}[{i}]"), depth + 1)?;
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for sub in all {
            check(sub, value, root, at, depth + 1)?;
        }
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array) {
        if !any
            .iter()
            .any(|sub| check(sub, value, root, at, depth + 1).is_ok())
        {
            return Err(format!("{at}: {value} matches none of anyOf"));
        }
    }
    if let Some(one) = schema.get("oneOf").and_then(Value::as_array) {
        let matching = one
            .iter()
            .filter(|sub| check(sub, value, root, at, depth + 1).is_ok())
            .count();
        if matching != 1 {
            return Err(format!("{at}: {value} matches {matching} of oneOf, not 1"));
        }
    }
    Ok(())
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_and_refuses() {
        let root = json!({"defs": {"Status": {"type": "string", "enum": ["idle", "running"]}}});
        let schema = json!({"type": "object", "required": ["id", "status"],
            "additionalProperties": false,
            "properties": {"id": {"type": "string"}, "status": {"$ref": "#/defs/Status"},
                           "n": {"type": ["integer", "null"], "minimum": 0},
                           "tags": {"type": "array", "items": {"type": "string"}},
                           "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}});
        let ok = json!({"id": "a", "status": "idle", "n": null, "tags": ["x"], "either": 3});
        assert_eq!(validate(&schema, &ok, &root), Ok(()));
        for (bad, why) in [
            (json!({"id": "a"}), "required field `status`"),
            (json!({"id": 1, "status": "idle"}), "$.id"),
            (json!({"id": "a", "status": "gone"}), "not one of"),
            (json!({"id": "a", "status": "idle", "n": -1}), "below"),
            (
                json!({"id": "a", "status": "idle", "tags": [1]}),
                "$.tags[0]",
            ),
            (
                json!({"id": "a", "status": "idle", "extra": 1}),
                "not in the schema",
            ),
            (
                json!({"id": "a", "status": "idle", "either": true}),
                "oneOf",
            ),
        ] {
            let e = validate(&schema, &bad, &root).err().unwrap_or_default();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
