//! The server under measurement: this very executable in `serve` mode, as a child
//! process, killed when dropped (also when a benchmark fails half-way).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::TempDir;

/// Names the executable [`BenchServer::start`] runs as `EXE serve …` instead of this
/// one (any build's `bench` or `tandem` binary).
pub const SERVER_ENV: &str = "TANDEM_BENCH_SERVER";

/// How long the server may take to print its start line.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server process with its own data directory.
pub struct BenchServer {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    child: Child,
    /// Data directory and workspace root; removed after the process is gone (field
    /// order: dropped after `Drop::drop` killed the child). `None` when the caller
    /// owns the directory ([`BenchServer::start_on`]).
    _dir: Option<TempDir>,
}

impl BenchServer {
    /// Starts `serve --port 0 --auth none` in a fresh temporary directory, with
    /// `extra` flags appended. The executable is this one, or the one named by
    /// [`SERVER_ENV`] (another build's `bench`, to measure two builds with the same
    /// load generator).
    pub fn start(extra: &[String]) -> Result<BenchServer, String> {
        let dir = TempDir::new("bench");
        let exe = match std::env::var_os(SERVER_ENV) {
            Some(path) => std::path::PathBuf::from(path),
            None => std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?,
        };
        let mut command = Command::new(&exe);
        command
            .arg("serve")
            .args(["--port", "0", "--auth", "none", "--data-dir"])
            .arg(dir.path().join("data"))
            .arg("--workspace-root")
            .arg(dir.path())
            .args(extra);
        BenchServer::spawn(command, Some(dir), START_TIMEOUT)
    }

    /// Starts `serve --port 0 --auth none` on the existing data directory `data` (the
    /// caller's: it is kept), with `root` as the workspace root, waiting at most
    /// `timeout` for the start line (a server loading a large store takes longer).
    pub fn start_on(
        data: &std::path::Path,
        root: &std::path::Path,
        extra: &[String],
        timeout: Duration,
    ) -> Result<BenchServer, String> {
        let exe = match std::env::var_os(SERVER_ENV) {
            Some(path) => std::path::PathBuf::from(path),
            None => std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?,
        };
        let mut command = Command::new(&exe);
        command
            .arg("serve")
            .args(["--port", "0", "--auth", "none", "--data-dir"])
            .arg(data)
            .arg("--workspace-root")
            .arg(root)
            .args(extra);
        BenchServer::spawn(command, None, timeout)
    }

    /// Starts the minimal fan-out server (`bench floor-serve`, [`super::floor`]); with
    /// `durable`, the durable floor, committing to the database at that path.
    pub fn start_floor(durable: Option<&std::path::Path>) -> Result<BenchServer, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let mut command = Command::new(&exe);
        command.arg("floor-serve");
        if let Some(db) = durable {
            command.arg("--durable").arg(db);
        }
        BenchServer::spawn(command, Some(TempDir::new("bench-floor")), START_TIMEOUT)
    }

    /// Runs `command` and waits for its start line.
    fn spawn(
        mut command: Command,
        dir: Option<TempDir>,
        timeout: Duration,
    ) -> Result<BenchServer, String> {
        let mut child = command
            .env(
                "TANDEM_LOG",
                std::env::var("TANDEM_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("server has no stdout".into());
        };
        let (tx, rx) = mpsc::channel::<String>();
        // Keeps draining stdout for the life of the process so it never blocks on it.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut server = BenchServer {
            base: String::new(),
            child,
            _dir: dir,
        };
        loop {
            match rx.recv_timeout(timeout) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("tandem listening on ") {
                        server.base = url.trim().to_string();
                        return Ok(server);
                    }
                }
                // Dropping `server` kills the process.
                Err(e) => return Err(format!("server did not print its start line: {e}")),
            }
        }
    }

    /// The server's process id (for `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `ws://127.0.0.1:PORT/ws`
    pub fn ws_url(&self) -> String {
        format!("{}/ws", self.base.replacen("http://", "ws://", 1))
    }

    /// One value from `/metrics` (0 when absent).
    pub async fn metric(&self, name: &str) -> Result<f64, String> {
        let text = self.get_text("/metrics").await?;
        Ok(metric_value(&text, name).unwrap_or(0.0))
    }

    /// GET a path; the body as text (an error unless 200).
    pub async fn get_text(&self, path: &str) -> Result<String, String> {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(30))
            .finish();
        let mut resp = client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .map_err(|e| format!("GET {path}: {e}"))?;
        let body = resp
            .body()
            .limit(64 << 20)
            .await
            .map_err(|e| format!("GET {path}: {e}"))?;
        if resp.status().as_u16() != 200 {
            return Err(format!("GET {path}: status {}", resp.status()));
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of an unlabelled metric in Prometheus text.
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}
