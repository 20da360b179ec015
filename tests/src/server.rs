//! Starting and stopping servers: in the test process, or as `tandem serve` processes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// A directory removed when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// A new empty directory under the system temp dir.
    pub fn new(label: &str) -> TempDir {
        let mut bytes = [0u8; 8];
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (nanos >> (i * 8)) as u8 ^ (std::process::id() >> (i % 4 * 8)) as u8;
        }
        let name = format!(
            "tandem-{label}-{}-{}",
            std::process::id(),
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        let path = std::env::temp_dir().join(name);
        if let Err(e) = std::fs::create_dir_all(&path) {
            panic!("cannot create {}: {e}", path.display());
        }
        TempDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// How to start a server.
#[derive(Debug, Default)]
pub struct ServerOptions {
    /// Require tokens (the default for real use); tests mostly run with `--auth none`.
    pub token_auth: bool,
    /// Extra `tandem serve` flags.
    pub args: Vec<String>,
}

impl ServerOptions {
    /// `--config FILE`, without token auth.
    pub fn with_config(config: &Path) -> ServerOptions {
        ServerOptions {
            args: vec!["--config".into(), config.display().to_string()],
            ..ServerOptions::default()
        }
    }
}

/// A server started with `--config FILE`, which a test may kill and start again on
/// the same data and config. Dropped, it stops cleanly (SIGTERM: the server stops the
/// vendor processes it started, which SIGKILL would orphan when busy), or is killed
/// when the test is already failing.
#[derive(Debug)]
pub struct ConfiguredServer {
    /// The running server; `None` once the test stopped it.
    server: Option<Server>,
    /// Its data directory's parent, kept across restarts.
    dir: std::sync::Arc<TempDir>,
    /// The config file it starts with.
    config: PathBuf,
    /// More `tandem serve` flags.
    args: Vec<String>,
}

impl ConfiguredServer {
    /// Starts a server in `dir` with `config`.
    pub fn start(dir: std::sync::Arc<TempDir>, config: PathBuf) -> ConfiguredServer {
        ConfiguredServer::start_with(dir, config, Vec::new())
    }

    /// [`ConfiguredServer::start`] with more `tandem serve` flags (kept for restarts).
    pub fn start_with(
        dir: std::sync::Arc<TempDir>,
        config: PathBuf,
        args: Vec<String>,
    ) -> ConfiguredServer {
        let mut this = ConfiguredServer {
            server: None,
            dir,
            config,
            args,
        };
        this.server = Some(Server::start_process_in(this.dir.clone(), this.options()));
        this
    }

    fn options(&self) -> ServerOptions {
        let mut options = ServerOptions::with_config(&self.config);
        options.args.extend(self.args.iter().cloned());
        options
    }

    /// The running server; panics once it was stopped.
    pub fn server(&self) -> &Server {
        match &self.server {
            Some(s) => s,
            None => panic!("the server is stopped"),
        }
    }

    /// Kills the server (SIGKILL) and starts it again on the same data.
    pub fn restart(&mut self) {
        if let Some(old) = self.server.take() {
            old.kill();
        }
        self.server = Some(Server::start_process_in(self.dir.clone(), self.options()));
    }

    /// Stops the server cleanly (SIGTERM) and waits for it to exit.
    pub fn terminate(&mut self) {
        if let Some(server) = self.server.take() {
            server.terminate();
        }
    }
}

impl Drop for ConfiguredServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            if std::thread::panicking() {
                server.kill();
            } else {
                server.terminate();
            }
        }
    }
}

/// A running server: by default inside the test process ([`Server::start`]), or a
/// `tandem serve` process where the process itself is what a test looks at (killed,
/// crashed, its memory, its children: [`Server::start_process`]). It derefs to an
/// [`Api`] client holding the admin token (when token auth is on);
/// [`Server::as_user`] gives one for another token.
#[derive(Debug)]
pub struct Server {
    api: Api,
    /// Workspace root and data directory parent; kept across restarts.
    pub dir: std::sync::Arc<TempDir>,
    /// What the server printed on stdout up to and including its start line.
    pub start_lines: Vec<String>,
    running: Running,
}

/// Where a server runs.
#[derive(Debug)]
enum Running {
    /// A `tandem serve` child process.
    Process(Child),
    /// On a thread of the test process, with its own actix system.
    InProcess(InProcess),
}

/// A server on a thread of the test process.
#[derive(Debug)]
struct InProcess {
    /// Stops its HTTP server; the thread then stops the vendor processes and ends.
    handle: tandem_http::server::ServerHandle,
    /// Says when the thread ended (dropped with it).
    ended: mpsc::Receiver<()>,
}

/// How many servers run inside this process. Failpoints, holds and crash points are
/// per process, so only one server runs in-process at a time: a second one started
/// while it runs (a cluster's other nodes) is a process of its own.
static IN_PROCESS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl std::ops::Deref for Server {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

/// REST and WebSocket access to a server as one caller.
#[derive(Debug, Clone)]
pub struct Api {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// The caller's token, if any.
    pub token: Option<String>,
}

/// The server binary: the bench program's `serve` mode runs the very same server code
/// as `tandem serve`. Cargo builds it for this package's integration tests, next to
/// the `deps/` folder that holds the test executables; the bench finds itself.
pub fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if dir.ends_with("deps") {
        dir.parent().map(Path::to_path_buf).unwrap_or(dir)
    } else {
        dir
    };
    dir.join(format!("bench{}", std::env::consts::EXE_SUFFIX))
}

impl Server {
    /// Starts a server with `--auth none` in a fresh directory, in this process.
    pub fn start() -> Server {
        Server::start_with(ServerOptions::default())
    }

    /// Starts a server with options in a fresh directory, in this process.
    pub fn start_with(opts: ServerOptions) -> Server {
        Server::start_in(std::sync::Arc::new(TempDir::new("srv")), opts)
    }

    /// Starts a server on an existing directory (to test restarts), in this process
    /// unless another server already runs in it.
    pub fn start_in(dir: std::sync::Arc<TempDir>, opts: ServerOptions) -> Server {
        let args = serve_args(&dir, &opts);
        let taken = IN_PROCESS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0;
        if taken {
            IN_PROCESS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            return Server::start_program(&server_binary(), dir, opts, &[]);
        }
        tandem_http::cli::init_tracing_at(tracing::Level::WARN);
        let options = tandem_http::cli::serve_options(&args, server_binary())
            .unwrap_or_else(|e| panic!("tandem serve {args:?}: {e}"));
        let (started, start_rx) = mpsc::channel();
        let (ended_tx, ended) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("tandem-server".into())
            .spawn(move || {
                let system = actix_rt::System::new();
                let served = system.block_on(tandem_http::server::serve_reporting(
                    options,
                    move |lines, handle| {
                        let _ = started.send((lines.to_vec(), handle));
                        Ok(())
                    },
                ));
                if let Err(e) = served {
                    eprintln!("tandem serve {args:?}: {e}");
                }
                // The runtime's arbiters end with the system.
                actix_rt::System::current().stop();
                let _ = system.run();
                IN_PROCESS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                drop(ended_tx);
            });
        if let Err(e) = spawned {
            panic!("cannot start the server thread: {e}");
        }
        let (lines, handle) = match start_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(started) => started,
            Err(e) => panic!("the server did not start: {e}"),
        };
        let start_lines: Vec<String> = String::from_utf8_lossy(&lines)
            .lines()
            .map(String::from)
            .collect();
        Server::started(
            dir,
            &opts,
            start_lines,
            Running::InProcess(InProcess { handle, ended }),
        )
    }

    /// Starts a `tandem serve` process with options in a fresh directory: for a test
    /// of the process itself (killed, crashed, its memory or children).
    pub fn start_process(opts: ServerOptions) -> Server {
        let dir = std::sync::Arc::new(TempDir::new("srv"));
        Server::start_program(&server_binary(), dir, opts, &[])
    }

    /// [`Server::start_process`] on an existing directory.
    pub fn start_process_in(dir: std::sync::Arc<TempDir>, opts: ServerOptions) -> Server {
        Server::start_program(&server_binary(), dir, opts, &[])
    }

    /// [`Server::start_process_in`] with extra environment variables for the server
    /// process.
    pub fn start_in_env(
        dir: std::sync::Arc<TempDir>,
        opts: ServerOptions,
        env: &[(String, String)],
    ) -> Server {
        Server::start_program(&server_binary(), dir, opts, env)
    }

    /// [`Server::start_in_env`] running `binary` (a `tandem` built another way) as
    /// the server.
    pub fn start_program(
        binary: &Path,
        dir: std::sync::Arc<TempDir>,
        opts: ServerOptions,
        env: &[(String, String)],
    ) -> Server {
        let mut cmd = Command::new(binary);
        cmd.arg("serve")
            .args(serve_args(&dir, &opts))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env(
                "TANDEM_LOG",
                std::env::var("TANDEM_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot start {}: {e}", binary.display()),
        };
        let Some(stdout) = child.stdout.take() else {
            panic!("no stdout");
        };
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // With token auth the first start prints `open URL?token=T` (once, before the
        // start line); later starts do not, and `tandem token show` prints it.
        let mut start_lines = Vec::new();
        while !start_lines
            .last()
            .is_some_and(|l: &String| l.starts_with(LISTENING))
        {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => start_lines.push(line),
                Err(e) => {
                    let _ = child.kill();
                    panic!("server did not print its start line: {e}");
                }
            }
        }
        Server::started(dir, &opts, start_lines, Running::Process(child))
    }

    /// The server whose start lines were read: its address and admin token.
    fn started(
        dir: std::sync::Arc<TempDir>,
        opts: &ServerOptions,
        start_lines: Vec<String>,
        running: Running,
    ) -> Server {
        let base = start_lines
            .iter()
            .find_map(|l| l.strip_prefix(LISTENING))
            .map(|url| url.trim().to_string())
            .unwrap_or_else(|| panic!("no start line in {start_lines:?}"));
        let mut token = start_lines
            .iter()
            .find_map(|l| l.split_once("?token="))
            .map(|(_, t)| t.trim().to_string());
        if opts.token_auth && token.is_none() {
            token = Some(cli(
                &["token", "show", "--data-dir"],
                &dir.path().join("data"),
            ));
        }
        Server {
            api: Api { base, token },
            dir,
            start_lines,
            running,
        }
    }

    /// Runs `tandem ARGS... DIR` against this server's data directory (`ARGS` ending
    /// in `--data-dir`) and returns its trimmed stdout; panics if it fails.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(args, &self.dir.path().join("data"))
    }

    /// Adds a user with `tandem user add` (while the server runs) and returns an
    /// [`Api`] that calls as that user.
    pub fn add_user(&self, id: &str) -> Api {
        self.as_user(&self.cli(&["user", "add", id, "--data-dir"]))
    }

    /// An [`Api`] that calls with `token`.
    pub fn as_user(&self, token: &str) -> Api {
        Api {
            base: self.api.base.clone(),
            token: Some(token.to_string()),
        }
    }

    /// The server's process id; a test that looks at the process starts one with
    /// [`Server::start_process`].
    pub fn pid(&self) -> u32 {
        match &self.running {
            Running::Process(child) => child.id(),
            Running::InProcess(_) => in_process_has_no(),
        }
    }

    /// The server's process; panics for a server in this process.
    fn child(&mut self) -> &mut Child {
        match &mut self.running {
            Running::Process(child) => child,
            Running::InProcess(_) => in_process_has_no(),
        }
    }

    /// Waits (polling, for at most 30 s) for the process to end by itself, e.g. at a
    /// crash point, and returns its exit status and the directory for a restart.
    /// Panics (and the drop kills the process) if it keeps running.
    pub async fn exited(mut self) -> (std::process::ExitStatus, std::sync::Arc<TempDir>) {
        for _ in 0..600 {
            match self.child().try_wait() {
                Ok(Some(status)) => return (status, self.dir.clone()),
                Ok(None) => actix_rt::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("waiting for the server: {e}"),
            }
        }
        panic!("the server did not exit");
    }

    /// Stops the server cleanly (a process by SIGTERM) and waits for it to end;
    /// panics if it is still running after 30 s (a process is then killed).
    pub fn terminate(mut self) -> std::sync::Arc<TempDir> {
        let child = match &mut self.running {
            Running::Process(child) => child,
            Running::InProcess(server) => {
                let stopped = server.stop(true);
                assert!(stopped, "the server did not stop within 30 s");
                return self.dir.clone();
            }
        };
        let pid = child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        // A clean stop that hangs must fail the test, not hang it: a watchdog kills the
        // server after 30 s.
        let (done, watch) = mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if watch.recv_timeout(Duration::from_secs(30)).is_err() {
                let _ = Command::new("kill").args(["-KILL", &pid]).status();
                return true;
            }
            false
        });
        let status = child.wait();
        let _ = done.send(());
        let hung = watchdog.join().unwrap_or(true);
        assert!(
            !hung,
            "the server did not stop within 30 s of SIGTERM ({status:?})"
        );
        self.dir.clone()
    }

    /// Kills the process with SIGKILL (no clean shutdown) and waits for it.
    pub fn kill(mut self) -> std::sync::Arc<TempDir> {
        let child = self.child();
        let _ = child.kill();
        let _ = child.wait();
        self.dir.clone()
    }
}

/// What asking a server in the test process for its process does.
fn in_process_has_no() -> ! {
    panic!("this server runs in the test process: start it with Server::start_process")
}

impl InProcess {
    /// Stops the server (`graceful`: waits for open requests, as SIGTERM does) and
    /// waits up to 30 s for its thread to end; whether it ended.
    fn stop(&mut self, graceful: bool) -> bool {
        // The command is sent when called; the returned future only waits for it.
        drop(self.handle.stop(graceful));
        matches!(
            self.ended.recv_timeout(Duration::from_secs(30)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        )
    }
}

/// What `tandem serve` prints once it listens, before its URL.
const LISTENING: &str = "tandem listening on ";

/// The flags after `tandem serve` for a server in `dir` with `opts`.
fn serve_args(dir: &TempDir, opts: &ServerOptions) -> Vec<String> {
    let mut args = Vec::new();
    // A restart that must keep its address passes its own `--port`.
    if !opts.args.iter().any(|a| a == "--port") {
        args.extend(["--port".to_string(), "0".to_string()]);
    }
    let data = dir.path().join("data");
    args.extend([
        "--data-dir".to_string(),
        data.display().to_string(),
        "--workspace-root".to_string(),
        dir.path().display().to_string(),
        "--auth".to_string(),
        if opts.token_auth { "token" } else { "none" }.to_string(),
    ]);
    args.extend(opts.args.iter().cloned());
    args
}

/// Runs the `tandem` command line with `args` followed by `data`.
fn cli(args: &[&str], data: &Path) -> String {
    let out = Command::new(server_binary())
        .args(args)
        .arg(data)
        .output()
        .unwrap_or_else(|e| panic!("tandem {args:?}: {e}"));
    assert!(
        out.status.success(),
        "tandem {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Api {
    /// `ws://127.0.0.1:PORT/ws` with the token if any.
    pub fn ws_url(&self) -> String {
        let base = self.base.replacen("http://", "ws://", 1);
        match &self.token {
            Some(t) => format!("{base}/ws?token={t}"),
            None => format!("{base}/ws"),
        }
    }

    /// Opens a WebSocket client.
    pub async fn ws(&self) -> crate::WsClient {
        crate::WsClient::connect(&self.ws_url()).await
    }

    fn request(&self, method: awc::http::Method, path: &str) -> awc::ClientRequest {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(30))
            .finish();
        let req = client.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => req.insert_header(("Authorization", format!("Bearer {t}"))),
            None => req,
        }
    }

    /// One request: `method` to `path` with `headers` and `body`; answers the status,
    /// the response's headers and its body (at most 256 MiB). Panics when the request
    /// cannot be made or the body read: a test that gets here wanted an answer.
    async fn exchange(
        &self,
        method: awc::http::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, awc::http::header::HeaderMap, Vec<u8>) {
        let label = format!("{method} {path}");
        let mut req = self.request(method, path);
        for (name, value) in headers {
            req = req.insert_header((*name, *value));
        }
        let mut resp = match req.send_body(body).await {
            Ok(r) => r,
            Err(e) => panic!("{label}: {e}"),
        };
        let bytes = resp
            .body()
            .limit(256 << 20)
            .await
            .unwrap_or_else(|e| panic!("{label}: reading the body: {e}"));
        (
            resp.status().as_u16(),
            resp.headers().clone(),
            bytes.to_vec(),
        )
    }

    /// [`Server::exchange`] with its body read as JSON (`Null` when it is not).
    async fn exchange_json(
        &self,
        method: awc::http::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> (u16, Value) {
        let (status, _, bytes) = self.exchange(method, path, headers, body).await;
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// GET a path; returns the status and the JSON body (Null when not JSON).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.exchange_json(awc::http::Method::GET, path, &[], Vec::new())
            .await
    }

    /// GET a path and return the raw body text.
    pub async fn get_text(&self, path: &str) -> (u16, String) {
        let (status, _, bytes) = self
            .exchange(awc::http::Method::GET, path, &[], Vec::new())
            .await;
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// One counter or gauge of `/metrics`; 0 when the server does not report it.
    pub async fn metric(&self, name: &str) -> u64 {
        let (_, text) = self.get_text("/metrics").await;
        crate::bench::server::metric_value(&text, name).map_or(0, |v| v as u64)
    }

    /// GET a path's raw bytes: status, `Content-Type` and body.
    pub async fn get_bytes(&self, path: &str) -> (u16, String, Vec<u8>) {
        let (status, headers, bytes) = self
            .exchange(awc::http::Method::GET, path, &[], Vec::new())
            .await;
        let content_type = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (status, content_type, bytes)
    }

    /// POST a raw body as JSON; returns the status and the JSON body.
    pub async fn post_raw(&self, path: &str, body: impl Into<Vec<u8>>) -> (u16, Value) {
        self.post_bytes(path, "application/json", body).await
    }

    /// POST raw bytes with their own `Content-Type` (an upload); returns the status
    /// and the JSON body.
    pub async fn post_bytes(
        &self,
        path: &str,
        content_type: &str,
        body: impl Into<Vec<u8>>,
    ) -> (u16, Value) {
        let headers = [("Content-Type", content_type)];
        self.exchange_json(awc::http::Method::POST, path, &headers, body.into())
            .await
    }

    /// DELETE a path; returns the status and the JSON body.
    pub async fn delete(&self, path: &str) -> (u16, Value) {
        self.exchange_json(awc::http::Method::DELETE, path, &[], Vec::new())
            .await
    }

    /// PATCH JSON; returns the status and the JSON body.
    pub async fn patch(&self, path: &str, body: &Value) -> (u16, Value) {
        let headers = [("Content-Type", "application/json")];
        let body = body.to_string().into_bytes();
        self.exchange_json(awc::http::Method::PATCH, path, &headers, body)
            .await
    }

    /// PUT JSON with an optional `If-Match`; returns the status, the `ETag` header
    /// and the JSON body.
    pub async fn put(
        &self,
        path: &str,
        body: &Value,
        if_match: Option<&str>,
    ) -> (u16, Option<String>, Value) {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(tag) = if_match {
            headers.push(("If-Match", tag));
        }
        let (status, answer, bytes) = self
            .exchange(
                awc::http::Method::PUT,
                path,
                &headers,
                body.to_string().into_bytes(),
            )
            .await;
        let etag = answer
            .get("ETag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        (
            status,
            etag,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Sets one of the server's named failpoints (test builds have
    /// `POST /debug/failpoints`); `actions` is the `fail` crate's syntax, `off` removes
    /// it.
    pub async fn failpoint(&self, name: &str, actions: &str) {
        let body = serde_json::json!({"name": name, "actions": actions});
        let (status, answer) = self.post("/debug/failpoints", &body).await;
        assert_eq!(status, 200, "failpoint {name}: {answer}");
    }

    /// Waits until a turn of this server is at the scripted step `/hold NAME` (listed by
    /// `GET /debug/holds`): the state "the turn runs and stands there", not a window.
    pub async fn wait_held(&self, name: &str) {
        crate::eventually(&format!("a turn at /hold {name}"), async || {
            let (status, list) = self.get("/debug/holds").await;
            assert_eq!(status, 200, "GET /debug/holds: {list}");
            list["holds"]
                .as_array()
                .is_some_and(|h| h.iter().any(|h| h["name"] == name))
                .then_some(())
        })
        .await;
    }

    /// Releases the hold NAME for good (`POST /debug/holds/{name}/release`): the turns
    /// at `/hold NAME` go on, and a turn reaching it later passes at once. Answers how
    /// many turns were waiting there.
    pub async fn release(&self, name: &str) -> u64 {
        let (status, answer) = self
            .post(
                &format!("/debug/holds/{name}/release"),
                &serde_json::json!({}),
            )
            .await;
        assert_eq!(status, 200, "release {name}: {answer}");
        answer["released"].as_u64().unwrap_or_default()
    }

    /// POST JSON.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_raw(path, body.to_string()).await
    }

    /// All stored events of a session, via REST paging.
    pub async fn all_events(&self, session_id: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut after = 0;
        loop {
            let (status, page) = self
                .get(&format!(
                    "/api/v1/sessions/{session_id}/events?after={after}&limit=5000"
                ))
                .await;
            assert_eq!(status, 200, "events page: {page}");
            let events = page["events"]
                .as_array()
                .cloned()
                .unwrap_or_else(|| panic!("no events in the page: {page}"));
            if let Some(last) = events.last() {
                after = last["seq"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("an event without seq: {last}"));
            }
            out.extend(events);
            if !page["hasMore"].as_bool().unwrap_or(false) {
                return out;
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        match &mut self.running {
            Running::Process(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Running::InProcess(server) => {
                if !server.stop(false) {
                    eprintln!("the in-process server did not stop within 30 s");
                }
            }
        }
    }
}
