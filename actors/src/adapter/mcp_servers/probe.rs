//! `mcp-servers.probe`: connects to one MCP server as a client (`initialize`, the
//! `initialized` notification, `tools/list`) and says what answered. A stdio server is
//! started for the probe and killed after. The config's runs as the config declares
//! it, not confined: it is the operator's own command (a caller only names it), and,
//! with no session's directory to allow, a confined one could not read a server's
//! files that lie outside the system's (an agent's CLI starts it confined, beside the
//! session). A user's own runs through the launcher their agents are confined by,
//! working in the user's first workspace root: the probe can do no more than an agent
//! of theirs working there.
//! An HTTP server gets the requests as streamable HTTP, with its headers, and may
//! answer each as JSON or as a server-sent event.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tandem_protocol::mcp_servers::McpServerProbeResult;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{McpServerSpec, NamedServer};
use crate::adapter::confine::Launcher;

/// How long a probe may take in all.
pub const PROBE_LIMIT: Duration = Duration::from_secs(20);
/// The MCP version the probe speaks.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// What a server said.
#[derive(Debug, Default)]
struct Found {
    server_name: Option<String>,
    server_version: Option<String>,
    tools: Vec<String>,
}

/// Why a probe found no working server; its `Display` is the probe result's `error`.
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    /// Nothing answered within [`PROBE_LIMIT`].
    #[error("no answer within {} s", PROBE_LIMIT.as_secs())]
    Timeout,
    /// The server answered a JSON-RPC error.
    #[error("the server answered an error: {0}")]
    Answered(
        /// The error's message (`(no message)` when it had none).
        String,
    ),
    /// The server's answer holds neither a result nor an error.
    #[error("the server's answer has no result")]
    NoResult,
    /// A stdio server's command could not be started.
    #[error("cannot start {command}: {source}")]
    Start {
        /// The command, named in the message.
        command: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The started server came without its pipes.
    #[error("no pipes to the server")]
    NoPipes,
    /// A stdio server stopped taking input: it exited.
    #[error("the server exited (its input closed: {source}){said}")]
    InputClosed {
        /// What writing to it said.
        source: std::io::Error,
        /// Its last words on stderr.
        said: LastWords,
    },
    /// A stdio server's output ended before it answered: it exited.
    #[error("the server exited{said}")]
    OutputEnded {
        /// Its last words on stderr.
        said: LastWords,
    },
    /// A stdio server's output could not be read.
    #[error("reading the server: {0}")]
    Read(#[source] std::io::Error),
    /// An HTTP server could not be reached.
    #[error("cannot reach {url}: {source}")]
    Unreachable {
        /// Its URL, named in the message.
        url: String,
        /// What the client said.
        source: awc::error::SendRequestError,
    },
    /// An HTTP server answered with a status other than success.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// Its URL, named in the message.
        url: String,
        /// The status code.
        status: u16,
    },
    /// An HTTP server's answer could not be read.
    #[error("reading {url}: {source}")]
    Body {
        /// Its URL, named in the message.
        url: String,
        /// What the client said.
        source: awc::error::PayloadError,
    },
    /// An HTTP server's answer holds no JSON-RPC answer.
    #[error("{url} did not answer with JSON-RPC")]
    NotJsonRpc {
        /// Its URL, named in the message.
        url: String,
    },
    /// An HTTP server answered a request with an empty body.
    #[error("no answer to {0}")]
    NoAnswer(
        /// The request's method.
        &'static str,
    ),
}

impl ProbeError {
    /// Whether the error says a stdio server exited (its last words then say why).
    fn exited(&self) -> bool {
        matches!(
            self,
            ProbeError::InputClosed { .. } | ProbeError::OutputEnded { .. }
        )
    }

    /// The error with `words` as the exited server's last words.
    fn with_last_words(self, words: LastWords) -> ProbeError {
        match self {
            ProbeError::InputClosed { source, .. } => ProbeError::InputClosed {
                source,
                said: words,
            },
            ProbeError::OutputEnded { .. } => ProbeError::OutputEnded { said: words },
            other => other,
        }
    }
}

/// What an exited stdio server last wrote to stderr, when it wrote anything: shown
/// after the error as `: …`.
#[derive(Debug, Default)]
struct LastWords(
    /// Its last lines, joined (none when it wrote nothing or could not be read).
    Option<String>,
);

impl std::fmt::Display for LastWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(said) => write!(f, ": {said}"),
            None => Ok(()),
        }
    }
}

/// Probes `server`, a stdio one started confined by a launcher in a directory when
/// given; a server that does not answer in [`PROBE_LIMIT`] is unreachable.
pub async fn probe(
    server: &NamedServer,
    confined: Option<(&Launcher, &std::path::Path)>,
) -> McpServerProbeResult {
    let outcome = tokio::time::timeout(PROBE_LIMIT, async {
        match &server.spec {
            McpServerSpec::Stdio { command, args, env } => {
                stdio(command, args, env, confined).await
            }
            McpServerSpec::Http { url, headers } => http(url, headers).await,
        }
    })
    .await
    .unwrap_or(Err(ProbeError::Timeout));
    match outcome {
        Ok(found) => McpServerProbeResult {
            name: server.name.clone(),
            reachable: true,
            server_name: found.server_name,
            server_version: found.server_version,
            tools: found.tools,
            error: None,
        },
        Err(error) => McpServerProbeResult {
            name: server.name.clone(),
            reachable: false,
            server_name: None,
            server_version: None,
            tools: Vec::new(),
            error: Some(error.to_string()),
        },
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "tandem", "version": env!("CARGO_PKG_VERSION")}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn tools_list() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
}

/// The result of a JSON-RPC answer, or its error.
fn result_of(answer: &Value) -> Result<&Value, ProbeError> {
    if let Some(e) = answer.get("error") {
        return Err(ProbeError::Answered(
            e["message"].as_str().unwrap_or("(no message)").to_string(),
        ));
    }
    answer.get("result").ok_or(ProbeError::NoResult)
}

/// Fills `found` from `initialize`'s result.
fn read_initialize(found: &mut Found, result: &Value) {
    found.server_name = result["serverInfo"]["name"].as_str().map(str::to_string);
    found.server_version = result["serverInfo"]["version"].as_str().map(str::to_string);
}

/// Fills `found` from `tools/list`'s result.
fn read_tools(found: &mut Found, result: &Value) {
    found.tools = result["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
}

async fn stdio(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    confined: Option<(&Launcher, &std::path::Path)>,
) -> Result<Found, ProbeError> {
    let mut vars = crate::adapter::process::inherited(std::env::vars_os());
    vars.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut cmd = match confined {
        Some((launcher, dir)) => {
            let mut cmd = launcher.command(std::path::Path::new(command), &vars, Some(dir));
            cmd.current_dir(dir);
            cmd
        }
        None => tokio::process::Command::new(command),
    };
    cmd.args(args)
        .env_clear()
        .envs(&vars)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| ProbeError::Start {
        command: command.to_string(),
        source,
    })?;
    let (Some(mut input), Some(output), Some(errors)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ProbeError::NoPipes);
    };
    // Its last words on stderr say why it exited: the last few lines that are not
    // stack frames (a runtime's error comes before its trace and version line), at
    // most 600 characters.
    let last_words = tokio::spawn(async move {
        let mut lines = BufReader::new(errors).lines();
        let mut last: std::collections::VecDeque<String> = std::collections::VecDeque::new();
        while let Ok(Some(line)) = lines.next_line().await {
            // Stack frames say where, not why.
            if !line.trim().is_empty() && !line.trim().starts_with("at ") {
                if last.len() == 4 {
                    last.pop_front();
                }
                last.push_back(line.trim().chars().take(300).collect());
            }
        }
        let said: Vec<String> = last.into();
        said.join(" | ").chars().take(600).collect::<String>()
    });
    let talked = talk(&mut input, output).await;
    let _ = child.start_kill();
    match talked {
        Err(e) if e.exited() => {
            let said = tokio::time::timeout(Duration::from_secs(1), last_words)
                .await
                .ok()
                .and_then(Result::ok)
                .filter(|s| !s.is_empty());
            Err(e.with_last_words(LastWords(said)))
        }
        other => other,
    }
}

/// `initialize`, `initialized` and `tools/list` over a stdio server's pipes.
async fn talk(
    input: &mut tokio::process::ChildStdin,
    output: tokio::process::ChildStdout,
) -> Result<Found, ProbeError> {
    let mut lines = BufReader::new(output).lines();
    let mut send = async |v: Value| {
        input
            .write_all(format!("{v}\n").as_bytes())
            .await
            .map_err(|source| ProbeError::InputClosed {
                source,
                said: LastWords::default(),
            })
    };
    let mut answer = async |id: u64| -> Result<Value, ProbeError> {
        loop {
            let line = lines.next_line().await.map_err(ProbeError::Read)?.ok_or(
                ProbeError::OutputEnded {
                    said: LastWords::default(),
                },
            )?;
            // Notifications and log lines before the answer are passed over.
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if v["id"] == id {
                    return Ok(v);
                }
            }
        }
    };
    let mut found = Found::default();
    send(initialize()).await?;
    read_initialize(&mut found, result_of(&answer(1).await?)?);
    send(initialized()).await?;
    send(tools_list()).await?;
    read_tools(&mut found, result_of(&answer(2).await?)?);
    Ok(found)
}

async fn http(url: &str, headers: &BTreeMap<String, String>) -> Result<Found, ProbeError> {
    let client = awc::Client::builder()
        .timeout(PROBE_LIMIT)
        .max_http_version(awc::http::Version::HTTP_11)
        .finish();
    let mut session: Option<String> = None;
    let mut post = async |body: Value| -> Result<Option<Value>, ProbeError> {
        let mut req = client
            .post(url)
            .insert_header(("Accept", "application/json, text/event-stream"))
            .insert_header(("MCP-Protocol-Version", PROTOCOL_VERSION));
        for (k, v) in headers {
            req = req.insert_header((k.as_str(), v.as_str()));
        }
        if let Some(s) = &session {
            req = req.insert_header(("Mcp-Session-Id", s.as_str()));
        }
        let mut resp = req
            .send_json(&body)
            .await
            .map_err(|source| ProbeError::Unreachable {
                url: url.to_string(),
                source,
            })?;
        if !resp.status().is_success() {
            return Err(ProbeError::Status {
                url: url.to_string(),
                status: resp.status().as_u16(),
            });
        }
        if let Some(s) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            session = Some(s.to_string());
        }
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let bytes = resp
            .body()
            .limit(4 << 20)
            .await
            .map_err(|source| ProbeError::Body {
                url: url.to_string(),
                source,
            })?;
        if bytes.is_empty() {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&bytes);
        let json = if sse {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|v| v.get("id").is_some())
        } else {
            serde_json::from_str::<Value>(&text).ok()
        };
        json.map(Some).ok_or_else(|| ProbeError::NotJsonRpc {
            url: url.to_string(),
        })
    };
    let mut found = Found::default();
    let init = post(initialize())
        .await?
        .ok_or(ProbeError::NoAnswer("initialize"))?;
    read_initialize(&mut found, result_of(&init)?);
    post(initialized()).await?;
    let tools = post(tools_list())
        .await?
        .ok_or(ProbeError::NoAnswer("tools/list"))?;
    read_tools(&mut found, result_of(&tools)?);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::{LastWords, ProbeError};

    /// An exited server's error ends with its last words, when it left any.
    #[test]
    fn an_exit_says_the_last_words() {
        let ended = ProbeError::OutputEnded {
            said: LastWords::default(),
        };
        assert!(ended.exited());
        assert_eq!(ended.to_string(), "the server exited");
        let said = ProbeError::OutputEnded {
            said: LastWords::default(),
        }
        .with_last_words(LastWords(Some("Error: no token".into())));
        assert_eq!(said.to_string(), "the server exited: Error: no token");
        let closed = ProbeError::InputClosed {
            source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
            said: LastWords::default(),
        }
        .with_last_words(LastWords(Some("bye".into())));
        assert_eq!(
            closed.to_string(),
            "the server exited (its input closed: broken pipe): bye"
        );
        assert!(!ProbeError::NoResult.exited());
    }
}
