//! The `tandem` command line.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tandem_actors::RuntimeConfig;

use crate::auth::AuthMode;
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
    Serve(ServeArgs),
}

/// Flags of `tandem serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Port to listen on; 0 picks a free port (the start line says which).
    #[arg(long, default_value_t = 7420)]
    port: u16,
    /// Where the database lives (default: ~/.tandem).
    #[arg(long)]
    data_dir: Option<PathBuf>,
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
    #[arg(long, default_value_t = 4 << 20)]
    client_queue_bytes: usize,
    /// Most events per SQLite commit (1 = a commit per event; for measurements).
    #[arg(long, default_value_t = 4096)]
    commit_batch: usize,
    /// Recent events each session keeps in memory for replay.
    #[arg(long, default_value_t = 1024)]
    ring_events: usize,
    /// HTTP worker threads (default: number of CPUs).
    #[arg(long)]
    workers: Option<usize>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AuthArg {
    Token,
    None,
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => run_serve(args),
    }
}

/// Runs `tandem serve` with already-parsed flags (also used by the benchmark's
/// server mode).
pub fn run_serve(args: ServeArgs) -> ExitCode {
    let opts = match options(args) {
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

/// Parses `tandem serve` flags from an argument list (without the program name).
pub fn parse_serve_args(args: &[String]) -> Result<ServeArgs, clap::Error> {
    #[derive(Parser)]
    struct Only {
        #[command(flatten)]
        serve: ServeArgs,
    }
    let argv = std::iter::once("serve".to_string()).chain(args.iter().cloned());
    Only::try_parse_from(argv).map(|o| o.serve)
}

fn options(args: ServeArgs) -> Result<ServeOptions, String> {
    let roots = if args.workspace_roots.is_empty() {
        vec![std::env::current_dir().map_err(|e| format!("current directory: {e}"))?]
    } else {
        args.workspace_roots
    };
    let roots = roots
        .into_iter()
        .map(|r| {
            r.canonicalize()
                .map_err(|e| format!("workspace root {}: {e}", r.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut runtime = RuntimeConfig::new(args.data_dir.unwrap_or_else(default_data_dir), roots);
    runtime.commit_batch = args.commit_batch.max(1);
    runtime.client_queue_bytes = args.client_queue_bytes.max(64 << 10);
    runtime.ring_events = args.ring_events.max(1);
    Ok(ServeOptions {
        bind: args.bind,
        port: args.port,
        auth: match args.auth {
            AuthArg::Token => AuthMode::Token,
            AuthArg::None => AuthMode::None,
        },
        runtime,
        max_frame_bytes: args.max_frame_bytes.max(1024),
        workers: args
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
    })
}

/// Logs go to stderr; `TANDEM_LOG` sets the level (error, warn, info, debug, trace).
pub fn init_tracing() {
    let level = std::env::var("TANDEM_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::INFO);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
