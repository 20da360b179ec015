//! The terminal client: `tandem ls`, `new`, `send`, `tail`, `stop`, `pair`, `approve`, `deny`,
//! speaking REST and WebSocket to a running server like any other client.
//!
//! - [`conn`]: where the server is, the token, REST calls and a WebSocket.
//! - [`follow`]: one session's events across disconnects and restarts.
//! - [`format`]: events as readable lines.

pub mod conn;
pub mod follow;
pub mod format;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use tandem_protocol::client::{ChatPermissionResponseParams, ChatSendParams, SessionCreateParams};
use tandem_protocol::rest::SessionsListResult;
use tandem_protocol::SessionInfo;

use conn::{ClientError, Target};
use follow::Follower;

/// Exit code of `send --wait` when the turn was interrupted, and of any command
/// stopped with Ctrl-C (as shells report SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

/// Sessions `ls` asks for per page.
const LS_PAGE: usize = 200;

/// Events `tail` shows from before now when no `--from` is given.
const TAIL_BACKLOG: u64 = 20;

/// Where the server is and who calls it; shared by every client command.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnArgs {
    /// The server (default: TANDEM_URL, else http://127.0.0.1:7420). The token comes
    /// from TANDEM_TOKEN, else the admin token file of the data directory.
    #[arg(long)]
    url: Option<String>,
    /// The data directory whose admin token to use (default: ~/.tandem).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

/// The client commands, flattened into `tandem`'s own.
#[derive(Debug, clap::Subcommand)]
pub enum ClientCommand {
    /// List sessions: id, status, vendor, pair role, last activity, title.
    Ls {
        #[command(flatten)]
        conn: ConnArgs,
    },
    /// Create a session and print its id.
    New {
        /// Vendor id (`codex`, `claude`, `scripted`; default: the server's).
        #[arg(long)]
        vendor: Option<String>,
        /// Working directory (under a workspace root of the server).
        #[arg(long)]
        cwd: Option<String>,
        /// Title.
        #[arg(long)]
        title: Option<String>,
        #[command(flatten)]
        conn: ConnArgs,
    },
    /// Send a message; with --wait, stream the answer and exit with the turn's status
    /// (0 completed, 1 failed, 130 interrupted).
    Send {
        /// The session id.
        session: String,
        /// The message.
        text: String,
        /// Stream the answer and wait for the turn to end.
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        conn: ConnArgs,
    },
    /// Follow a session's events as readable lines; resumes after a disconnect or a
    /// server restart without repeating or losing a line. Ctrl-C stops.
    Tail {
        /// The session id.
        session: String,
        /// Start with the event of this seq (default: the last 20 events).
        #[arg(long)]
        from: Option<u64>,
        #[command(flatten)]
        conn: ConnArgs,
    },
    /// Interrupt the session's turn.
    Stop {
        /// The session id.
        session: String,
        #[command(flatten)]
        conn: ConnArgs,
    },
    /// Pair a phone: print a QR code of a one-time link (valid 5 minutes) that signs
    /// the phone's page in as you with a token of its own (`GET /api/v1/devices`
    /// lists such devices, `DELETE` revokes one).
    Pair {
        #[command(flatten)]
        conn: ConnArgs,
    },
    /// Allow a pending tool request (the only one, or REQUEST_ID).
    Approve {
        /// The session id.
        session: String,
        /// The permission request's id (needed when several are pending).
        request_id: Option<String>,
        #[command(flatten)]
        conn: ConnArgs,
    },
    /// Deny a pending tool request (the only one, or REQUEST_ID).
    Deny {
        /// The session id.
        session: String,
        /// The permission request's id (needed when several are pending).
        request_id: Option<String>,
        /// Why, for the agent.
        #[arg(long)]
        message: Option<String>,
        #[command(flatten)]
        conn: ConnArgs,
    },
}

/// Runs a client command to its exit code; errors are printed as `tandem: …`.
pub fn run(command: ClientCommand) -> ExitCode {
    let system = actix_rt::System::new();
    let outcome = system.block_on(async move {
        tokio::select! {
            outcome = dispatch(command) => outcome,
            _ = tokio::signal::ctrl_c() => Ok(EXIT_INTERRUPTED),
        }
    });
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("tandem: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: ClientCommand) -> Result<u8, ClientError> {
    let target = |c: ConnArgs| Target::resolve(c.url, c.data_dir);
    match command {
        ClientCommand::Ls { conn } => ls(&target(conn)).await,
        ClientCommand::New {
            vendor,
            cwd,
            title,
            conn,
        } => {
            let params = SessionCreateParams {
                vendor,
                cwd,
                title,
                ..SessionCreateParams::default()
            };
            let info: SessionInfo = target(conn).post("/sessions", &params).await?;
            println!("{}", info.id);
            Ok(0)
        }
        ClientCommand::Send {
            session,
            text,
            wait,
            conn,
        } => send(target(conn), session, text, wait).await,
        ClientCommand::Tail {
            session,
            from,
            conn,
        } => tail(target(conn), session, from).await,
        ClientCommand::Stop { session, conn } => {
            let _: Value = target(conn)
                .post(
                    &format!("/sessions/{session}/interrupt"),
                    &tandem_protocol::rest::EmptyBody {},
                )
                .await?;
            println!("stopping {session}");
            Ok(0)
        }
        ClientCommand::Pair { conn } => pair(&target(conn)).await,
        ClientCommand::Approve {
            session,
            request_id,
            conn,
        } => answer(target(conn), session, request_id, true, None).await,
        ClientCommand::Deny {
            session,
            request_id,
            message,
            conn,
        } => answer(target(conn), session, request_id, false, message).await,
    }
}

/// `tandem pair`: a pairing code's link as a QR code for the terminal, the link
/// itself, and when it expires.
async fn pair(target: &Target) -> Result<u8, ClientError> {
    let code: tandem_protocol::devices::DevicePairCodeResult = target
        .post("/devices/pair-code", &tandem_protocol::rest::EmptyBody {})
        .await?;
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", crate::pairing::terminal(&code.qr));
    let _ = writeln!(out, "Scan with the phone's camera, or open: {}", code.url);
    let minutes = code
        .expires_at
        .saturating_sub(tandem_actors::clock::now_ms())
        .div_ceil(60_000);
    let _ = writeln!(out, "The link works once, for {minutes} minutes.");
    if !code.reachable {
        let _ = writeln!(
            out,
            "The server listens on loopback only: a phone cannot reach it. Start it with \
             --bind 0.0.0.0 --tls self-signed (or --tls-cert/--tls-key)."
        );
    }
    Ok(0)
}

/// `tandem ls`: every page, one line per session.
async fn ls(target: &Target) -> Result<u8, ClientError> {
    let mut cursor: Option<String> = None;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ID\tSTATUS\tVENDOR\tROLE\tLAST ACTIVITY\tTITLE");
    loop {
        let path = match &cursor {
            Some(c) => format!("/sessions?limit={LS_PAGE}&cursor={c}"),
            None => format!("/sessions?limit={LS_PAGE}"),
        };
        let page: SessionsListResult = target.get(&path).await?;
        for s in &page.sessions {
            let role = match s.role {
                Some(tandem_protocol::Role::Driver) => "driver",
                Some(tandem_protocol::Role::Worker) => "worker",
                None => "-",
            };
            let _ = writeln!(
                out,
                "{}\t{}\t{}\t{role}\t{}\t{}",
                s.id,
                // A session whose node is away shows that, not its last status.
                if s.node_unavailable {
                    "unavailable"
                } else {
                    s.status.as_str()
                },
                s.vendor,
                ago(s.last_activity),
                s.title
            );
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(0),
        }
    }
}

/// `12s ago`, `5m ago`, `3h ago`, `2d ago` from a millisecond timestamp.
fn ago(ms: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let secs = now.saturating_sub(ms) / 1000;
    match secs {
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}

/// `tandem send`: without `--wait` the message is posted and the turn id printed; with
/// it the answer streams to stdout (tool work and approvals to stderr) until the turn
/// ends, and its status is the exit code.
async fn send(
    target: Target,
    session: String,
    text: String,
    wait: bool,
) -> Result<u8, ClientError> {
    let params = ChatSendParams {
        session_id: session.clone().into(),
        content: text.into(),
        options: None,
        queue: false,
    };
    if !wait {
        let accepted: Value = target
            .post(&format!("/sessions/{session}/messages"), &params)
            .await?;
        println!("{}", accepted["turnId"].as_str().unwrap_or_default());
        return Ok(0);
    }
    let info: SessionInfo = target.get(&format!("/sessions/{session}")).await?;
    let mut follower = Follower::new(target, session.into(), info.last_seq);
    let reply = follower.call("chat.send", &params).await?;
    let turn = reply["turnId"].as_str().unwrap_or_default().to_string();
    let mut streamed = false;
    let mut out = std::io::stdout();
    loop {
        let ev = follower.next_event().await?;
        if ev["turnId"] != turn.as_str() {
            continue;
        }
        match ev["kind"].as_str().unwrap_or_default() {
            "text_delta" => {
                let _ = write!(out, "{}", ev["text"].as_str().unwrap_or_default());
                let _ = out.flush();
                streamed = true;
            }
            "assistant_message" => {
                if streamed {
                    let _ = writeln!(out);
                } else {
                    let _ = writeln!(out, "{}", ev["text"].as_str().unwrap_or_default());
                }
                streamed = false;
            }
            "user_message" | "turn_started" => {}
            "turn_completed" => {
                if streamed {
                    let _ = writeln!(out);
                }
                return Ok(match ev["status"].as_str().unwrap_or_default() {
                    "completed" => 0,
                    "interrupted" => {
                        eprintln!("tandem: the turn was interrupted");
                        EXIT_INTERRUPTED
                    }
                    _ => {
                        let error = ev["error"].as_str().unwrap_or("no reason given");
                        eprintln!("tandem: the turn failed: {error}");
                        1
                    }
                });
            }
            _ => {
                if let Some(line) = format::event_line(&ev) {
                    eprintln!("{line}");
                }
            }
        }
    }
}

/// `tandem tail`: every event from `from` (default: the last few) on, one line each,
/// until Ctrl-C.
async fn tail(target: Target, session: String, from: Option<u64>) -> Result<u8, ClientError> {
    let after = match from {
        Some(seq) => seq.saturating_sub(1),
        None => {
            let info: SessionInfo = target.get(&format!("/sessions/{session}")).await?;
            info.last_seq.saturating_sub(TAIL_BACKLOG)
        }
    };
    let mut follower = Follower::new(target, session.into(), after);
    let mut out = std::io::stdout();
    loop {
        let ev = follower.next_event().await?;
        if let Some(line) = format::event_line(&ev) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// `tandem approve|deny`: answers the session's only pending request, or the one named.
async fn answer(
    target: Target,
    session: String,
    request_id: Option<String>,
    allow: bool,
    message: Option<String>,
) -> Result<u8, ClientError> {
    let info: SessionInfo = target.get(&format!("/sessions/{session}")).await?;
    let mut follower = Follower::new(target, session.clone().into(), info.last_seq);
    follower.connect().await?;
    let pending: Vec<(String, String)> = follower
        .pending
        .iter()
        .map(|p| {
            (
                p["requestId"].as_str().unwrap_or_default().to_string(),
                p["toolName"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let (id, tool) = match request_id {
        Some(id) => {
            let tool = pending
                .iter()
                .find(|(p, _)| *p == id)
                .map(|(_, t)| t.clone())
                .unwrap_or_default();
            (id, tool)
        }
        None => match pending.as_slice() {
            [] => {
                return Err(ClientError::Other(format!(
                    "{session} has no pending permission request"
                )))
            }
            [only] => only.clone(),
            many => {
                let ids: Vec<&str> = many.iter().map(|(id, _)| id.as_str()).collect();
                return Err(ClientError::Other(format!(
                    "{session} has {} pending requests; name one: {}",
                    many.len(),
                    ids.join(", ")
                )));
            }
        },
    };
    let params = ChatPermissionResponseParams {
        request_id: id.clone().into(),
        session_id: Some(session.into()),
        allow,
        updated_input: None,
        message,
        remember: None,
        permission_mode: None,
    };
    let socket = follower.connect().await?;
    let sent = socket
        .send_as("chat.permission-response", &params, id.clone())
        .await?;
    socket.answer_to(&sent, &mut Vec::new()).await?;
    let verb = if allow { "allowed" } else { "denied" };
    println!("{verb} {tool} ({id})");
    Ok(0)
}
