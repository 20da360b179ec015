//! The `tandem` command line.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tandem_actors::RuntimeConfig;

use crate::auth::AuthMode;
use crate::config_file::ConfigFile;
use crate::server::{default_data_dir, serve, ServeOptions};

/// tandem: run coding agents side by side and stream them to the web.
#[derive(Debug, Parser)]
#[command(name = "tandem", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the server.
    Serve(Box<ServeArgs>),
    /// Manage users (multi-user mode: each user has a token and sees only their own
    /// and shared sessions).
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Check each vendor CLI (binary, version, login) without calling a model; exits
    /// non-zero when one that is installed or configured cannot work.
    Doctor {
        /// The config file `tandem serve --config` would use.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Check the CLIs confined (`on`, as `tandem serve` runs them by default) or
        /// not (`off`).
        #[arg(long, value_enum, default_value_t = OnOff::On)]
        confine_agents: OnOff,
    },
    /// Run a vendor's program confined by Landlock (`tandem serve` starts agents
    /// through it).
    #[command(hide = true)]
    Confine(crate::confine::ConfineArgs),
    /// Run a program as a new process session on the terminal that is its standard
    /// input (a terminal's shell is started through it).
    #[command(hide = true)]
    Tty(crate::tty::TtyArgs),
    #[command(flatten)]
    Client(crate::client::ClientCommand),
    /// Serve the Agent Client Protocol on stdin and stdout, for an editor (Zed,
    /// JetBrains, Neovim) to drive this server's sessions.
    Acp(crate::acp_agent::AcpArgs),
    /// Print or replace the admin token (or another user's with --user).
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Print the admin token and the URL to open.
    Show {
        /// Where the database lives (default: ~/.tandem).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Replace a token with a new one and print it; the old one stops working
    /// (within a second on a running server).
    Rotate {
        /// Whose token (default: the admin's).
        #[arg(long, default_value = "admin")]
        user: String,
        /// Where the database lives (default: ~/.tandem).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Add a user and print its token (works while the server runs).
    Add {
        /// The new user's id; sessions the user creates record it as their owner.
        id: String,
        /// Give the user access to every session.
        #[arg(long)]
        admin: bool,
        /// Where the database lives (default: ~/.tandem).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// List users (ids, admin flag, when added; never tokens).
    List {
        /// Where the database lives (default: ~/.tandem).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Remove a user; its token stops working (within a second on a running server).
    Revoke {
        /// The user's id, as `tandem user list` shows it.
        id: String,
        /// Where the database lives (default: ~/.tandem).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

/// Flags of `tandem serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on: an IP address or `localhost`.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Port to listen on; 0 picks a free port (the start line says which).
    #[arg(long, default_value_t = 7420)]
    port: u16,
    /// Where the database lives (default: ~/.tandem).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// A TOML file saying how to start each vendor's CLI (`[vendors.codex]`,
    /// `[vendors.claude]`: bin, args, env) and the workspace roots (`[workspace] roots`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// `token` (default) or `none` (loopback binds only).
    #[arg(long, value_enum, default_value_t = AuthArg::Token)]
    auth: AuthArg,
    /// A directory session working directories must lie under; repeatable
    /// (default: the current directory).
    #[arg(long = "workspace-root")]
    workspace_roots: Vec<PathBuf>,
    /// Largest WebSocket frame or REST body accepted, bytes.
    #[arg(long, default_value_t = 1 << 20)]
    max_frame_bytes: usize,
    /// Bytes a WebSocket client may have queued before it is told it lagged.
    #[arg(long, default_value_t = 256 << 10)]
    client_queue_bytes: usize,
    /// Bytes all WebSocket clients together may have queued; past it the clients
    /// furthest behind are disconnected first.
    #[arg(long, default_value_t = 256 << 20)]
    total_queue_bytes: usize,
    /// Seconds a WebSocket client may have bytes queued without writing any before it
    /// is disconnected.
    #[arg(long, default_value_t = 30)]
    client_stall_secs: u64,
    /// Most events per SQLite commit (1 = a commit per event; for measurements).
    #[arg(long, default_value_t = 4096)]
    commit_batch: usize,
    /// Recent events each session keeps in memory for replay.
    #[arg(long, default_value_t = 1024)]
    ring_events: usize,
    /// HTTP worker threads (default: number of CPUs).
    #[arg(long)]
    workers: Option<usize>,
    /// Seconds commits may keep failing (no success in between) before the server
    /// stops with an error.
    #[arg(long, default_value_t = 60)]
    store_give_up_secs: u64,
    /// Seconds between WebSocket pings.
    #[arg(long, default_value_t = 10)]
    ws_ping_secs: u64,
    /// Seconds of silence (no frame, no pong) after which a WebSocket client is dropped.
    #[arg(long, default_value_t = 30)]
    ws_timeout_secs: u64,
    /// A host name this server is reached by (besides the bound address and
    /// `localhost`), e.g. behind a proxy; repeatable. Other `Host` headers are refused.
    #[arg(long = "allowed-host")]
    allowed_hosts: Vec<String>,
    /// A web origin (`https://app.example`) whose pages may call this server;
    /// repeatable. Pages of other origins are refused.
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// Most sessions one user may own.
    #[arg(long, default_value_t = 100_000)]
    max_sessions_per_user: usize,
    /// Most vendor CLI processes that serve one session each (Claude Code, ACP
    /// agents) running at once: beyond it the least recently used idle one is closed
    /// (its session resumes it at its next turn) and a start waits for room.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_live_processes: Option<u32>,
    /// Most turns running at once across sessions: more wait in line, in order of
    /// arrival (status `waiting`), and start as turns end; a Driver's delegation to
    /// its Worker never waits.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_concurrent_turns: Option<u32>,
    /// MiB: a Claude Code or ACP agent process (with the processes it started) that
    /// uses more is closed between turns, never during one, and its session resumed
    /// at the next turn.
    #[arg(long = "max-process-rss", value_parser = clap::value_parser!(u64).range(1..))]
    max_process_rss: Option<u64>,
    /// Where a Worker works when `pair.create` does not say (and for Workers that
    /// proposals and `send_to_partner` create): `shared` or `worktree`; overrides the
    /// config file's `[workspace] worker_workspace`.
    #[arg(long, value_parser = ["shared", "worktree"])]
    worker_workspace: Option<String>,
    /// The ports worktrees get as `TANDEM_PORT`, one each, `FIRST-LAST` (default
    /// 41000-41999); overrides the config file's `[workspace] ports`.
    #[arg(long)]
    worktree_ports: Option<String>,
    /// Most terminals one user may have open at once (beyond it, opening one is
    /// `LIMIT_EXCEEDED`).
    #[arg(long, default_value_t = 8)]
    max_terminals: usize,
    /// A terminal no client watched for this many seconds is ended with everything it
    /// started.
    #[arg(long, default_value_t = 3600)]
    terminal_idle_secs: u64,
    /// Most WebSocket connections one user may hold open.
    #[arg(long, default_value_t = 1024)]
    max_connections_per_user: usize,
    /// Largest file `POST /api/v1/uploads` takes, and largest inline image, in bytes.
    #[arg(long, default_value_t = 10 << 20)]
    max_upload_bytes: u64,
    /// Largest sum of attachment bytes in one message.
    #[arg(long, default_value_t = 20 << 20)]
    max_message_attachment_bytes: u64,
    /// An upload no session used is removed once this many seconds old (at the next
    /// upload or start).
    #[arg(long, default_value_t = 24 * 3600)]
    upload_unused_secs: u64,
    /// Most requests one WebSocket may send per second; the rest are `RATE_LIMITED`.
    #[arg(long, default_value_t = 5000)]
    ws_messages_per_sec: u32,
    /// Run vendor processes (CLIs, ACP agents and all they start) confined by a
    /// Landlock ruleset that allows their session's working directory, their own config
    /// and cache directories, a private temporary directory and read-only system paths
    /// (`on`, where the kernel supports it), or not (`off`).
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    confine_agents: OnOff,
    /// Seconds a request body may go without a byte before the request is answered
    /// 408 `REQUEST_TIMEOUT` and its connection closed (a long upload that keeps
    /// sending is not cut).
    #[arg(long, default_value_t = 30)]
    request_timeout_secs: u64,
    /// Join a cluster through this NATS server (JetStream on), e.g.
    /// `nats://127.0.0.1:4222`; needs `--node`. Without it the server is on its own.
    #[arg(long, requires = "node")]
    nats: Option<String>,
    /// This node's name in the cluster (letters, digits, '-', '_'); its sessions are
    /// pinned to it, so it must stay the same across restarts.
    #[arg(long, requires = "nats")]
    node: Option<String>,
    /// Seconds a node stays available after its last lease renewal (it renews three
    /// times per lease); 2 to 60.
    #[arg(long, default_value_t = 10)]
    lease_secs: u64,
    /// Serve HTTPS and WSS with this PEM certificate chain (the server's certificate
    /// first); needs `--tls-key`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls"
    )]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-cert`.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// `self-signed`: serve HTTPS and WSS with a certificate for localhost and this
    /// machine's addresses, made at the first start (kept in the data directory, files
    /// 0600) and reused after; its SHA-256 fingerprint is printed at start.
    #[arg(long, value_enum, value_name = "MODE")]
    tls: Option<TlsArg>,
    /// Allow plain HTTP on a non-loopback `--bind` address (refused otherwise: tokens
    /// and sessions would cross the network unencrypted); no effect with TLS.
    #[arg(long)]
    insecure_http: bool,
}

/// `--tls MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TlsArg {
    /// A certificate made (once) and kept in the data directory.
    SelfSigned,
}

/// A switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// Switched on.
    On,
    /// Switched off.
    Off,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AuthArg {
    Token,
    None,
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    init_tracing();
    run(Cli::parse())
}

/// Runs `tandem ARGS` (without the program name); used by the benchmark binary, which
/// passes its non-benchmark commands through.
pub fn main_from(args: &[String]) -> ExitCode {
    init_tracing();
    let argv = std::iter::once("tandem".to_string()).chain(args.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(cli) => run(cli),
        Err(e) => {
            let _ = e.print();
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Serve(args) => return run_serve(*args),
        Command::Doctor {
            config,
            confine_agents,
        } => return crate::doctor::run(config, confine_agents == OnOff::On),
        Command::Confine(args) => return crate::confine::run(args),
        Command::Tty(args) => return crate::tty::run(args),
        Command::Client(command) => return crate::client::run(command),
        Command::Acp(args) => return crate::acp_agent::run(args),
        Command::User { command } => user(command),
        Command::Token { command } => token(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tandem: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why a CLI command (`user`, `token`) or `serve`'s flags failed: the words printed
/// after `tandem: `.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CliError(String);

impl From<String> for CliError {
    fn from(why: String) -> Self {
        CliError(why)
    }
}

impl From<&str> for CliError {
    fn from(why: &str) -> Self {
        CliError(why.to_string())
    }
}

impl From<crate::server::NoDefaultDataDir> for CliError {
    fn from(e: crate::server::NoDefaultDataDir) -> Self {
        CliError(e.to_string())
    }
}

/// Opens the store of `data_dir` (default `~/.tandem`) for a CLI command.
fn store(data_dir: Option<PathBuf>) -> Result<tandem_actors::store::Store, CliError> {
    let dir = match data_dir {
        Some(dir) => dir,
        None => default_data_dir()?,
    };
    tandem_actors::store::Store::open(&dir).map_err(|e| CliError(e.to_string()))
}

fn user(command: UserCommand) -> Result<(), CliError> {
    match command {
        UserCommand::Add {
            id,
            admin,
            data_dir,
        } => {
            let valid = !id.is_empty()
                && id.len() <= 64
                && id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !valid {
                return Err("a user id is 1 to 64 letters, digits, '-', '_' or '.'".into());
            }
            let token = store(data_dir)?
                .add_user(&id, admin)
                .map_err(|e| e.to_string())?;
            println!("{token}");
        }
        UserCommand::List { data_dir } => {
            for user in store(data_dir)?.list_users().map_err(|e| e.to_string())? {
                let role = if user.admin { "admin" } else { "user" };
                println!("{}\t{role}\tadded {}", user.id, user.created_at);
            }
        }
        UserCommand::Revoke { id, data_dir } => {
            if !store(data_dir)?
                .revoke_user(&id)
                .map_err(|e| e.to_string())?
            {
                return Err(format!("no user `{id}` (tandem user list shows them)").into());
            }
            println!("revoked {id}");
        }
    }
    Ok(())
}

fn token(command: TokenCommand) -> Result<(), CliError> {
    match command {
        TokenCommand::Show { data_dir } => {
            let token = store(data_dir)?
                .admin_token()
                .map_err(|e| format!("{e}; `tandem token rotate` makes a new admin token"))?;
            println!("{token}");
        }
        TokenCommand::Rotate { user, data_dir } => {
            let token = store(data_dir)?
                .rotate_token(&user)
                .map_err(|e| e.to_string())?;
            println!("{token}");
        }
    }
    Ok(())
}

/// The options `tandem serve ARGS` runs with (`args` without the program name and
/// `serve`), `program` standing in for the `tandem` binary that confines agents and
/// runs terminals: how the tests start a server inside their own process.
pub fn serve_options(args: &[String], program: PathBuf) -> Result<ServeOptions, CliError> {
    let argv = ["tandem", "serve"].into_iter().map(String::from);
    match Cli::try_parse_from(argv.chain(args.iter().cloned())) {
        Ok(Cli {
            command: Command::Serve(args),
        }) => options(*args, Some(program)),
        Ok(_) => Err("not `tandem serve`".into()),
        Err(e) => Err(e.to_string().into()),
    }
}

/// Runs `tandem serve` with parsed flags.
fn run_serve(args: ServeArgs) -> ExitCode {
    let opts = match options(args, None) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("tandem: {e}");
            return ExitCode::from(2);
        }
    };
    let system = actix_rt::System::new();
    match system.block_on(serve(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tandem: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace roots: the config file's, then those of the command line; the
/// current directory when there are none. Each canonical.
fn workspace_roots(file: &ConfigFile, extra: Vec<PathBuf>) -> Result<Vec<PathBuf>, String> {
    let mut roots = file.workspace.roots.clone();
    roots.extend(extra);
    if roots.is_empty() {
        roots.push(std::env::current_dir().map_err(|e| format!("current directory: {e}"))?);
    }
    roots
        .into_iter()
        .map(|r| {
            r.canonicalize()
                .map_err(|e| format!("workspace root {}: {e}", r.display()))
        })
        .collect()
}

/// Agent confinement as the kernel allows (`--confine-agents`), given to every
/// vendor's process.
fn confine(runtime: &mut RuntimeConfig, wanted: bool, program: Option<&Path>) {
    runtime.confinement = crate::confine::detect(wanted, runtime.private_paths(), program);
    // A confined CLI starts the config's stdio servers itself: their programs and the
    // files their arguments name must be readable to it (a user's own open nothing).
    if let Some(launcher) = runtime.confinement.launcher.as_mut() {
        launcher.also_read =
            tandem_actors::adapter::mcp_servers::program_paths(&runtime.mcp_servers);
    }
    for vendor in &mut runtime.vendors.vendors {
        vendor.process.confine = runtime.confinement.launcher.clone();
    }
}

/// The per-user roots of the config file's `[users.NAME]` sections, canonical.
fn add_user_roots(file: &ConfigFile, runtime: &mut RuntimeConfig) -> Result<(), CliError> {
    for (user, section) in &file.users {
        let roots = section
            .workspace_roots
            .iter()
            .map(|r| {
                r.canonicalize()
                    .map_err(|e| format!("[users.{user}] workspace root {}: {e}", r.display()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        runtime.user_roots.insert(user.clone(), roots);
    }
    Ok(())
}

/// What `tandem serve` runs with: its flags over the config file's settings;
/// `program` is the `tandem` binary (`None`: this one).
fn options(mut args: ServeArgs, program: Option<PathBuf>) -> Result<ServeOptions, CliError> {
    let file = match &args.config {
        Some(path) => ConfigFile::load(path).map_err(|e| e.to_string())?,
        None => ConfigFile::default(),
    };
    let roots = workspace_roots(&file, std::mem::take(&mut args.workspace_roots))?;
    let data_dir = args.data_dir.take().map_or_else(default_data_dir, Ok)?;
    let (bind, bind_name) = bind_address(&args.bind)?;
    let mut allowed_hosts = std::mem::take(&mut args.allowed_hosts);
    allowed_hosts.extend(bind_name);
    let mut runtime = RuntimeConfig::new(data_dir, roots);
    add_user_roots(&file, &mut runtime)?;
    runtime.config_file = match &args.config {
        Some(path) => Some(
            path.canonicalize()
                .map_err(|e| format!("config file {}: {e}", path.display()))?,
        ),
        None => None,
    };
    apply_limits(&mut runtime, &args);
    runtime.terminals.helper = program.clone().or_else(|| std::env::current_exe().ok());
    apply_worktrees(&mut runtime, &args, &file)?;
    runtime.mcp_servers = file.mcp_servers()?;
    let cluster = cluster_config(args.nats, args.node, args.lease_secs);
    if let Some(cluster) = &cluster {
        runtime.node = Some(cluster.node.clone());
    }
    runtime.configured_models = file.configured_models();
    runtime.vendors = file.vendors(
        |key| std::env::var(key).ok(),
        std::env::var_os("PATH").as_deref(),
    );
    confine(
        &mut runtime,
        args.confine_agents == OnOff::On,
        program.as_deref(),
    );
    Ok(ServeOptions {
        tls: tls_source(args.tls_cert, args.tls_key, args.tls),
        insecure_http: args.insecure_http,
        bind,
        allowed_hosts,
        allowed_origins: args.allowed_origins,
        limits: crate::state::Limits {
            connections_per_user: args.max_connections_per_user.max(1),
            messages_per_sec: args.ws_messages_per_sec.max(1),
        },
        port: args.port,
        auth: match args.auth {
            AuthArg::Token => AuthMode::Token,
            AuthArg::None => AuthMode::None,
        },
        runtime,
        cluster,
        max_frame_bytes: args.max_frame_bytes.max(1024),
        request_timeout: std::time::Duration::from_secs(args.request_timeout_secs.max(1)),
        heartbeat: crate::state::Heartbeat {
            ping_every: std::time::Duration::from_secs(args.ws_ping_secs.max(1)),
            timeout: std::time::Duration::from_secs(args.ws_timeout_secs.max(2)),
        },
        workers: args
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
    })
}

/// How worktrees are made: the Worker's workspace mode and the ports handed out, the
/// flags' over the config file's.
fn apply_worktrees(
    runtime: &mut RuntimeConfig,
    args: &ServeArgs,
    file: &ConfigFile,
) -> Result<(), CliError> {
    runtime.worker_workspace = args
        .worker_workspace
        .as_deref()
        .and_then(tandem_protocol::workspace::WorkspaceMode::parse)
        .or(file.workspace.worker_workspace)
        .unwrap_or_default();
    if let Some(ports) = args
        .worktree_ports
        .as_deref()
        .or(file.workspace.ports.as_deref())
    {
        runtime.worktree_ports = port_range(ports)?;
    }
    Ok(())
}

/// `--nats` with `--node`: the cluster this node joins (neither: it runs alone).
fn cluster_config(
    nats: Option<String>,
    node: Option<String>,
    lease_secs: u64,
) -> Option<tandem_actors::cluster::ClusterConfig> {
    match (nats, node) {
        (Some(url), Some(node)) => Some(tandem_actors::cluster::ClusterConfig {
            url,
            node,
            lease: std::time::Duration::from_secs(lease_secs.clamp(2, 60)),
        }),
        _ => None,
    }
}

/// The server's certificate: `--tls-cert` with `--tls-key`, else `--tls self-signed`.
fn tls_source(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    tls: Option<TlsArg>,
) -> Option<crate::tls::TlsSource> {
    match (cert, key, tls) {
        (Some(cert), Some(key), _) => Some(crate::tls::TlsSource::Files { cert, key }),
        (_, _, Some(TlsArg::SelfSigned)) => Some(crate::tls::TlsSource::SelfSigned),
        _ => None,
    }
}

/// The runtime's limits from the flags (sessions, processes, uploads, terminals, the
/// store's batches, clients' queues), each at least its floor.
fn apply_limits(runtime: &mut RuntimeConfig, args: &ServeArgs) {
    runtime.max_sessions_per_user = args.max_sessions_per_user.max(1);
    runtime.max_live_processes = args.max_live_processes.map(|n| n as usize);
    runtime.max_concurrent_turns = args.max_concurrent_turns.map(|n| n as usize);
    runtime.max_process_rss_mib = args.max_process_rss;
    runtime.uploads.max_file_bytes = args.max_upload_bytes.max(1);
    runtime.uploads.max_message_bytes = args.max_message_attachment_bytes.max(1);
    runtime.uploads.unused_ttl = std::time::Duration::from_secs(args.upload_unused_secs);
    runtime.terminals.max_per_user = args.max_terminals;
    runtime.terminals.idle = std::time::Duration::from_secs(args.terminal_idle_secs.max(1));
    runtime.commit_batch = args.commit_batch.max(1);
    runtime.client_queue_bytes = args.client_queue_bytes.max(64 << 10);
    runtime.total_queue_bytes = args.total_queue_bytes.max(runtime.client_queue_bytes);
    runtime.ring_events = args.ring_events.max(1);
    runtime.client_stall = std::time::Duration::from_secs(args.client_stall_secs.max(1));
    runtime.store_give_up = std::time::Duration::from_secs(args.store_give_up_secs.max(1));
}

/// `--bind`: an IP address, or a name that resolves to one (`localhost`). A name is
/// returned too, as a `Host` the server must accept.
fn bind_address(bind: &str) -> Result<(IpAddr, Option<String>), String> {
    if let Ok(ip) = bind.parse::<IpAddr>() {
        return Ok((ip, None));
    }
    if bind.eq_ignore_ascii_case("localhost") {
        return Ok((IpAddr::from([127, 0, 0, 1]), None));
    }
    use std::net::ToSocketAddrs;
    let addr = (bind, 0u16)
        .to_socket_addrs()
        .map_err(|e| format!("--bind {bind}: {e}"))?
        .next()
        .ok_or_else(|| format!("--bind {bind}: the name has no address"))?;
    Ok((addr.ip(), Some(bind.to_ascii_lowercase())))
}

/// Logs go to stderr; `TANDEM_LOG` sets the level (error, warn, info, debug, trace).
/// Colour codes only when stderr is a terminal.
fn init_tracing() {
    init_tracing_at(tracing::Level::INFO);
}

/// [`init_tracing`] with `default` as the level when `TANDEM_LOG` sets none; public
/// for the tests' in-process servers. A second call does nothing.
pub fn init_tracing_at(default: tracing::Level) {
    let level = std::env::var("TANDEM_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(default);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// `FIRST-LAST` as a range of ports (1024 and up).
fn port_range(text: &str) -> Result<std::ops::RangeInclusive<u16>, String> {
    let bad = || format!("worktree ports `{text}`: give FIRST-LAST, 1024 to 65535, FIRST <= LAST");
    let (first, last) = text.trim().split_once('-').ok_or_else(bad)?;
    let first: u16 = first.trim().parse().map_err(|_| bad())?;
    let last: u16 = last.trim().parse().map_err(|_| bad())?;
    if first < 1024 || first > last {
        return Err(bad());
    }
    Ok(first..=last)
}
