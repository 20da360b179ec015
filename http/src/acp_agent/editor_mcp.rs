//! The editor's MCP servers (`session/new`'s `mcpServers`, ACP's `McpServer`) as
//! entries of `session.create`'s `mcpServers`, so the session's agent gets them beside
//! the servers the user has here. ACP's stdio servers (`{name, command, args, env:
//! [{name, value}]}`) and HTTP ones (`{type: "http", name, url, headers: [{name,
//! value}]}`) map one for one; SSE is not offered (`mcpCapabilities.sse` is false).
//! Names are free text in ACP and 1 to 40 of `[A-Za-z0-9_-]` here: other characters
//! become `-`, and a name taken twice gets a number. The server still checks every
//! other rule and says which one an entry breaks.

use serde_json::{json, Map, Value};

/// The editor's servers as entries, or why one cannot be passed on.
pub fn entries(servers: &Value) -> Result<Vec<Value>, String> {
    let Some(list) = servers.as_array() else {
        return if servers.is_null() {
            Ok(Vec::new())
        } else {
            Err("`mcpServers` must be a list".into())
        };
    };
    let mut taken: Vec<String> = Vec::new();
    list.iter()
        .map(|server| {
            let name = unique(
                &tandem_name(server["name"].as_str().unwrap_or_default()),
                &taken,
            );
            taken.push(name.clone());
            let pairs = |key: &str| -> Result<Map<String, Value>, String> {
                let mut out = Map::new();
                for pair in server[key].as_array().into_iter().flatten() {
                    let (Some(k), Some(v)) = (pair["name"].as_str(), pair["value"].as_str()) else {
                        return Err(format!(
                            "MCP server `{name}`: each of `{key}` needs a `name` and a `value`"
                        ));
                    };
                    out.insert(k.to_string(), json!(v));
                }
                Ok(out)
            };
            match server["type"].as_str() {
                None | Some("stdio") => {
                    let command = server["command"].as_str().ok_or_else(|| {
                        format!("MCP server `{name}`: a stdio server needs a `command`")
                    })?;
                    let mut entry = json!({"name": name, "command": command});
                    if let Some(args) = server["args"].as_array().filter(|a| !a.is_empty()) {
                        entry["args"] = json!(args);
                    }
                    let env = pairs("env")?;
                    if !env.is_empty() {
                        entry["env"] = Value::Object(env);
                    }
                    Ok(entry)
                }
                Some("http") => {
                    let url = server["url"].as_str().ok_or_else(|| {
                        format!("MCP server `{name}`: an HTTP server needs a `url`")
                    })?;
                    let mut entry = json!({"name": name, "url": url});
                    let headers = pairs("headers")?;
                    if !headers.is_empty() {
                        entry["headers"] = Value::Object(headers);
                    }
                    Ok(entry)
                }
                Some(other) => Err(format!(
                    "MCP server `{name}`: transport `{other}` is not taken (stdio and http are)"
                )),
            }
        })
        .collect()
}

/// `name` with every character outside `[A-Za-z0-9_-]` as `-`, at most 40 of them;
/// `editor` when nothing is left, and never `tandem` (tandem's own tools).
fn tandem_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    match cleaned.as_str() {
        "" => "editor".into(),
        "tandem" => "tandem-editor".into(),
        _ => cleaned,
    }
}

/// `name`, or `name-2`, `name-3` … when taken (shortened to stay within 40).
fn unique(name: &str, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == name) {
        return name.to_string();
    }
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            let keep: String = name.chars().take(40 - suffix.len()).collect();
            keep + &suffix
        })
        .find(|candidate| !taken.iter().any(|t| t == candidate))
        .unwrap_or_else(|| name.to_string())
}

/// `session.create`'s `mcpServers`: the editor's `entries` and, by name, every server
/// the user has here (`listed`, `mcp-servers.list`'s answer) whose name no entry took.
pub fn choice(entries: Vec<Value>, listed: &Value) -> Value {
    let own: Vec<Value> = listed["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str())
        .filter(|n| !entries.iter().any(|e| e["name"] == *n))
        .map(|n| json!(n))
        .collect();
    Value::Array(own.into_iter().chain(entries).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acp_servers_become_entries_with_names_tandem_takes() {
        let got = entries(&json!([
            {"name": "My Files", "command": "npx", "args": ["-y", "srv"], "env": [{"name": "TOKEN", "value": "s"}]},
            {"type": "http", "name": "My Files", "url": "https://h/mcp", "headers": [{"name": "Authorization", "value": "Bearer x"}]},
            {"name": "tandem", "command": "x", "args": [], "env": []},
            {"name": "", "command": "y"}
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            got,
            [
                json!({"name": "My-Files", "command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": "s"}}),
                json!({"name": "My-Files-2", "url": "https://h/mcp", "headers": {"Authorization": "Bearer x"}}),
                json!({"name": "tandem-editor", "command": "x"}),
                json!({"name": "editor", "command": "y"}),
            ]
        );
        assert_eq!(entries(&Value::Null), Ok(Vec::new()));
        let long = "x".repeat(50);
        let two = entries(&json!([{"name": long, "command": "a"}, {"name": long, "command": "b"}]))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(two[1]["name"].as_str().map(str::len), Some(40));
        assert_ne!(two[0]["name"], two[1]["name"]);
    }

    #[test]
    fn what_cannot_be_passed_on_says_why() {
        for (bad, says) in [
            (
                json!([{"type": "sse", "name": "s", "url": "http://h", "headers": []}]),
                "transport `sse`",
            ),
            (json!([{"name": "s"}]), "needs a `command`"),
            (json!([{"type": "http", "name": "s"}]), "needs a `url`"),
            (
                json!([{"name": "s", "command": "c", "env": [{"name": "A"}]}]),
                "`env` needs",
            ),
            (json!({"name": "s"}), "must be a list"),
        ] {
            let e = entries(&bad).err().unwrap_or_default();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_users_own_are_kept_beside_the_editors() {
        let listed = json!({"servers": [{"name": "shared"}, {"name": "files"}]});
        let entries = vec![json!({"name": "files", "command": "editor-files"})];
        assert_eq!(
            choice(entries, &listed),
            json!(["shared", {"name": "files", "command": "editor-files"}])
        );
    }
}
