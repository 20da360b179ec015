//! The embedded server: when nothing listens where `tandem acp` looks for the server
//! (and the URL is a loopback one it may serve), it serves one itself, `tandem serve`
//! on that address and the data directory, so that the first use from an editor
//! needs no other step. It runs as a child process (so that what `tandem serve`
//! prints goes to our stderr, never into the ACP on stdout) and is stopped when
//! `tandem acp` ends; other clients (the page, the terminal client, another editor)
//! can use it meanwhile, and a later `tandem acp` finds it or serves the same data
//! again.

use std::cell::RefCell;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How long the embedded server has to start answering.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How often to look whether it answers yet.
const POLL: Duration = Duration::from_millis(50);

/// Why no embedded server could be served.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The URL is not `http://` on a loopback address with a port.
    #[error("cannot serve an embedded server at {0}: only http://127.0.0.1:PORT, http://[::1]:PORT or http://localhost:PORT can be served here")]
    NotLoopback(String),
    /// `tandem serve` could not be started.
    #[error("cannot start the embedded server: {0}")]
    Spawn(String),
    /// `tandem serve` stopped (its reason is on stderr).
    #[error("the embedded server at {0} did not start (its log on stderr says why)")]
    Stopped(String),
    /// It did not answer in time.
    #[error("the embedded server at {url} did not answer within {} s", .waited.as_secs())]
    Timeout {
        /// Where it was to answer.
        url: String,
        /// How long we waited.
        waited: Duration,
    },
}

/// What the embedded server is started with, and the one started; clones share it.
#[derive(Debug, Clone)]
pub struct Embedding {
    /// Its data directory (`None`: `tandem serve`'s default, `~/.tandem`).
    pub data_dir: Option<PathBuf>,
    /// Its workspace roots (none: the home directory).
    pub roots: Vec<PathBuf>,
    /// The server process, once started.
    served: Rc<RefCell<Option<Served>>>,
}

/// A started `tandem serve`, stopped when dropped.
#[derive(Debug)]
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        // Its store survives a kill (it is written to survive a crash), and the
        // agents it started are killed with it (`tandem confine`).
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The words that make this program `tandem`: those before `acp` in its command
/// line (none for the `tandem` binary; `tandem` for the benchmark binary, which runs
/// `tandem ARGS` as `bench tandem ARGS`).
fn own_prefix() -> Vec<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().position(|a| a == "acp") {
        Some(i) => args[..i].to_vec(),
        None => Vec::new(),
    }
}

/// The host and port of a loopback `http://` URL.
pub fn loopback(base: &str) -> Result<(String, u16), EmbedError> {
    let refuse = || EmbedError::NotLoopback(base.to_string());
    let rest = base.strip_prefix("http://").ok_or_else(refuse)?;
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = authority.rsplit_once(':').ok_or_else(refuse)?;
    let port: u16 = port.parse().map_err(|_| refuse())?;
    let host = match host {
        "localhost" | "127.0.0.1" => "127.0.0.1",
        "[::1]" => "::1",
        _ => return Err(refuse()),
    };
    Ok((host.to_string(), port))
}

/// The admin token of the embedded server's data directory, once it wrote it.
pub fn admin_token(data_dir: Option<&PathBuf>) -> Option<String> {
    let dir = match data_dir {
        Some(dir) => dir.clone(),
        None => crate::server::default_data_dir().ok()?,
    };
    let text =
        std::fs::read_to_string(dir.join(tandem_actors::store::tokens::ADMIN_TOKEN_FILE)).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// Whether anything accepts connections at `host:port`.
pub async fn listening(host: &str, port: u16) -> bool {
    actix_rt::net::TcpStream::connect((host, port))
        .await
        .is_ok()
}

impl Embedding {
    /// An embedding of `data_dir` (`None`: the default) with `roots`.
    pub fn new(data_dir: Option<PathBuf>, roots: Vec<PathBuf>) -> Embedding {
        Embedding {
            data_dir,
            roots,
            served: Rc::new(RefCell::new(None)),
        }
    }

    /// Stops the server started, if any.
    pub fn stop(&self) {
        self.served.borrow_mut().take();
    }

    /// The words of `tandem serve` for `host:port`.
    fn serve_args(&self, host: &str, port: u16) -> Vec<String> {
        let mut args = vec![
            "serve".to_string(),
            "--bind".into(),
            host.to_string(),
            "--port".into(),
            port.to_string(),
        ];
        if let Some(dir) = &self.data_dir {
            args.push("--data-dir".into());
            args.push(dir.display().to_string());
        }
        let roots = if self.roots.is_empty() {
            // An editor opens projects anywhere under the user's home; a session
            // outside the roots would be refused.
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from)
                .into_iter()
                .collect()
        } else {
            self.roots.clone()
        };
        for root in roots {
            args.push("--workspace-root".into());
            args.push(root.display().to_string());
        }
        args
    }

    /// Starts `tandem serve` at `host:port` (its stdout and stderr on our stderr) and
    /// waits until something listens there. When it stops at once (e.g. another
    /// `tandem acp` started one there meanwhile), whoever listens is taken.
    pub async fn serve(&self, host: &str, port: u16) -> Result<(), EmbedError> {
        let url = format!("http://{host}:{port}");
        let args = self.serve_args(host, port);
        tracing::info!(
            "no server answers at {url}: serving an embedded one (tandem {})",
            args.join(" ")
        );
        let spawn_error = |e: std::io::Error| EmbedError::Spawn(e.to_string());
        let program = std::env::current_exe().map_err(spawn_error)?;
        let stderr = || {
            std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map(Stdio::from)
                .map_err(spawn_error)
        };
        let child = Command::new(program)
            .args(own_prefix())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(stderr()?)
            .stderr(stderr()?)
            .spawn()
            .map_err(spawn_error)?;
        // A server started before (that stopped) is let go.
        *self.served.borrow_mut() = Some(Served(child));
        let started = Instant::now();
        loop {
            if listening(host, port).await {
                return Ok(());
            }
            let stopped = match self.served.borrow_mut().as_mut() {
                Some(served) => !matches!(served.0.try_wait(), Ok(None)),
                None => true,
            };
            if stopped {
                return if listening(host, port).await {
                    Ok(())
                } else {
                    Err(EmbedError::Stopped(url))
                };
            }
            if started.elapsed() > START_TIMEOUT {
                self.stop();
                return Err(EmbedError::Timeout {
                    url,
                    waited: START_TIMEOUT,
                });
            }
            actix_rt::time::sleep(POLL).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_urls_are_served() {
        assert_eq!(
            loopback("http://127.0.0.1:7420").ok(),
            Some(("127.0.0.1".into(), 7420))
        );
        assert_eq!(
            loopback("http://localhost:9").ok(),
            Some(("127.0.0.1".into(), 9))
        );
        assert_eq!(loopback("http://[::1]:80").ok(), Some(("::1".into(), 80)));
        for url in [
            "https://127.0.0.1:7420",
            "http://example.com:7420",
            "http://127.0.0.1",
            "http://10.0.0.1:7420",
        ] {
            assert!(loopback(url).is_err(), "{url}");
        }
    }

    #[test]
    fn serve_is_told_the_address_data_and_roots() {
        let e = Embedding::new(Some("/d".into()), vec!["/r".into()]);
        assert_eq!(
            e.serve_args("127.0.0.1", 7421),
            [
                "serve",
                "--bind",
                "127.0.0.1",
                "--port",
                "7421",
                "--data-dir",
                "/d",
                "--workspace-root",
                "/r"
            ]
        );
    }
}
