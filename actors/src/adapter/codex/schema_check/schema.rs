//! The generated schema and the checks of one value against a definition.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

pub(super) fn codex_bin() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TANDEM_TEST_CODEX_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join(
        ".vendor-clis/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    );
    path.is_file().then_some(path)
}

/// Every definition of the generated schema, by name.
pub(super) struct Schema {
    defs: HashMap<String, Value>,
}

impl Schema {
    pub(super) fn generate(bin: &PathBuf) -> Schema {
        let out = std::env::temp_dir().join(format!("tandem-codex-schema-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let status = std::process::Command::new(bin)
            .args([
                "app-server",
                "generate-json-schema",
                "--experimental",
                "--out",
            ])
            .arg(&out)
            .env("CODEX_HOME", &out)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        assert!(
            status.status.success(),
            "generate-json-schema failed: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        let mut defs = HashMap::new();
        // The main bundle holds the server requests; the v2 bundle the rest (it wins).
        for file in [
            "codex_app_server_protocol.schemas.json",
            "codex_app_server_protocol.v2.schemas.json",
        ] {
            let text = std::fs::read_to_string(out.join(file))
                .unwrap_or_else(|e| panic!("cannot read {file}: {e}"));
            let bundle: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
            if let Some(map) = bundle["definitions"].as_object() {
                for (name, def) in map {
                    if name != "v2" {
                        defs.insert(name.clone(), def.clone());
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&out);
        Schema { defs }
    }

    pub(super) fn def(&self, name: &str) -> &Value {
        self.defs
            .get(name)
            .unwrap_or_else(|| panic!("the schema has no definition {name}"))
    }

    /// Follows `$ref`s.
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> &'a Value {
        while let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or(r);
            schema = self.def(name);
        }
        schema
    }

    /// Problems with `value` against `schema` (empty when it conforms).
    pub(super) fn check(
        &self,
        schema: &Value,
        value: &Value,
        path: &str,
        outgoing: bool,
    ) -> Vec<String> {
        let schema = self.resolve(schema);
        if schema == &Value::Bool(true) || schema.as_object().is_some_and(|o| o.is_empty()) {
            return Vec::new();
        }
        let mut errors = Vec::new();
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = schema.get(key).and_then(Value::as_array) {
                let mut best: Option<Vec<String>> = None;
                for option in options {
                    let option = self.with_shared_properties(schema, option);
                    let e = self.check(&option, value, path, outgoing);
                    if e.is_empty() {
                        best = Some(e);
                        break;
                    }
                    if best.as_ref().is_none_or(|b| e.len() < b.len()) {
                        best = Some(e);
                    }
                }
                // The alternatives carry the shared properties: nothing else to check.
                return best.unwrap_or_default();
            }
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            for part in all {
                errors.extend(self.check(part, value, path, outgoing));
            }
        }
        if let Some(t) = schema.get("type") {
            let types: Vec<&str> = match t {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let actual = match value {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            let fits =
                types.contains(&actual) || (actual == "integer" && types.contains(&"number"));
            if !types.is_empty() && !fits {
                errors.push(format!("{path}: {actual} where the schema has {types:?}"));
                return errors;
            }
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
            if !allowed.contains(value) {
                errors.push(format!("{path}: {value} is not one of {allowed:?}"));
            }
        }
        if let (Some(fields), Some(props)) = (
            value.as_object(),
            schema.get("properties").and_then(Value::as_object),
        ) {
            for (key, v) in fields {
                match props.get(key) {
                    Some(p) => errors.extend(self.check(p, v, &format!("{path}.{key}"), outgoing)),
                    None => {
                        if schema.get("additionalProperties") != Some(&Value::Bool(true)) {
                            errors.push(format!("{path}.{key}: no such field in the schema"));
                        }
                    }
                }
            }
            if outgoing {
                for req in required(schema) {
                    if !fields.contains_key(&req) {
                        errors.push(format!("{path}.{req}: required by the schema, not sent"));
                    }
                }
            }
        }
        if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
            for (i, v) in list.iter().enumerate() {
                errors.extend(self.check(items, v, &format!("{path}[{i}]"), outgoing));
            }
        }
        errors
    }

    /// The object schema `value` matched (the chosen `oneOf` alternative).
    fn matched(&self, schema: &Value, value: &Value) -> Value {
        let schema = self.resolve(schema);
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = schema.get(key).and_then(Value::as_array) {
                for option in options {
                    let option = self.with_shared_properties(schema, option);
                    if self.check(&option, value, "", false).is_empty() {
                        return self.matched(&option, value);
                    }
                }
            }
        }
        schema.clone()
    }

    /// A `oneOf` alternative with the properties its parent declares for every
    /// alternative (`ThreadItem` keeps lifecycle times beside the variants).
    fn with_shared_properties(&self, parent: &Value, option: &Value) -> Value {
        let mut option = self.resolve(option).clone();
        let (Some(shared), Some(obj)) = (
            parent.get("properties").and_then(Value::as_object),
            option.as_object_mut(),
        ) else {
            return option;
        };
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            for (k, v) in shared {
                props.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let mut all = required(parent);
        all.extend(required(&Value::Object(obj.clone())));
        obj.insert("required".into(), json!(all));
        option
    }

    /// Method names of a `oneOf` of messages (`ClientRequest`, `ServerNotification`, ...).
    pub(super) fn methods(&self, name: &str) -> BTreeSet<String> {
        self.def(name)["oneOf"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.pointer("/properties/method/enum/0"))
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub(super) fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the field at `path` (object keys and array indexes) from `value`.
pub(super) fn without(value: &Value, path: &[String]) -> Value {
    let mut copy = value.clone();
    let mut node = &mut copy;
    for (i, step) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        node = match node {
            Value::Object(map) if last => {
                map.remove(step);
                return copy;
            }
            Value::Object(map) => match map.get_mut(step) {
                Some(next) => next,
                None => return copy,
            },
            Value::Array(list) => match step.parse::<usize>().ok().and_then(|i| list.get_mut(i)) {
                Some(next) => next,
                None => return copy,
            },
            _ => return copy,
        };
    }
    copy
}

/// Every field, at any depth, that our type `T` cannot be read without, checked
/// against what the schema requires of the object holding it.
pub(super) fn check_needed<T: DeserializeOwned>(
    schema: &Schema,
    node_schema: &Value,
    sample: &Value,
    node: &Value,
    path: &mut Vec<String>,
    errors: &mut Vec<String>,
) {
    match node {
        Value::Object(map) => {
            let object = schema.matched(node_schema, node);
            let theirs = required(&object);
            let props = object.get("properties").cloned().unwrap_or(Value::Null);
            for (key, child) in map {
                path.push(key.clone());
                let needed = serde_json::from_value::<T>(without(sample, path)).is_err();
                if needed && !theirs.contains(key) {
                    errors.push(format!(
                        "{}: we cannot parse without it, but the schema makes it optional",
                        path.join(".")
                    ));
                }
                if let Some(child_schema) = props.get(key) {
                    check_needed::<T>(schema, child_schema, sample, child, path, errors);
                }
                path.pop();
            }
        }
        Value::Array(list) => {
            let resolved = schema.matched(node_schema, node);
            if let Some(items) = resolved.get("items") {
                for (i, child) in list.iter().enumerate() {
                    path.push(i.to_string());
                    check_needed::<T>(schema, items, sample, child, path, errors);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

pub(super) fn value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| panic!("serialize: {e}"))
}

/// Something we send, checked against `def`.
pub(super) fn sent<T: Serialize>(schema: &Schema, def: &str, v: &T, errors: &mut Vec<String>) {
    let sample = value(v);
    errors.extend(schema.check(schema.def(def), &sample, def, true));
}

/// Something we read, checked against `def`.
pub(super) fn read<T: Serialize + DeserializeOwned>(
    schema: &Schema,
    def: &str,
    v: &T,
    errors: &mut Vec<String>,
) {
    let sample = value(v);
    errors.extend(schema.check(schema.def(def), &sample, def, false));
    let mut found = Vec::new();
    check_needed::<T>(
        schema,
        schema.def(def),
        &sample,
        &sample,
        &mut Vec::new(),
        &mut found,
    );
    errors.extend(found.into_iter().map(|e| format!("{def}.{e}")));
}
