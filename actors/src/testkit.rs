//! What the actor unit tests share: a scratch directory, a stand-in for a WebSocket
//! client's actor that records what the gateway delivers, and bounded waiting.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use crate::gateway::{ClientQueue, Deliver, Drained, Gateway};
use crate::ids::SessionId;

/// A directory removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new empty directory under the system temp dir.
    pub fn new(label: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "tandem-unit-{label}-{}-{}",
            std::process::id(),
            crate::clock::random_id("", 6)
        ));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        Scratch(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Stands in for a WebSocket client's actor: records every frame the gateway
/// delivers, in order, and the close it is asked for. A *draining* sink gives the
/// bytes back at once (a socket that keeps up) and reports `Drained` like the real
/// client does; a stalled one never does (a client that stopped reading).
pub struct Sink {
    client_id: u64,
    queue: Arc<ClientQueue>,
    gateway: Option<Addr<Gateway>>,
    frames: Vec<Value>,
    close: Option<u16>,
}

impl Sink {
    /// A sink for client `client_id`; `gateway` is `None` for a stalled client.
    pub fn new(client_id: u64, queue: Arc<ClientQueue>, gateway: Option<Addr<Gateway>>) -> Self {
        Sink {
            client_id,
            queue,
            gateway,
            frames: Vec::new(),
            close: None,
        }
    }
}

impl Actor for Sink {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // The real client's mailbox bound; the byte budget is what tests exercise.
        ctx.set_mailbox_capacity(4096);
    }
}

impl Handler<Deliver> for Sink {
    type Result = ();

    fn handle(&mut self, msg: Deliver, _: &mut Context<Self>) {
        for frame in &msg.frames {
            let v = serde_json::from_str(frame).unwrap_or_else(|e| panic!("bad frame {e}"));
            self.frames.push(v);
        }
        for piece in &msg.framed {
            self.frames.extend(unframe(&piece.bytes));
        }
        if let Some((code, _)) = msg.close {
            self.close = Some(code);
        }
        if let Some(gateway) = &self.gateway {
            if self.queue.delivered(msg.bytes) {
                gateway.do_send(Drained {
                    client_id: self.client_id,
                });
            }
        }
    }
}

/// The JSON payloads of whole, unmasked WebSocket text frames (as the gateway frames
/// live events).
pub fn unframe(mut bytes: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        assert_eq!(bytes[0], 0x81, "a final text frame");
        let (len, at) = match bytes[1] {
            126 => (usize::from(u16::from_be_bytes([bytes[2], bytes[3]])), 4),
            127 => {
                let mut n = [0; 8];
                n.copy_from_slice(&bytes[2..10]);
                (u64::from_be_bytes(n) as usize, 10)
            }
            n => (usize::from(n), 2),
        };
        let v = serde_json::from_slice(&bytes[at..at + len])
            .unwrap_or_else(|e| panic!("bad framed event {e}"));
        out.push(v);
        bytes = &bytes[at + len..];
    }
    out
}

/// What a sink has recorded so far: the frames, and the close code if any.
#[derive(Message)]
#[rtype(result = "(Vec<Value>, Option<u16>)")]
pub struct Recorded;

impl Handler<Recorded> for Sink {
    type Result = MessageResult<Recorded>;

    fn handle(&mut self, _: Recorded, _: &mut Context<Self>) -> Self::Result {
        MessageResult((self.frames.clone(), self.close))
    }
}

/// Polls `check` (every 10 ms, at most 20 s) until it gives a value.
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..2000 {
        if let Some(v) = check().await {
            return v;
        }
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The `seq`s of the event frames among `frames`, for one session.
pub fn seqs(frames: &[Value], session: &str) -> Vec<u64> {
    frames
        .iter()
        .filter(|f| f["sessionId"] == session)
        .filter_map(|f| f["seq"].as_u64())
        .collect()
}

/// A whole runtime (store, writer, gateway, session and pair actors) in a scratch
/// directory, driven through [`crate::Runtime`]'s methods as the HTTP layer does.
pub struct RuntimeFixture {
    /// The runtime.
    pub runtime: crate::Runtime,
    /// The caller (the admin, as with `--auth none`).
    pub who: crate::Principal,
    _dir: Scratch,
}

impl RuntimeFixture {
    /// Starts a runtime. Call inside an actix system (`#[actix_rt::test]`).
    pub fn start() -> RuntimeFixture {
        let dir = Scratch::new("runtime");
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let config = crate::RuntimeConfig::new(dir.path().join("data"), vec![root]);
        let started = crate::start(config).unwrap_or_else(|e| panic!("{e}"));
        RuntimeFixture {
            runtime: started.runtime,
            who: crate::runtime::AuthService::local_principal(),
            _dir: dir,
        }
    }

    /// A new scripted session's id.
    pub async fn session(&self) -> SessionId {
        let params = tandem_protocol::client::SessionCreateParams {
            vendor: None,
            model: None,
            effort: None,
            title: Some("unit".into()),
            cwd: None,
            permission_mode: None,
            visibility: None,
            node: None,
            workspace: None,
            base_ref: None,
            mcp_servers: None,
        };
        self.runtime
            .create_session(&self.who, params)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .id
    }

    /// A client (that keeps up) subscribed to `session` from its start.
    pub fn watch(&self, session: &SessionId) -> Addr<Sink> {
        let id = self.runtime.clients().next_id();
        let queue = self.runtime.clients().new_queue();
        let sink = Sink::new(id, queue.clone(), Some(self.runtime.clients().gateway())).start();
        self.runtime
            .clients()
            .connect(id, sink.clone().recipient(), queue, self.who.clone());
        self.runtime
            .clients()
            .subscribe(&self.who, id, session, 0)
            .unwrap_or_else(|e| panic!("{e}"));
        sink
    }

    /// Sends a message; panics when it is refused.
    pub async fn send(
        &self,
        session: &SessionId,
        text: &str,
        queue: bool,
    ) -> crate::session::SendOutcome {
        self.runtime
            .send(&self.who, session, text.into(), None, queue)
            .await
            .unwrap_or_else(|e| panic!("send {text:?}: {e}"))
    }

    /// The session's stored history.
    pub async fn history(&self, session: &SessionId) -> Vec<Value> {
        let (frames, _, _) = self
            .runtime
            .clients()
            .events(&self.who, session, 0, crate::runtime::MAX_EVENTS_PAGE)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        frames
            .iter()
            .map(|f| serde_json::from_str(f).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }
}

/// Waits until `sink` has seen `n` `turn_completed` events of `session`; returns
/// every frame it has.
pub async fn turns_done(sink: &Addr<Sink>, session: &str, n: usize) -> Vec<Value> {
    wait_for(&format!("{n} turns of {session}"), || async {
        let (frames, _) = sink.send(Recorded).await.unwrap_or_else(|e| panic!("{e}"));
        let done = frames
            .iter()
            .filter(|f| f["kind"] == "turn_completed" && f["sessionId"] == session)
            .count();
        (done >= n).then_some(frames)
    })
    .await
}

/// History events for the tests that read a session's turns (fork, rewind).
pub mod events {
    use tandem_protocol::{Event, EventBody, TurnStatus};

    use crate::ids::TurnId;

    /// Event `seq` of session `s`, in turn `turn`.
    pub fn ev(seq: u64, turn: Option<&str>, body: EventBody) -> Event {
        Event {
            session_id: "s".into(),
            seq,
            ts: 0,
            turn_id: turn.map(TurnId::from),
            body,
        }
    }

    /// A person's message.
    pub fn user(text: &str) -> EventBody {
        EventBody::UserMessage {
            text: text.into(),
            internal: false,
            delegated_by: None,
            content: Vec::new(),
        }
    }

    /// A turn's successful end.
    pub fn done() -> EventBody {
        EventBody::TurnCompleted {
            status: TurnStatus::Completed,
            error: None,
            usage: None,
            resets_at: None,
        }
    }
}
