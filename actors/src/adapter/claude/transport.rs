//! One `claude` process: its command line, and the shared supervisor
//! (`adapter/supervisor.rs`) with each stdout line handed to the adapter actor as it is.

use std::path::Path;

use actix::prelude::*;
use actix::WeakAddr;

use crate::adapter::fleet::Seat;
use crate::adapter::mcp_servers::McpServerSpec;
use crate::adapter::messages::TurnSettings;
use crate::adapter::supervisor::{self, Exited, LiveProcess, ProcessHub};
use crate::adapter::{McpAccess, VendorProcess};
use tandem_protocol::PermissionMode;

/// A stdout line from process generation `generation`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StdoutLine {
    /// Which process wrote it (lines of an older process are ignored).
    pub generation: u64,
    /// The line, without its newline.
    pub line: String,
}

/// The CLI's name for a permission mode. Bypass runs the CLI in `default` mode and the
/// adapter allows every tool use itself: the CLI refuses `bypassPermissions` when run
/// as root outside a sandbox.
pub fn cli_mode(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default | PermissionMode::BypassPermissions => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Plan => "plan",
    }
}

/// The `--mcp-config` value: our `/mcp` endpoint as server `tandem` (streamable HTTP
/// with the session's token), and the user's MCP servers beside it.
pub fn mcp_config(mcp: &McpAccess) -> String {
    let mut servers = serde_json::Map::new();
    servers.insert(
        "tandem".into(),
        serde_json::json!({"type": "http", "url": mcp.url,
            "headers": {"Authorization": format!("Bearer {}", mcp.token)}}),
    );
    for s in mcp.servers.iter() {
        let entry = match &s.spec {
            McpServerSpec::Stdio { command, args, env } => {
                serde_json::json!({"type": "stdio", "command": command, "args": args, "env": env})
            }
            McpServerSpec::Http { url, headers } => {
                serde_json::json!({"type": "http", "url": url, "headers": headers})
            }
        };
        servers.insert(s.name.clone(), entry);
    }
    serde_json::json!({ "mcpServers": servers }).to_string()
}

/// The adapter's own arguments (after the configured ones); `mcp_config` is the file
/// [`mcp_config`] was written to (`super::mcp_file`).
pub fn cli_args(
    settings: &TurnSettings,
    resume: Option<&str>,
    mcp_config: Option<&Path>,
) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "stdio",
        "--permission-mode",
        cli_mode(settings.permission_mode),
    ]
    .into_iter()
    .map(String::from)
    .collect();
    if !settings.model.is_empty() {
        args.extend(["--model".into(), settings.model.clone()]);
    }
    if !settings.effort.is_empty() {
        args.extend(["--effort".into(), settings.effort.clone()]);
    }
    if let Some(prompt) = settings.system_prompt.as_ref().filter(|p| !p.is_empty()) {
        args.extend(["--append-system-prompt".into(), prompt.clone()]);
    }
    // By default the CLI records the system prompt of a conversation's first request
    // and replays it on resume; ours changes when a session joins a pair.
    args.extend(["--system-prompt-snapshot".into(), "off".into()]);
    if let Some(id) = resume {
        args.extend(["--resume".into(), id.to_string()]);
    }
    if let Some(file) = mcp_config {
        // Our own tools never need a person's approval: the server checks every call.
        args.extend([
            "--mcp-config".into(),
            file.display().to_string(),
            "--allowedTools".into(),
            "mcp__tandem".into(),
        ]);
    }
    args
}

/// Starts `claude` for a session: configured args, our args, the inherited environment,
/// the session's working directory. Lines go to `to` tagged with `generation`.
pub fn spawn<A>(
    process: &VendorProcess,
    args: &[String],
    cwd: &Path,
    generation: u64,
    hub: &ProcessHub,
    seat: Seat,
    to: WeakAddr<A>,
) -> std::io::Result<LiveProcess>
where
    A: Actor<Context = Context<A>> + Handler<StdoutLine> + Handler<Exited>,
{
    let mut cmd = process.command_in(cwd);
    cmd.args(args);
    // MCP tools are otherwise deferred behind the CLI's ToolSearch tool.
    if !process.env.contains_key("ENABLE_TOOL_SEARCH") {
        cmd.env("ENABLE_TOOL_SEARCH", "false");
    }
    supervisor::spawn(cmd, generation, hub, seat, to, "claude", move |line| {
        Some(StdoutLine { generation, line })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_follow_the_settings() {
        let mut settings = TurnSettings::default();
        let plain = cli_args(&settings, None, None);
        assert!(plain.join(" ").contains("--permission-mode default"));
        assert!(
            !plain.contains(&"--model".to_string()),
            "no model: the default"
        );
        settings.model = "claude-sonnet-4-5".into();
        settings.effort = "high".into();
        settings.permission_mode = PermissionMode::BypassPermissions;
        settings.system_prompt = Some("be a Driver".into());
        let mcp = McpAccess {
            url: "http://127.0.0.1:1/mcp".into(),
            token: "T".into(),
            servers: Default::default(),
        };
        let args = cli_args(&settings, Some("sess-1"), Some(Path::new("/t/mcp.json"))).join(" ");
        for part in [
            "--permission-mode default",
            "--model claude-sonnet-4-5",
            "--effort high",
            "--append-system-prompt be a Driver",
            "--resume sess-1",
            "--system-prompt-snapshot off",
            "--allowedTools mcp__tandem",
            "--mcp-config /t/mcp.json",
        ] {
            assert!(args.contains(part), "{part} missing from {args}");
        }
        assert!(mcp_config(&mcp).contains("\"Authorization\":\"Bearer T\""));
        assert_eq!(cli_mode(PermissionMode::Plan), "plan");
    }
}
