//! Turns the JSON Schemas of `protocol/schemas/requests.json` into JSDoc typedefs
//! that TypeScript reads in `--checkJs` mode: one `@typedef` per `$defs` entry, a
//! `Requests` map from each request `type` to its params and result, a `Rest`
//! map from each REST path to its body, and `HistoryEvent`, a history event. Only the schema forms schemars emits for
//! our types are handled; anything else becomes `any`, never an error.

use serde_json::Value;

/// The whole of `http/web/wire.js`.
pub fn generate(schema: &Value) -> String {
    let mut out = String::from(
        "// Generated from protocol/schemas/requests.json by tests/web (`UPDATE_SNAPSHOTS=1\n\
         // cargo nextest run -p tandem-tests --test web`). Do not edit: change the Rust\n\
         // types in protocol/ and regenerate. JSDoc types only; the module exports nothing\n\
         // at run time.\n\n",
    );
    if let Some(defs) = schema["$defs"].as_object() {
        for (name, def) in defs {
            out.push_str(&typedef(name, def));
        }
    }
    out.push_str("/**\n * Every WebSocket request `type`: its fields and its reply's fields.\n * @typedef {{\n");
    if let Some(requests) = schema["requests"].as_object() {
        for (name, r) in requests {
            out.push_str(&format!(
                " *   {}: {{params: {}, result: {}}},\n",
                quote(name),
                ty(&r["params"]),
                ty(&r["result"])
            ));
        }
    }
    out.push_str(" * }} Requests\n */\n\n");
    out.push_str("/**\n * REST bodies the page reads, by method and path.\n * @typedef {{\n");
    if let Some(rest) = schema["rest"].as_object() {
        for (name, body) in rest {
            out.push_str(&format!(" *   {}: {},\n", quote(name), ty(body)));
        }
    }
    out.push_str(" * }} Rest\n */\n\n");
    out.push_str(&format!(
        "/**\n * A history event: the envelope (`sessionId`, `seq`, `ts`, `turnId?`) and one\n \
         * payload, told apart by `kind`.\n * @typedef {{{}}} HistoryEvent\n */\n\n",
        ty(&schema["event"])
    ));
    out.push_str(
        "/**\n * A client frame: a request's fields with its `type` and optional `requestId`.\n \
         * @typedef {{type: keyof Requests, requestId?: string} & Record<string, any>} ClientFrame\n \
         */\n\nexport {};\n",
    );
    out
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "\\'"))
}

/// One line of a description, safe inside a JSDoc comment.
fn doc(v: &Value) -> String {
    v["description"]
        .as_str()
        .unwrap_or_default()
        .replace("*/", "* /")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn typedef(name: &str, def: &Value) -> String {
    let mut out = String::from("/**\n");
    let d = doc(def);
    if !d.is_empty() {
        out.push_str(&format!(" * {d}\n"));
    }
    let is_plain_object =
        def["properties"].is_object() && def.get("anyOf").is_none() && def.get("oneOf").is_none();
    if is_plain_object {
        out.push_str(&format!(" * @typedef {{object}} {name}\n"));
        let required = required(def);
        if let Some(props) = def["properties"].as_object() {
            for (prop, schema) in props {
                let field = if required.contains(&prop.as_str()) {
                    prop.clone()
                } else {
                    format!("[{prop}]")
                };
                let d = doc(schema);
                out.push_str(&format!(" * @property {{{}}} {field}", ty(schema)));
                if !d.is_empty() {
                    out.push_str(&format!(" {d}"));
                }
                out.push('\n');
            }
        }
    } else {
        out.push_str(&format!(" * @typedef {{{}}} {name}\n", ty(def)));
    }
    out.push_str(" */\n\n");
    out
}

fn required(def: &Value) -> Vec<&str> {
    def["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The TypeScript type of a schema, inline.
fn ty(s: &Value) -> String {
    if let Some(r) = s["$ref"].as_str() {
        return r.rsplit('/').next().unwrap_or("any").to_string();
    }
    if let Some(c) = s.get("const") {
        return literal(c);
    }
    if let Some(values) = s["enum"].as_array() {
        return values.iter().map(literal).collect::<Vec<_>>().join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = s[key].as_array() {
            let all: Vec<String> = options.iter().map(ty).collect();
            // Fields beside the variants (a flattened tagged enum, like an event's
            // envelope around its body) hold in every variant.
            if s["properties"].is_object() {
                return format!("({} & ({}))", object(s), all.join(" | "));
            }
            return format!("({})", all.join(" | "));
        }
    }
    match &s["type"] {
        Value::Array(types) => types
            .iter()
            .map(|t| one_type(t.as_str().unwrap_or_default(), s))
            .collect::<Vec<_>>()
            .join(" | "),
        Value::String(t) => one_type(t, s),
        _ => "any".into(),
    }
}

fn one_type(t: &str, s: &Value) -> String {
    match t {
        "string" => "string".into(),
        "integer" | "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => format!("Array<{}>", ty(&s["items"])),
        "object" => object(s),
        _ => "any".into(),
    }
}

fn object(s: &Value) -> String {
    let Some(props) = s["properties"].as_object() else {
        return match &s["additionalProperties"] {
            Value::Object(_) => format!("Record<string, {}>", ty(&s["additionalProperties"])),
            _ => "Record<string, any>".into(),
        };
    };
    let required = required(s);
    let fields: Vec<String> = props
        .iter()
        .map(|(name, schema)| {
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{name}{opt}: {}", ty(schema))
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}
