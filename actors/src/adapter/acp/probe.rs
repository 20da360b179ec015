//! What an ACP agent says about itself, asked once at start-up in a short-lived
//! process so `GET /vendors` can show it before any session runs: `initialize` (the
//! agent's name, version and capabilities, and whether it can reach the agent tools),
//! then `session/new` in the temp directory with no MCP servers, whose answer lists
//! the models it offers. No prompt is sent, so no tokens are spent.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use super::models::{self, OfferedEfforts, OfferedModels};
use super::wire::{
    line, parse_frame, ClientCapabilities, Frame, Implementation, InitializeParams,
    InitializeResult, NewSessionParams, OutRequest, SessionOpened, PROTOCOL_VERSION,
};
use super::AcpVendor;

/// How long the probe's agent may take to exit once its stdin is closed before it is
/// killed (an agent with a CLI of its own, like claude-code-acp, stops that first).
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// What the catalog shows for an ACP agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFacts {
    /// The agent's name and version, from `agentInfo` (absent in older agents).
    pub info: Option<Implementation>,
    /// Capability words for `/vendors`.
    pub capabilities: Vec<String>,
    /// Limits worth telling people (no HTTP MCP: it cannot call tandem's agent tools).
    pub notes: Vec<String>,
    /// The models a new session is offered; `None` when the agent offers no choice or
    /// its `session/new` failed.
    pub models: Option<OfferedModels>,
    /// The effort levels a new session is offered (its `thought_level` option);
    /// `None` when it offers none or its `session/new` failed.
    pub efforts: Option<OfferedEfforts>,
}

/// Why the probe found nothing.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The binary could not be started.
    #[error("cannot start: {0}")]
    Spawn(#[from] std::io::Error),
    /// No answer to `initialize` in time.
    #[error("no answer to `initialize` within {0:?}")]
    Timeout(Duration),
    /// The process ended (or its output did) before answering.
    #[error("exited before answering `initialize`")]
    Exited,
    /// The agent refused or answered something tandem cannot read.
    #[error("`initialize` failed: {0}")]
    Refused(String),
}

/// Runs `initialize` and then `session/new` against a fresh process of `vendor` and
/// turns the answers into catalog facts; each step is bounded by the configured start
/// time. A failed `session/new` only leaves the models out. The process is stopped
/// afterwards in every case.
pub async fn probe(vendor: &AcpVendor) -> Result<AgentFacts, ProbeError> {
    let mut cmd = vendor.process.command();
    let cwd = std::env::temp_dir();
    cmd.current_dir(&cwd);
    let mut child = cmd.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Err(ProbeError::Exited);
    };
    let mut talk = Talk {
        stdin,
        lines: BufReader::new(stdout).lines(),
    };
    let limit = vendor.startup_timeout;
    let answer = match tokio::time::timeout(limit, initialize(&mut talk)).await {
        Ok(answer) => answer,
        Err(_) => Err(ProbeError::Timeout(limit)),
    };
    let opened = match &answer {
        Ok(_) => match tokio::time::timeout(limit, open_session(&mut talk, &cwd)).await {
            Ok(Ok(opened)) => Some(opened),
            Ok(Err(e)) => {
                tracing::debug!(vendor = %vendor.id, error = %e, "no models or modes: session/new failed");
                None
            }
            Err(_) => {
                tracing::debug!(vendor = %vendor.id, "no models or modes: session/new timed out");
                None
            }
        },
        Err(_) => None,
    };
    // Closing stdin asks the agent to exit (and stop what it started); kill it if it
    // does not.
    drop(talk);
    if tokio::time::timeout(EXIT_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    let mut facts = facts(&answer?);
    if let Some(opened) = opened {
        facts.models = models::offered(&opened);
        facts.efforts = models::offered_efforts(&opened.config_options);
        if opened.modes.is_none() {
            facts.notes.push(NO_MODES.into());
        }
    }
    Ok(facts)
}

/// Said of an agent whose new session offers no modes: tandem's permission modes
/// reach it through its modes only.
pub const NO_MODES: &str = "this agent offers no modes, so tandem's permission modes do not change what it asks before a write or a command: its own configuration decides (codex-acp: `approval_policy` in `args`)";

/// The probe's two pipes.
struct Talk {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Talk {
    /// Sends request `id` and returns its result.
    async fn ask<P: serde::Serialize>(
        &mut self,
        id: u64,
        method: &'static str,
        params: P,
    ) -> Result<serde_json::Value, ProbeError> {
        let request = line(&OutRequest {
            jsonrpc: "2.0",
            id,
            method,
            params,
        });
        self.stdin
            .write_all(&request)
            .await
            .map_err(|_| ProbeError::Exited)?;
        let _ = self.stdin.flush().await;
        while let Ok(Some(text)) = self.lines.next_line().await {
            if let Ok(Frame::Response { id: got, outcome }) = parse_frame(&text) {
                if got == id {
                    return outcome.map_err(|e| ProbeError::Refused(e.to_string()));
                }
            }
        }
        Err(ProbeError::Exited)
    }
}

async fn initialize(talk: &mut Talk) -> Result<InitializeResult, ProbeError> {
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION,
        client_capabilities: ClientCapabilities::default(),
        client_info: Implementation {
            name: "tandem".into(),
            title: Some("tandem".into()),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        },
    };
    let value = talk.ask(1, "initialize", params).await?;
    serde_json::from_value(value).map_err(|e| ProbeError::Refused(e.to_string()))
}

async fn open_session(talk: &mut Talk, cwd: &std::path::Path) -> Result<SessionOpened, ProbeError> {
    let cwd = cwd.display().to_string();
    let params = NewSessionParams {
        cwd: &cwd,
        mcp_servers: &[],
    };
    let value = talk.ask(2, "session/new", params).await?;
    serde_json::from_value(value).map_err(|e| ProbeError::Refused(e.to_string()))
}

/// Catalog facts from an `initialize` answer.
pub fn facts(answer: &InitializeResult) -> AgentFacts {
    let caps = &answer.agent_capabilities;
    let mut capabilities: Vec<String> = ["acp", "interrupt", "approvals"]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    let mut notes = Vec::new();
    if caps.mcp_capabilities.http {
        capabilities.push("tools".into());
    } else {
        notes.push(
            "this agent does not connect to MCP servers over HTTP, so it cannot call tandem's agent tools (send_to_partner, ...)".into(),
        );
    }
    if caps.session_capabilities.resume.is_some() || caps.load_session {
        capabilities.push("resume".into());
    } else {
        notes.push(
            "this agent cannot reopen a session: after a restart or an idle close the conversation starts over".into(),
        );
    }
    if caps.prompt_capabilities.image {
        capabilities.push("images".into());
    }
    if caps.session_capabilities.fork.is_some() {
        capabilities.push(crate::adapter::FORK_CAPABILITY.into());
    }
    AgentFacts {
        info: answer.agent_info.clone(),
        capabilities,
        notes,
        models: None,
        efforts: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn facts_say_what_the_agent_can_and_cannot_do() {
        let full: InitializeResult = serde_json::from_value(json!({
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "mcpCapabilities": {"http": true},
                                  "promptCapabilities": {"image": true}},
            "agentInfo": {"name": "codex-acp", "title": "Codex", "version": "0.16.0"}}))
        .unwrap_or_else(|e| panic!("{e}"));
        let f = facts(&full);
        assert!(f.capabilities.contains(&"tools".to_string()));
        assert!(f.capabilities.contains(&"resume".to_string()));
        assert!(f.notes.is_empty());
        assert_eq!(f.info.and_then(|i| i.version).as_deref(), Some("0.16.0"));
        let bare: InitializeResult =
            serde_json::from_value(json!({"protocolVersion": 1})).unwrap_or_else(|e| panic!("{e}"));
        let f = facts(&bare);
        assert!(!f.capabilities.contains(&"tools".to_string()));
        assert_eq!(f.notes.len(), 2, "{:?}", f.notes);
    }
}
