//! The terminal client (`tandem ls|new|send|tail|stop|approve|deny`) against a real
//! server process: exit codes of `send --wait`, approvals, errors, and `tail`
//! following a session across a server restart without repeating or losing a line.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use tandem_tests::server::server_binary;
use tandem_tests::{Server, ServerOptions, TempDir};

/// The output of one client command.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `tandem ARGS` against `server` (its URL in TANDEM_URL, the admin token found
/// through `--data-dir`).
fn tandem(server: &Server, args: &[&str]) -> Ran {
    let out = client(server, args)
        .output()
        .unwrap_or_else(|e| panic!("tandem {args:?}: {e}"));
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn client(server: &Server, args: &[&str]) -> Command {
    let mut cmd = Command::new(server_binary());
    cmd.args(args)
        .arg("--data-dir")
        .arg(server.dir.path().join("data"))
        .env("TANDEM_URL", &server.base)
        .env_remove("TANDEM_TOKEN")
        .stdin(Stdio::null());
    cmd
}

fn token_server(dir: Arc<TempDir>, port: Option<u16>) -> Server {
    let mut args = Vec::new();
    if let Some(port) = port {
        args.extend(["--port".to_string(), port.to_string()]);
    }
    Server::start_process_in(
        dir,
        ServerOptions {
            token_auth: true,
            args,
        },
    )
}

#[actix_rt::test]
async fn ls_new_send_stop_approve_and_deny() {
    let server = token_server(Arc::new(TempDir::new("cli")), None);
    let new = tandem(&server, &["new", "--title", "from the terminal"]);
    assert_eq!(new.code, 0, "{}", new.stderr);
    let id = new.stdout.trim().to_string();
    assert!(id.starts_with("ses_"), "{}", new.stdout);

    let sent = tandem(&server, &["send", &id, "hello terminal", "--wait"]);
    assert_eq!(sent.code, 0, "{}", sent.stderr);
    assert_eq!(sent.stdout, "hello terminal\n");

    let failed = tandem(&server, &["send", &id, "/fail broken on purpose", "--wait"]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("the turn failed: broken on purpose"),
        "{}",
        failed.stderr
    );

    // A turn stopped from another terminal: `send --wait` exits 130.
    let mut waiting = client(&server, &["send", &id, "/hold never", "--wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    server.wait_held("never").await;
    let stop = tandem(&server, &["stop", &id]);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    let status = waiting.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(130));

    // Approvals: the only pending request, then a named one, then none.
    let ask = client(
        &server,
        &["send", &id, "/ask shell {\"command\": \"ls\"}", "--wait"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap_or_else(|e| panic!("{e}"));
    let approve = retry(|| tandem(&server, &["approve", &id]));
    assert!(
        approve.stdout.starts_with("allowed shell (perm_"),
        "{}",
        approve.stdout
    );
    let out = ask.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "allowed shell\n");
    let none = tandem(&server, &["deny", &id]);
    assert_eq!(none.code, 1);
    assert!(
        none.stderr.contains("no pending permission request"),
        "{}",
        none.stderr
    );

    let ls = tandem(&server, &["ls"]);
    assert_eq!(ls.code, 0, "{}", ls.stderr);
    let row = ls
        .stdout
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap()
        .to_string();
    let cols: Vec<&str> = row.split('\t').collect();
    assert_eq!(cols.get(2), Some(&"scripted"), "{row}");
    assert_eq!(cols.get(3), Some(&"-"), "{row}");
    assert_eq!(cols.last(), Some(&"from the terminal"), "{row}");

    // Errors are named, with a non-zero exit.
    let missing = tandem(&server, &["send", "ses_nope", "hi"]);
    assert_eq!(missing.code, 1);
    assert!(
        missing.stderr.contains("SESSION_NOT_FOUND"),
        "{}",
        missing.stderr
    );
    let bad_token = client(&server, &["ls"])
        .env("TANDEM_TOKEN", "tdm_wrong")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad_token.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad_token.stderr).contains("UNAUTHORIZED"));
    let nowhere = Command::new(server_binary())
        .args(["ls", "--url", "http://127.0.0.1:1"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&nowhere.stderr).contains("cannot reach the server"));
}

/// `f` until it exits 0 (at most 10 s).
fn retry(f: impl Fn() -> Ran) -> Ran {
    for _ in 0..200 {
        let ran = f();
        if ran.code == 0 {
            return ran;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("never succeeded");
}

/// Lines a child prints, read on a thread.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// Reads `rx` until a line contains `needle` (at most 30 s); returns every line read.
fn until(rx: &mpsc::Receiver<String>, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => {
                let done = line.contains(needle);
                seen.push(line);
                if done {
                    return seen;
                }
            }
            Err(e) => panic!("no line with {needle:?} ({e}); got {seen:?}"),
        }
    }
}

/// Stops the tail process on drop, even when the test fails.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[actix_rt::test]
async fn tail_resumes_across_a_server_restart_without_repeats_or_gaps() {
    let dir = Arc::new(TempDir::new("cli-tail"));
    let server = token_server(dir.clone(), None);
    let port: u16 = server
        .base
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {}", server.base));
    let id = tandem(&server, &["new"]).stdout.trim().to_string();
    assert_eq!(tandem(&server, &["send", &id, "before", "--wait"]).code, 0);

    let mut child = client(&server, &["tail", &id, "--from", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let rx = lines_of(&mut child);
    let mut tail = Killed(child);
    let mut lines = until(&rx, "agent: before");

    // Down while the tail is connected; a turn happens only after the restart, on the
    // same port and data.
    let dir = server.kill();
    let server = token_server(dir, Some(port));
    assert_eq!(
        tandem(&server, &["send", &id, "after one", "--wait"]).code,
        0
    );
    assert_eq!(
        tandem(&server, &["send", &id, "after two", "--wait"]).code,
        0
    );
    lines.extend(until(&rx, "agent: after two"));
    lines.extend(until(&rx, "turn completed"));

    // Every event exactly once, in order: seq 1, 2, 3, ... with no line twice
    // (`text_delta`s have no line of their own, so count from the events themselves).
    let seqs: Vec<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix('[')?.split_once(']')?.0.parse().ok())
        .collect();
    let mut sorted = seqs.clone();
    sorted.dedup();
    assert_eq!(seqs, sorted, "a line repeated or out of order: {lines:?}");
    let stored = server.all_events(&id).await;
    let expected: Vec<u64> = stored
        .iter()
        .filter(|e| e["kind"] != "text_delta")
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    assert_eq!(seqs, expected, "{lines:?}");
    for text in [
        "you: before",
        "agent: before",
        "you: after one",
        "agent: after two",
    ] {
        assert_eq!(
            lines.iter().filter(|l| l.ends_with(text)).count(),
            1,
            "{text}: {lines:?}"
        );
    }
    // Ctrl-C ends it with 130.
    let pid = tail.0.id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let status = tail.0.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(130));
}
