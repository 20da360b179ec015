//! What an ACP agent says about itself: `initialize` alone in a short-lived process,
//! run once at start-up so `GET /vendors` can show the agent's name, version and
//! capabilities (and whether it can reach the agent tools) before any session runs.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::wire::{
    line, parse_frame, ClientCapabilities, Frame, Implementation, InitializeParams,
    InitializeResult, OutRequest, PROTOCOL_VERSION,
};
use super::AcpVendor;

/// What the catalog shows for an ACP agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentFacts {
    /// The agent's name and version, from `agentInfo` (absent in older agents).
    pub info: Option<Implementation>,
    /// Capability words for `/vendors`.
    pub capabilities: Vec<String>,
    /// Limits worth telling people (no HTTP MCP: it cannot call tandem's agent tools).
    pub notes: Vec<String>,
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

/// Runs `initialize` against a fresh process of `vendor` and turns the answer into
/// catalog facts. The process is killed afterwards in every case.
pub async fn probe(vendor: &AcpVendor) -> Result<AgentFacts, ProbeError> {
    let mut cmd = vendor.process.command();
    cmd.current_dir(std::env::temp_dir());
    let mut child = cmd.spawn()?;
    let result = tokio::time::timeout(vendor.startup_timeout, ask(&mut child)).await;
    let _ = child.start_kill();
    let _ = child.wait().await;
    let answer = result.map_err(|_| ProbeError::Timeout(vendor.startup_timeout))??;
    Ok(facts(&answer))
}

async fn ask(child: &mut tokio::process::Child) -> Result<InitializeResult, ProbeError> {
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(ProbeError::Exited);
    };
    let request = line(&OutRequest {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            client_capabilities: ClientCapabilities::default(),
            client_info: Implementation {
                name: "tandem".into(),
                title: Some("tandem".into()),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            },
        },
    });
    stdin
        .write_all(&request)
        .await
        .map_err(|_| ProbeError::Exited)?;
    let _ = stdin.flush().await;
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(text)) = lines.next_line().await {
        if let Ok(Frame::Response { id: 1, outcome }) = parse_frame(&text) {
            let value = outcome.map_err(|e| ProbeError::Refused(e.to_string()))?;
            return serde_json::from_value(value).map_err(|e| ProbeError::Refused(e.to_string()));
        }
    }
    Err(ProbeError::Exited)
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
    AgentFacts {
        info: answer.agent_info.clone(),
        capabilities,
        notes,
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
