//! A session's terminals: the owner's shell in a pseudo-terminal in the session's
//! working directory, its bytes over `/ws/terminals/{id}` (real WebSocket clients),
//! kept output replayed to a client that (re)connects, resize, several watchers; its
//! end with every process it started (checked in `/proc`) when it is closed, its shell
//! exits, its session is archived, nobody watches it, or the server stops; and the
//! refusals (someone else's session, the user's limit, bad sizes and frames).

use std::time::{Duration, Instant};

use actix_codec::Framed;
use awc::ws::{CloseCode, Codec, Frame, Message};
use awc::BoxedSocket;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tandem_tests::procs::is_alive;
use tandem_tests::{Api, Server, ServerOptions};

/// A client of one terminal's socket: what it read so far, as text.
struct Term {
    framed: Framed<BoxedSocket, Codec>,
    /// Every output byte read, lossily as text.
    seen: String,
    /// Control frames (JSON) read.
    controls: Vec<Value>,
    /// The close frame's code, once read.
    closed: Option<CloseCode>,
}

impl Term {
    async fn connect(api: &Api, terminal_id: &str) -> Term {
        Term::try_connect(api, terminal_id, &[]).await.unwrap()
    }

    async fn try_connect(
        api: &Api,
        terminal_id: &str,
        headers: &[(&str, &str)],
    ) -> Result<Term, String> {
        let base = api.base.replacen("http://", "ws://", 1);
        let url = match &api.token {
            Some(t) => format!("{base}/ws/terminals/{terminal_id}?token={t}"),
            None => format!("{base}/ws/terminals/{terminal_id}"),
        };
        let mut req = awc::Client::builder()
            .max_http_version(awc::http::Version::HTTP_11)
            .finish()
            .ws(&url)
            .max_frame_size(4 << 20);
        for (k, v) in headers {
            req = req.set_header(*k, *v);
        }
        let (_, framed) = req.connect().await.map_err(|e| format!("{e:?}"))?;
        Ok(Term {
            framed,
            seen: String::new(),
            controls: Vec::new(),
            closed: None,
        })
    }

    async fn type_text(&mut self, text: &str) {
        let bytes = text.as_bytes().to_vec().into();
        self.framed.send(Message::Binary(bytes)).await.unwrap();
    }

    async fn control(&mut self, value: Value) {
        self.framed
            .send(Message::Text(value.to_string().into()))
            .await
            .unwrap();
    }

    /// Reads one frame, if one comes before `deadline`.
    async fn read(&mut self, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, self.framed.next()).await {
            Ok(Some(Ok(Frame::Binary(b)))) => self.seen.push_str(&String::from_utf8_lossy(&b)),
            Ok(Some(Ok(Frame::Text(t)))) => self.controls.push(serde_json::from_slice(&t).unwrap()),
            Ok(Some(Ok(Frame::Ping(p)))) => {
                let _ = self.framed.send(Message::Pong(p)).await;
            }
            Ok(Some(Ok(Frame::Close(reason)))) => {
                self.closed = Some(reason.map_or(CloseCode::Normal, |r| r.code));
            }
            Ok(Some(Ok(_))) | Err(_) => {}
            Ok(Some(Err(_))) | Ok(None) => self.closed = Some(CloseCode::Abnormal),
        }
    }

    /// Reads until `done` holds of what was seen, or fails after 20 s or a close.
    async fn until(&mut self, what: &str, done: impl Fn(&Term) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(
                Instant::now() < deadline && self.closed.is_none(),
                "waiting for {what}; closed: {:?}; seen:\n{}\ncontrols: {:?}",
                self.closed,
                self.seen,
                self.controls
            );
            self.read(deadline).await;
        }
    }

    /// Reads until the output holds `text`.
    async fn wait_for(&mut self, text: &str) {
        self.until(text, |t| t.seen.contains(text)).await;
    }

    /// Reads until the socket closes; answers the close code.
    async fn wait_closed(&mut self) -> CloseCode {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.closed.is_none() {
            assert!(
                Instant::now() < deadline,
                "the socket did not close; seen:\n{}",
                self.seen
            );
            self.read(deadline).await;
        }
        self.closed.unwrap()
    }

    /// The pid the shell printed after `MARK=` (from `echo MARK=$!`).
    fn pid_after(&self, mark: &str) -> u32 {
        let at = self
            .seen
            .match_indices(&format!("{mark}="))
            .map(|(i, _)| i + mark.len() + 1)
            .find(|i| self.seen[*i..].starts_with(|c: char| c.is_ascii_digit()))
            .unwrap_or_else(|| panic!("no {mark}=PID in:\n{}", self.seen));
        let digits: String = self.seen[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    }
}

/// A session of the scripted agent, owned by `api`'s user.
async fn session(api: &Api) -> String {
    session_seen_by(api, "private").await
}

/// [`session`] with a visibility (`private`, `shared`).
async fn session_seen_by(api: &Api, visibility: &str) -> String {
    let (status, body) = api
        .post(
            "/api/v1/sessions",
            &json!({"vendor": "scripted", "title": "terminals", "visibility": visibility}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_string()
}

/// Opens a terminal of `cols` × `rows` in `session_id`.
async fn open(api: &Api, session_id: &str, cols: u16, rows: u16) -> Value {
    let (status, body) = api
        .post(
            &format!("/api/v1/sessions/{session_id}/terminals"),
            &json!({"cols": cols, "rows": rows}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body
}

async fn list(api: &Api, session_id: &str) -> Vec<Value> {
    let (status, body) = api
        .get(&format!("/api/v1/sessions/{session_id}/terminals"))
        .await;
    assert_eq!(status, 200, "{body}");
    body["terminals"].as_array().unwrap().clone()
}

/// Waits until none of `pids` runs.
async fn all_gone(pids: &[u32]) {
    for _ in 0..400 {
        if !pids.iter().any(|p| is_alive(*p)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let alive: Vec<u32> = pids.iter().copied().filter(|p| is_alive(*p)).collect();
    panic!("still running: {alive:?}");
}

/// Types `command` (which ends by echoing `MARK=PID`) and answers the pid, once printed.
async fn pid_of(term: &mut Term, command: &str, mark: &str) -> u32 {
    term.type_text(&format!("{command}\r")).await;
    let tag = format!("{mark}=");
    term.until(&format!("{mark}'s pid"), |t| {
        t.seen
            .match_indices(&tag)
            .any(|(i, _)| t.seen[i + tag.len()..].starts_with(|c: char| c.is_ascii_digit()))
    })
    .await;
    term.pid_after(mark)
}

/// Starts a background job, one that ignores hangups, and answers their pids and the
/// shell's.
async fn busy(term: &mut Term) -> Vec<u32> {
    let pids = vec![
        pid_of(term, "sleep 987 & echo JOB1=$!", "JOB1").await,
        pid_of(term, "(trap '' HUP; sleep 988) & echo JOB2=$!", "JOB2").await,
        pid_of(term, "echo SHELL=$$", "SHELL").await,
    ];
    for p in &pids {
        assert!(is_alive(*p), "{p} is not running");
    }
    pids
}

#[actix_rt::test]
async fn a_terminal_runs_the_owners_shell_where_the_session_works() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        args: vec![],
    });
    let id = session(&server).await;
    let (_, info) = server.get(&format!("/api/v1/sessions/{id}")).await;
    let cwd = info["cwd"].as_str().unwrap().to_string();
    let t = open(&server, &id, 100, 30).await;
    let tid = t["terminalId"].as_str().unwrap().to_string();
    assert!(tid.starts_with("term_"), "{t}");
    assert_eq!(
        (t["cwd"].as_str(), t["cols"].as_u64(), t["rows"].as_u64()),
        (Some(cwd.as_str()), Some(100), Some(30))
    );
    assert_eq!(t["clients"], 0);

    let mut term = Term::connect(&server, &tid).await;
    term.type_text("echo $((6*7)); pwd; stty size\r").await;
    term.wait_for("42").await;
    term.wait_for(&cwd).await;
    term.wait_for("30 100").await;
    // The server's environment minus tandem's own variables (the test sets TANDEM_LOG).
    term.type_text("echo TANDEM_VARS=$(env | grep -c '^TANDEM_'); echo TERM_IS=$TERM\r")
        .await;
    term.wait_for("TANDEM_VARS=0").await;
    term.wait_for("TERM_IS=xterm-256color").await;
    assert_eq!(list(&server, &id).await[0]["clients"], 1);

    // A resize reaches the shell's terminal.
    term.control(json!({"type": "resize", "cols": 132, "rows": 43}))
        .await;
    term.type_text("stty size\r").await;
    term.wait_for("43 132").await;
    let listed = list(&server, &id).await;
    assert_eq!(
        (listed[0]["cols"].as_u64(), listed[0]["rows"].as_u64()),
        (Some(132), Some(43))
    );

    // A second client gets what was kept, then both see what comes.
    let mut second = Term::connect(&server, &tid).await;
    second.wait_for("42").await;
    second.wait_for("43 132").await;
    term.type_text("echo both-$((2+3))\r").await;
    term.wait_for("both-5").await;
    second.wait_for("both-5").await;
    assert_eq!(list(&server, &id).await[0]["clients"], 2);

    // The first leaves and comes back: the scrollback is there.
    drop(term);
    let mut again = Term::connect(&server, &tid).await;
    again.wait_for("42").await;
    again.wait_for("both-5").await;

    // The shell exits: clients hear how, the socket closes, the list is empty.
    again.type_text("exit 3\r").await;
    assert_eq!(again.wait_closed().await, CloseCode::Normal);
    assert_eq!(
        again.controls.last(),
        Some(&json!({"type": "exit", "exitCode": 3, "reason": "the shell exited"}))
    );
    second.wait_closed().await;
    assert_eq!(list(&server, &id).await, Vec::<Value>::new());
    let gone = Term::try_connect(&server, &tid, &[]).await.err().unwrap();
    assert!(gone.contains("404"), "{gone}");
}

#[actix_rt::test]
async fn closing_a_terminal_or_archiving_its_session_ends_all_it_started() {
    let server = Server::start();
    let id = session(&server).await;
    let tid = open(&server, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut term = Term::connect(&server, &tid).await;
    let pids = busy(&mut term).await;
    let (status, body) = server
        .delete(&format!("/api/v1/sessions/{id}/terminals/{tid}"))
        .await;
    assert_eq!(
        (status, &body),
        (200, &json!({"sessionId": id, "terminalId": tid}))
    );
    all_gone(&pids).await;
    term.wait_closed().await;
    assert_eq!(
        term.controls.last(),
        Some(&json!({"type": "exit", "reason": "closed by a request"}))
    );
    assert_eq!(list(&server, &id).await, Vec::<Value>::new());
    let (status, body) = server
        .delete(&format!("/api/v1/sessions/{id}/terminals/{tid}"))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );

    // Two terminals of a session that is archived: both end, with their jobs.
    let a = open(&server, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();
    let b = open(&server, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ta = Term::connect(&server, &a).await;
    let mut tb = Term::connect(&server, &b).await;
    let mut pids = busy(&mut ta).await;
    pids.extend(busy(&mut tb).await);
    let (status, body) = server.delete(&format!("/api/v1/sessions/{id}")).await;
    assert_eq!(status, 200, "{body}");
    all_gone(&pids).await;
    ta.wait_closed().await;
    assert_eq!(
        ta.controls.last(),
        Some(&json!({"type": "exit", "reason": "the session was archived"}))
    );
}

#[actix_rt::test]
async fn a_stopping_server_and_an_unwatched_terminal_leave_no_process() {
    // SIGTERM is what ends the terminals here: the server is a process of its own.
    let server = Server::start_process(ServerOptions {
        token_auth: false,
        args: vec!["--terminal-idle-secs".into(), "2".into()],
    });
    let id = session(&server).await;
    // Watched: it outlives the idle time.
    let watched = open(&server, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut term = Term::connect(&server, &watched).await;
    let pids = busy(&mut term).await;
    // Never watched: it ends after about two seconds, its shell with it.
    let quiet = open(&server, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ended = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let ids: Vec<Value> = list(&server, &id)
            .await
            .into_iter()
            .map(|t| t["terminalId"].clone())
            .collect();
        if ids == vec![json!(watched)] {
            ended = true;
            break;
        }
        assert!(
            ids.contains(&json!(watched)),
            "the watched terminal ended: {ids:?}"
        );
    }
    assert!(ended, "the unwatched terminal {quiet} is still open");
    term.type_text("echo still-$((1+1))\r").await;
    term.wait_for("still-2").await;
    // The server stops cleanly, a client still watching: the client hears why, and no
    // process of the terminal is left.
    let stopping = std::thread::spawn(move || server.terminate());
    term.wait_closed().await;
    assert_eq!(
        term.controls.last(),
        Some(&json!({"type": "exit", "reason": "the server stopped"}))
    );
    stopping.join().unwrap();
    all_gone(&pids).await;
}

#[actix_rt::test]
async fn terminals_are_their_owners_and_bad_input_is_refused() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        args: vec!["--max-terminals".into(), "2".into()],
    });
    let id = session(&server).await;
    let bob = server.add_user("bob");
    let tid = open(&server, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();

    // Someone else's session, and its terminal: 404 everywhere, even when shared.
    for (status, body) in [
        bob.post(
            &format!("/api/v1/sessions/{id}/terminals"),
            &json!({"cols": 80, "rows": 24}),
        )
        .await,
        bob.get(&format!("/api/v1/sessions/{id}/terminals")).await,
        bob.delete(&format!("/api/v1/sessions/{id}/terminals/{tid}"))
            .await,
    ] {
        assert_eq!(status, 404, "{body}");
    }
    let refused = Term::try_connect(&bob, &tid, &[]).await.err().unwrap();
    assert!(refused.contains("404"), "{refused}");
    let shared = session_seen_by(&server, "shared").await;
    let (status, body) = bob.get(&format!("/api/v1/sessions/{shared}")).await;
    assert_eq!(status, 200, "bob sees the shared session: {body}");
    let (status, body) = bob
        .get(&format!("/api/v1/sessions/{shared}/terminals"))
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
    let (status, body) = bob
        .post(
            &format!("/api/v1/sessions/{shared}/terminals"),
            &json!({"cols": 80, "rows": 24}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
    // Without a token, or from another web origin.
    let anonymous = Api {
        base: server.base.clone(),
        token: None,
    };
    let refused = Term::try_connect(&anonymous, &tid, &[])
        .await
        .err()
        .unwrap();
    assert!(refused.contains("401"), "{refused}");
    let refused = Term::try_connect(&server, &tid, &[("Origin", "http://evil.example")])
        .await
        .err()
        .unwrap();
    assert!(refused.contains("403"), "{refused}");

    // Sizes out of range, unknown fields, an unknown session or terminal.
    for body in [
        json!({"cols": 0, "rows": 24}),
        json!({"cols": 80, "rows": 501}),
        json!({"cols": 80}),
        json!({"cols": 80, "rows": 24, "shell": "/bin/sh"}),
    ] {
        let (status, answer) = server
            .post(&format!("/api/v1/sessions/{id}/terminals"), &body)
            .await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (400, Some("INVALID_ARGUMENT")),
            "{body}: {answer}"
        );
    }
    let (status, _) = server
        .post(
            "/api/v1/sessions/ses_nope/terminals",
            &json!({"cols": 80, "rows": 24}),
        )
        .await;
    assert_eq!(status, 404);
    let refused = Term::try_connect(&server, "term_nope", &[])
        .await
        .err()
        .unwrap();
    assert!(refused.contains("404"), "{refused}");

    // The user's limit: two terminals, the third is 429 until one ends.
    open(&server, &id, 80, 24).await;
    let (status, body) = server
        .post(
            &format!("/api/v1/sessions/{id}/terminals"),
            &json!({"cols": 80, "rows": 24}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("LIMIT_EXCEEDED")),
        "{body}"
    );
    let (status, _) = server
        .delete(&format!("/api/v1/sessions/{id}/terminals/{tid}"))
        .await;
    assert_eq!(status, 200);
    let tid = open(&server, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();

    // Bad frames on the socket: each refused with a reason; the terminal goes on.
    let mut term = Term::connect(&server, &tid).await;
    term.framed
        .send(Message::Text("not json".into()))
        .await
        .unwrap();
    term.control(json!({"type": "resize", "cols": 0, "rows": 10}))
        .await;
    term.control(json!({"type": "exit", "reason": "me"})).await;
    term.until("three refusals", |t| t.controls.len() >= 3)
        .await;
    for c in &term.controls {
        assert_eq!(c["type"], "error", "{c}");
    }
    assert!(
        term.controls[1]["message"]
            .as_str()
            .unwrap()
            .contains("1 to 1000 columns"),
        "{:?}",
        term.controls
    );
    term.type_text("echo alive-$((3*3))\r").await;
    term.wait_for("alive-9").await;
    // A frame over 64 KiB closes the socket (1009); the terminal stays for others.
    let huge = vec![b'x'; (64 << 10) + 1].into();
    term.framed.send(Message::Binary(huge)).await.unwrap();
    assert_eq!(term.wait_closed().await, CloseCode::Size);
    let mut back = Term::connect(&server, &tid).await;
    back.type_text("echo back-$((4*4))\r").await;
    back.wait_for("back-16").await;
}

#[actix_rt::test]
async fn a_revoked_users_terminal_socket_closes() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        args: vec!["--ws-ping-secs".into(), "1".into()],
    });
    let carol = server.add_user("carol");
    let id = session(&carol).await;
    let tid = open(&carol, &id, 80, 24).await["terminalId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut term = Term::connect(&carol, &tid).await;
    term.type_text("echo before-$((5*5))\r").await;
    term.wait_for("before-25").await;
    server.cli(&["user", "revoke", "carol", "--data-dir"]);
    assert_eq!(term.wait_closed().await, CloseCode::Policy);
    let refused = Term::try_connect(&carol, &tid, &[]).await.err().unwrap();
    assert!(refused.contains("401"), "{refused}");
}
