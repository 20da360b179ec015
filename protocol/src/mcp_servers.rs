//! The MCP servers agents get beside tandem's own tools: declared in the config
//! (`[mcp_servers.NAME]`) or added by a user (`mcp-servers.add`, theirs alone), listed,
//! probed and removed; and the ones a session chooses (`session.create`'s
//! `mcpServers`).

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize};

/// A variable or header whose value may be a secret: only whether it is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    /// Its name.
    pub name: String,
    /// Whether it has a value (never shown).
    pub set: bool,
}

/// Where a server comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpServerScope {
    /// The config declares it (`[mcp_servers.NAME]`): every user's, changed only there.
    Config,
    /// The caller added it (`mcp-servers.add`): the caller's alone.
    User,
}

/// One MCP server, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// Its name.
    pub name: String,
    /// Declared in the config or added by the caller.
    pub scope: McpServerScope,
    /// `stdio` or `http`.
    pub transport: String,
    /// The program (stdio).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Its endpoint (http).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its environment's variables (stdio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<Secret>,
    /// Its headers (http).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Secret>,
}

/// Fields of `mcp-servers.list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServersListParams {}

/// `mcp-servers.list` reply, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServersListResult {
    /// The servers.
    pub servers: Vec<McpServerInfo>,
}

/// Fields of `mcp-servers.probe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerProbeParams {
    /// The server.
    pub name: String,
}

/// `mcp-servers.probe` reply: whether an MCP client got through, and what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerProbeResult {
    /// The server.
    pub name: String,
    /// It answered `initialize` and `tools/list`.
    pub reachable: bool,
    /// Its own name (`serverInfo.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Its version (`serverInfo.version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Its tools' names.
    pub tools: Vec<String>,
    /// Why it is not reachable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `mcp-servers.remove` fields: a server the caller added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerRemoveParams {
    /// The server.
    pub name: String,
}

/// `mcp-servers.remove` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerRemoveResult {
    /// The server removed.
    pub name: String,
}

/// Most variables (stdio) or headers (http) one entry has.
pub const MAX_SECRETS: usize = 64;
/// Most arguments of a stdio server.
pub const MAX_ARGS: usize = 64;
/// Longest command, argument or value.
pub const MAX_VALUE: usize = 8192;
/// Longest URL.
pub const MAX_URL: usize = 2048;

/// A server's name: letters, digits, `-` and `_`, 1 to 40 of them.
const NAME: &str = "^[A-Za-z0-9_-]{1,40}$";
/// A variable's name.
const VAR_NAME: &str = "^[A-Za-z_][A-Za-z0-9_]{0,127}$";
/// A header's name (an HTTP token).
const HEADER_NAME: &str = "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$";
/// A header's value: printable ASCII, spaces and tabs.
const HEADER_VALUE: &str = "^[\\u0020-\\u007e\\t]*$";
/// A URL: `http://` or `https://` and no space or control character.
const URL: &str = "^https?://[^\\u0000-\\u0020\\u007f]+$";

/// How to reach one server the request names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum McpServerTransport {
    /// A program speaking MCP on its standard input and output.
    Stdio {
        /// The program: a path, or a name looked up on `PATH`.
        command: String,
        /// Its arguments.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Its environment, on top of the server's (minus `TANDEM_*`).
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    /// A server speaking MCP's streamable HTTP.
    Http {
        /// Its endpoint.
        url: String,
        /// Headers sent with every request (a token, say).
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

/// One server as a request gives it: `mcp-servers.add`'s fields, and an inline entry
/// of `session.create`'s `mcpServers`. Exactly one of `command` (stdio, with `args`
/// and `env`) and `url` (streamable HTTP, with `headers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerEntry {
    /// Its name: agents see its tools under it.
    pub name: String,
    /// How to reach it.
    #[serde(flatten)]
    pub transport: McpServerTransport,
}

/// Every field an entry may have, before the rules are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    #[serde(default, deserialize_with = "crate::strict::present")]
    command: Option<String>,
    #[serde(default, deserialize_with = "crate::strict::present")]
    args: Option<Vec<String>>,
    #[serde(default, deserialize_with = "crate::strict::present")]
    env: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "crate::strict::present")]
    url: Option<String>,
    #[serde(default, deserialize_with = "crate::strict::present")]
    headers: Option<BTreeMap<String, String>>,
}

/// Whether `s` matches `^[...]{min,max}$` for characters `ok`.
fn chars_ok(s: &str, min: usize, max: usize, ok: impl Fn(char) -> bool) -> bool {
    let n = s.chars().count();
    n >= min && n <= max && s.chars().all(ok)
}

fn name_ok(s: &str) -> bool {
    chars_ok(s, 1, 40, |c| {
        c.is_ascii_alphanumeric() || c == '-' || c == '_'
    })
}

fn var_ok(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars_ok(s, 1, 128, |c| c.is_ascii_alphanumeric() || c == '_')
}

fn header_name_ok(s: &str) -> bool {
    chars_ok(s, 1, 128, |c| {
        c.is_ascii_alphanumeric() || "!#$%&'*+.^_`|~-".contains(c)
    })
}

fn header_value_ok(s: &str) -> bool {
    chars_ok(s, 0, MAX_VALUE, |c| c == '\t' || (' '..='~').contains(&c))
}

fn text_ok(s: &str, min: usize) -> bool {
    chars_ok(s, min, MAX_VALUE, |c| c != '\0')
}

fn url_ok(s: &str) -> bool {
    let rest = s
        .strip_prefix("http://")
        .or_else(|| s.strip_prefix("https://"));
    rest.is_some_and(|r| {
        !r.is_empty() && s.chars().count() <= MAX_URL && r.chars().all(|c| c > ' ' && c != '\u{7f}')
    })
}

/// Why an MCP server entry breaks a rule its fields' types do not state; its
/// `Display` is the message the request's sender reads (written out by hand: this
/// crate does without `thiserror`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidMcpServer(
    /// What is wrong, naming the server and the field.
    pub String,
);

impl std::fmt::Display for InvalidMcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidMcpServer {}

impl TryFrom<RawEntry> for McpServerEntry {
    type Error = InvalidMcpServer;

    fn try_from(raw: RawEntry) -> Result<McpServerEntry, InvalidMcpServer> {
        let name = raw.name;
        if !name_ok(&name) {
            return Err(InvalidMcpServer(format!(
                "MCP server name `{name:.64}`: use 1 to 40 letters, digits, `-` or `_`"
            )));
        }
        let transport = match (raw.command, raw.url) {
            (Some(command), None) if raw.headers.is_none() => {
                let args = raw.args.unwrap_or_default();
                let env = raw.env.unwrap_or_default();
                if !text_ok(&command, 1) {
                    return Err(InvalidMcpServer(format!(
                        "MCP server `{name}`: `command` must be 1 to {MAX_VALUE} characters, no NUL"
                    )));
                }
                if args.len() > MAX_ARGS || !args.iter().all(|a| text_ok(a, 0)) {
                    return Err(InvalidMcpServer(format!(
                        "MCP server `{name}`: `args` holds at most {MAX_ARGS} arguments of at most {MAX_VALUE} characters, no NUL"
                    )));
                }
                if env.len() > MAX_SECRETS
                    || !env.iter().all(|(k, v)| var_ok(k) && text_ok(v, 0))
                {
                    return Err(InvalidMcpServer(format!(
                        "MCP server `{name}`: `env` holds at most {MAX_SECRETS} variables named with letters, digits and `_` (not a digit first), values without NUL"
                    )));
                }
                McpServerTransport::Stdio { command, args, env }
            }
            (None, Some(url)) if raw.args.is_none() && raw.env.is_none() => {
                let headers = raw.headers.unwrap_or_default();
                if !url_ok(&url) {
                    return Err(InvalidMcpServer(format!(
                        "MCP server `{name}`: `url` must be http:// or https://, at most {MAX_URL} characters, no space"
                    )));
                }
                if headers.len() > MAX_SECRETS
                    || !headers
                        .iter()
                        .all(|(k, v)| header_name_ok(k) && header_value_ok(v))
                {
                    return Err(InvalidMcpServer(format!(
                        "MCP server `{name}`: `headers` holds at most {MAX_SECRETS} headers with token names and printable ASCII values"
                    )));
                }
                McpServerTransport::Http { url, headers }
            }
            (None, None) => {
                return Err(InvalidMcpServer(format!(
                    "MCP server `{name}`: give `command` (a stdio server) or `url` (an HTTP one)"
                )))
            }
            _ => {
                return Err(InvalidMcpServer(format!(
                    "MCP server `{name}`: `command` (with `args`, `env`) and `url` (with `headers`) do not mix"
                )))
            }
        };
        Ok(McpServerEntry { name, transport })
    }
}

impl<'de> Deserialize<'de> for McpServerEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<McpServerEntry, D::Error> {
        let raw: RawEntry = crate::strict::object(d)?;
        McpServerEntry::try_from(raw).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for McpServerEntry {
    fn schema_name() -> Cow<'static, str> {
        "McpServerEntry".into()
    }

    /// The rules [`McpServerEntry`]'s deserializer checks, one for one.
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let name = serde_json::json!({"type": "string", "pattern": NAME,
            "description": "Its name: agents see its tools under it."});
        let text = |min: usize| serde_json::json!({"type": "string", "minLength": min, "maxLength": MAX_VALUE, "pattern": crate::content::NO_NUL});
        schemars::json_schema!({
            "description": "One MCP server: `command` (stdio, with `args` and `env`) or `url` (streamable HTTP, with `headers`).",
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name", "command"],
                    "properties": {
                        "name": name,
                        "command": text(1),
                        "args": {"type": "array", "maxItems": MAX_ARGS, "items": text(0)},
                        "env": {"type": "object", "maxProperties": MAX_SECRETS,
                                "propertyNames": {"pattern": VAR_NAME},
                                "additionalProperties": text(0)}
                    }
                },
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name", "url"],
                    "properties": {
                        "name": name,
                        "url": {"type": "string", "maxLength": MAX_URL, "pattern": URL},
                        "headers": {"type": "object", "maxProperties": MAX_SECRETS,
                                    "propertyNames": {"pattern": HEADER_NAME},
                                    "additionalProperties": {"type": "string", "maxLength": MAX_VALUE, "pattern": HEADER_VALUE}}
                    }
                }
            ]
        })
    }
}

/// One of `session.create`'s `mcpServers`: a listed server's name, or an entry of the
/// session's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum McpServerChoice {
    /// A server `mcp-servers.list` shows the caller.
    Name(String),
    /// A server for this session alone.
    Entry(McpServerEntry),
}

impl McpServerChoice {
    /// The server's name.
    pub fn name(&self) -> &str {
        match self {
            McpServerChoice::Name(n) => n,
            McpServerChoice::Entry(e) => &e.name,
        }
    }
}

impl<'de> Deserialize<'de> for McpServerChoice {
    /// A string is a name (its rules checked), an object an entry; the entry's own
    /// error is kept, not serde's "no variant matched".
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<McpServerChoice, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = McpServerChoice;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an MCP server's name or an entry {name, command | url, ...}")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<McpServerChoice, E> {
                if name_ok(v) {
                    Ok(McpServerChoice::Name(v.to_string()))
                } else {
                    Err(E::custom(format!(
                        "MCP server name `{v:.64}`: use 1 to 40 letters, digits, `-` or `_`"
                    )))
                }
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<McpServerChoice, A::Error> {
                McpServerEntry::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(McpServerChoice::Entry)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl JsonSchema for McpServerChoice {
    fn schema_name() -> Cow<'static, str> {
        "McpServerChoice".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let entry = generator.subschema_for::<McpServerEntry>();
        schemars::json_schema!({
            "description": "A listed server's name, or an entry for this session alone.",
            "oneOf": [{"type": "string", "pattern": NAME}, entry]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(v: serde_json::Value) -> Result<McpServerEntry, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn an_entry_is_stdio_or_http_and_says_what_is_wrong() {
        let stdio = entry(
            serde_json::json!({"name": "files", "command": "npx", "args": ["-y", "x"], "env": {"TOKEN": "s"}}),
        );
        assert!(matches!(
            stdio,
            Ok(McpServerEntry {
                transport: McpServerTransport::Stdio { .. },
                ..
            })
        ));
        let http = entry(
            serde_json::json!({"name": "t", "url": "https://t.example/mcp", "headers": {"Authorization": "Bearer x"}}),
        );
        assert!(matches!(
            http,
            Ok(McpServerEntry {
                transport: McpServerTransport::Http { .. },
                ..
            })
        ));
        for (bad, says) in [
            (serde_json::json!({"name": "x"}), "give `command`"),
            (
                serde_json::json!({"name": "x", "command": "a", "url": "http://h"}),
                "do not mix",
            ),
            (
                serde_json::json!({"name": "x", "url": "http://h", "env": {}}),
                "do not mix",
            ),
            (
                serde_json::json!({"name": "a b", "command": "a"}),
                "1 to 40",
            ),
            (serde_json::json!({"name": "x", "command": ""}), "`command`"),
            (serde_json::json!({"name": "x", "url": "ftp://h"}), "`url`"),
            (
                serde_json::json!({"name": "x", "command": "a", "env": {"A=B": "1"}}),
                "`env`",
            ),
            (
                serde_json::json!({"name": "x", "url": "http://h", "headers": {"A": "1\n"}}),
                "`headers`",
            ),
            (
                serde_json::json!({"name": "x", "command": "a", "cwd": "/"}),
                "unknown field",
            ),
        ] {
            let e = entry(bad.clone())
                .err()
                .unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_choice_is_a_name_or_an_entry() {
        let list: Vec<McpServerChoice> = serde_json::from_value(serde_json::json!(
            ["files", {"name": "mine", "command": "srv"}]
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list[0], McpServerChoice::Name("files".into()));
        assert_eq!(list[1].name(), "mine");
        let bad =
            serde_json::from_value::<Vec<McpServerChoice>>(serde_json::json!([{"name": "x"}]))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
        assert!(bad.contains("give `command`"), "{bad}");
        assert!(serde_json::from_value::<McpServerChoice>(serde_json::json!(3)).is_err());
    }
}
