//! `tandem acp`: an Agent Client Protocol agent (protocol version 1, JSON-RPC 2.0, one
//! message a line on stdin and stdout) that an editor (Zed, JetBrains, Neovim) starts,
//! and that drives the sessions of a running tandem server over its WebSocket, as the
//! terminal client does, or of a server it serves itself when none answers. Nothing
//! but ACP is written to stdout; logs (and the embedded server's output) go to
//! stderr.
//!
//! - [`rpc`]: the framing: the editor's lines classified, the stdout writer;
//! - [`mapping`]: tandem events → `session/update`s, turn status → stop reason,
//!   permission requests and answers, prompt blocks → message content (pure);
//! - [`usage`]: a turn's usage → the prompt's `usage` and `usage_update` (pure);
//! - [`config`]: a session's settings ↔ ACP modes and config options (pure);
//! - [`delegation`]: a Driver's delegation, its Worker's progress shown as a tool
//!   call of the Driver's session (pure);
//! - [`session`]: one followed session: its subscription, the prompt or load
//!   waiting on it, and what its frames mean for the editor;
//! - [`link`]: the WebSocket to the server, shared by every request;
//! - [`editor_mcp`]: the editor's MCP servers as `session.create` entries (pure);
//! - [`embedded`]: the server `tandem acp` serves itself when none answers;
//! - [`agent`]: the methods (`initialize`, `session/new`, `session/load`,
//!   `session/resume`, `session/close`, `session/prompt`, `session/cancel`,
//!   `session/list`) and permission answers;
//! - [`settings`]: `session/set_mode`, `session/set_config_option` and the
//!   settings in answers and updates.

pub mod agent;
pub mod config;
pub mod delegation;
pub mod diffs;
pub mod editor_mcp;
pub mod embedded;
pub mod link;
pub mod mapping;
pub mod rpc;
pub mod session;
pub mod settings;
pub mod usage;

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::client::conn::Target;

/// Sessions asked of the server per `session/list` page, unless `--list-page` says.
const LIST_PAGE: usize = 50;

/// Flags of `tandem acp`.
#[derive(Debug, Clone, clap::Args)]
pub struct AcpArgs {
    /// The server (default: TANDEM_URL, else http://127.0.0.1:7420).
    #[arg(long)]
    url: Option<String>,
    /// The token (default: TANDEM_TOKEN, else the admin token file of the data
    /// directory).
    #[arg(long)]
    token: Option<String>,
    /// The data directory whose admin token to use, and that an embedded server
    /// serves (default: ~/.tandem).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// When nothing listens at the URL (a loopback one), serve an embedded server
    /// there (`tandem serve`, a child process stopped when `tandem acp` ends, on the
    /// data directory). The default when neither --url nor TANDEM_URL names a
    /// server.
    #[arg(long)]
    embed: bool,
    /// Never serve an embedded server: say that none answers.
    #[arg(long, conflicts_with = "embed")]
    no_embed: bool,
    /// A workspace root of the embedded server (repeatable; default: the home
    /// directory).
    #[arg(long = "workspace-root")]
    workspace_roots: Vec<PathBuf>,
    /// Sessions asked of the server per `session/list` page (for tests).
    #[arg(long, default_value_t = LIST_PAGE, hide = true)]
    list_page: usize,
}

/// Serves ACP on stdin and stdout until the editor closes stdin.
pub fn run(args: AcpArgs) -> ExitCode {
    let env_url = std::env::var("TANDEM_URL").ok();
    let embeds = embeds(&args, env_url.as_deref());
    let mut target = Target::resolve(args.url, args.data_dir.clone());
    if let Some(token) = args.token.filter(|t| !t.trim().is_empty()) {
        target.token = Some(token.trim().to_string());
    }
    let embedding = embeds.then(|| embedded::Embedding::new(args.data_dir, args.workspace_roots));
    let stop_embedded = embedding.clone();
    tracing::info!("tandem acp: serving ACP on stdio for {}", target.base);
    let system = actix_rt::System::new();
    system.block_on(async move {
        let out = rpc::Output::start(std::io::stdout());
        let agent = agent::Agent::new(out, target, args.list_page, embedding);
        let mut lines = read_lines();
        while let Some(line) = lines.recv().await {
            if !line.trim().is_empty() {
                agent.on_line(&line);
            }
        }
        tracing::info!("tandem acp: the editor closed stdin");
    });
    if let Some(embedding) = stop_embedded {
        embedding.stop();
    }
    ExitCode::SUCCESS
}

/// Whether `tandem acp` may serve an embedded server when none answers: a server
/// the user named (`--url`, or `TANDEM_URL` as `env_url`) is theirs to start; the
/// default one it may serve, unless `--no-embed`; `--embed` always may.
fn embeds(args: &AcpArgs, env_url: Option<&str>) -> bool {
    let named = args.url.is_some() || env_url.is_some_and(|u| !u.trim().is_empty());
    args.embed || (!named && !args.no_embed)
}

/// stdin's lines, read by a thread of its own (a line that is not UTF-8 is passed on
/// with replacement characters, and so is refused as a parse error).
fn read_lines() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match stdin.read_until(b'\n', &mut buf) {
                Ok(0) => return,
                Ok(_) => {
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::error!("reading stdin: {e}");
                    return;
                }
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        acp: AcpArgs,
    }

    fn args(argv: &[&str]) -> AcpArgs {
        let argv = std::iter::once("acp").chain(argv.iter().copied());
        Cli::try_parse_from(argv).unwrap().acp
    }

    #[test]
    fn only_the_default_server_is_served_embedded_unless_asked() {
        // An editor's `args: ["acp"]`: the default address, served if none answers.
        assert!(embeds(&args(&[]), None));
        assert!(embeds(&args(&[]), Some("  ")));
        // A server the user named is theirs to start.
        assert!(!embeds(&args(&["--url", "http://127.0.0.1:9"]), None));
        assert!(!embeds(&args(&[]), Some("http://127.0.0.1:9")));
        assert!(embeds(
            &args(&["--url", "http://127.0.0.1:9", "--embed"]),
            None
        ));
        assert!(!embeds(&args(&["--no-embed"]), None));
    }
}
