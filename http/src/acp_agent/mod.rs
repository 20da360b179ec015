//! `tandem acp`: an Agent Client Protocol agent (protocol version 1, JSON-RPC 2.0, one
//! message a line on stdin and stdout) that an editor (Zed, JetBrains, Neovim) starts,
//! and that drives the sessions of a running tandem server over its WebSocket, as the
//! terminal client does. Nothing but ACP is written to stdout; logs go to stderr.
//!
//! - [`rpc`]: the framing: the editor's lines classified, the stdout writer;
//! - [`mapping`]: tandem events → `session/update`s, turn status → stop reason,
//!   permission requests and answers, prompt blocks → message content (pure);
//! - [`session`]: one followed session: its subscription, the prompt or load
//!   waiting on it, and what its frames mean for the editor;
//! - [`link`]: the WebSocket to the server, shared by every request;
//! - [`agent`]: the methods (`initialize`, `session/new`, `session/load`,
//!   `session/prompt`, `session/cancel`, `session/list`) and permission answers.

pub mod agent;
pub mod link;
pub mod mapping;
pub mod rpc;
pub mod session;

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
    /// The data directory whose admin token to use (default: ~/.tandem).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Sessions asked of the server per `session/list` page (for tests).
    #[arg(long, default_value_t = LIST_PAGE, hide = true)]
    list_page: usize,
}

/// Serves ACP on stdin and stdout until the editor closes stdin.
pub fn run(args: AcpArgs) -> ExitCode {
    let mut target = Target::resolve(args.url, args.data_dir);
    if let Some(token) = args.token.filter(|t| !t.trim().is_empty()) {
        target.token = Some(token.trim().to_string());
    }
    tracing::info!("tandem acp: serving ACP on stdio for {}", target.base);
    let system = actix_rt::System::new();
    system.block_on(async move {
        let out = rpc::Output::start(std::io::stdout());
        let agent = agent::Agent::new(out, target, args.list_page);
        let mut lines = read_lines();
        while let Some(line) = lines.recv().await {
            if !line.trim().is_empty() {
                agent.on_line(&line);
            }
        }
        tracing::info!("tandem acp: the editor closed stdin");
    });
    ExitCode::SUCCESS
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
