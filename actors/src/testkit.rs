//! What the actor unit tests share: a scratch directory, a stand-in for a WebSocket
//! client's actor that records what the gateway delivers, and bounded waiting.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use crate::gateway::{ClientQueue, Deliver, Drained, Gateway};

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
