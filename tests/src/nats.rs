//! A real `nats-server` with JetStream for the cluster tests: loopback, a free port,
//! its store in a temporary directory; killed when dropped, so a failing test leaves
//! no process behind. Also a reader of what JetStream holds for a session.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use crate::TempDir;

/// A running `nats-server -js`.
pub struct NatsServer {
    child: Child,
    port: u16,
    /// JetStream's store; kept across [`NatsServer::restart`].
    pub dir: Arc<TempDir>,
}

impl NatsServer {
    /// Starts one on a free loopback port with JetStream in a fresh directory.
    pub fn start() -> NatsServer {
        let port = match TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
            Ok(addr) => addr.port(),
            Err(e) => panic!("no free port: {e}"),
        };
        Self::start_on(port, Arc::new(TempDir::new("nats")))
    }

    fn start_on(port: u16, dir: Arc<TempDir>) -> NatsServer {
        let child = Command::new(crate::vendor_clis::nats_server_path())
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start nats-server (apt install nats-server): {e}"));
        let server = NatsServer { child, port, dir };
        server.wait_ready();
        server
    }

    /// Waits until the port takes connections (at most 10 s).
    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `nats://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// A `tandem serve` node named `name` joined through this server.
    pub fn node(&self, name: &str) -> crate::Server {
        self.node_with(name, &[])
    }

    /// [`NatsServer::node`] with more `tandem serve` flags.
    pub fn node_with(&self, name: &str, extra: &[String]) -> crate::Server {
        crate::Server::start_process(self.node_options(name, extra))
    }

    /// A node that was killed or stopped, started again on its data directory.
    pub fn restart_node(&self, dir: Arc<TempDir>, name: &str) -> crate::Server {
        crate::Server::start_process_in(dir, self.node_options(name, &[]))
    }

    fn node_options(&self, name: &str, extra: &[String]) -> crate::ServerOptions {
        let mut args = vec!["--nats".into(), self.url(), "--node".into(), name.into()];
        args.extend_from_slice(extra);
        crate::ServerOptions {
            args,
            ..crate::ServerOptions::default()
        }
    }

    /// Stops the server's process (SIGSTOP): connections stay open, nothing is
    /// answered until [`NatsServer::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("kill {signal}: {e}"));
        assert!(status.success(), "kill {signal} failed");
    }

    /// Kills the server (SIGKILL) and starts it again on the same port and store.
    pub fn restart(mut self) -> NatsServer {
        self.kill();
        self.start_again()
    }

    /// Kills the server (SIGKILL); [`NatsServer::start_again`] brings it back.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts a killed server again on the same port and store.
    pub fn start_again(self) -> NatsServer {
        let (port, dir) = (self.port, self.dir.clone());
        drop(self);
        Self::start_on(port, dir)
    }

    /// Every message JetStream holds for a session's events subject, in stream order:
    /// the seqs it carries (a run `first..=last`, see `actors/src/cluster/batch.rs`) and
    /// its message id. Reads until nothing more comes for 500 ms.
    pub async fn published(&self, session_id: &str) -> Vec<Published> {
        let (_, stream) = self.events_stream().await;
        let mut messages = Self::read_subject(&stream, session_id).await;
        let mut out = Vec::new();
        while let Ok(Some(msg)) =
            tokio::time::timeout(Duration::from_millis(500), messages.next()).await
        {
            let msg = msg.unwrap_or_else(|e| panic!("message: {e}"));
            out.push(Published::of(&msg));
        }
        out
    }

    /// Makes holes and a second copy in what JetStream holds for a session, as a node
    /// that crashed right after a broken NATS connection can leave them: each message
    /// holding a seq of `delete` is deleted and its other seqs are stored again, one
    /// message each (as the previous release published them), so exactly the seqs of
    /// `delete` are missing; then seq `copy` is stored once more under another message
    /// id (as a resend after JetStream's duplicate window would be). First the
    /// stream's duplicate window is cut to 1 s and outlived, so the message ids of the
    /// deleted ones are forgotten, as they never were seen when a message is really
    /// lost.
    pub async fn damage(&self, session_id: &str, delete: &[u64], copy: u64) {
        let (js, mut stream) = self.events_stream().await;
        let mut config = stream
            .info()
            .await
            .unwrap_or_else(|e| panic!("stream info: {e}"))
            .config
            .clone();
        config.duplicate_window = Duration::from_secs(1);
        js.update_stream(&config)
            .await
            .unwrap_or_else(|e| panic!("shorter duplicate window: {e}"));
        // A duration on purpose: JetStream forgets message ids only by age, and says
        // nothing when it has.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let subject = format!("tandem.sessions.{session_id}.events");
        let mut messages = Self::read_subject(&stream, session_id).await;
        let mut frames: std::collections::BTreeMap<u64, bytes::Bytes> = Default::default();
        let mut split = Vec::new();
        while let Ok(Some(msg)) =
            tokio::time::timeout(Duration::from_millis(500), messages.next()).await
        {
            let msg = msg.unwrap_or_else(|e| panic!("message: {e}"));
            let published = Published::of(&msg);
            let seqs = published.first..=published.last;
            let parts: Vec<bytes::Bytes> = if published.first == published.last {
                vec![msg.payload.clone()]
            } else {
                msg.payload
                    .split(|b| *b == b'\n')
                    .map(|part| msg.payload.slice_ref(part))
                    .collect()
            };
            assert_eq!(parts.len() as u64, published.last - published.first + 1);
            frames.extend(seqs.clone().zip(parts));
            if delete.iter().any(|seq| seqs.contains(seq)) {
                let at = msg
                    .info()
                    .unwrap_or_else(|e| panic!("message info: {e}"))
                    .stream_sequence;
                assert!(stream
                    .delete_message(at)
                    .await
                    .unwrap_or_else(|e| panic!("delete: {e}")));
                split.extend(seqs.filter(|seq| !delete.contains(seq)));
            }
        }
        for seq in delete {
            assert!(
                frames.contains_key(seq),
                "seq {seq} was not there to delete"
            );
        }
        let copied = frames
            .get(&copy)
            .unwrap_or_else(|| panic!("seq {copy} was not there to copy"))
            .clone();
        let again = split
            .into_iter()
            .map(|seq| (seq, format!("{session_id}:{seq}"), frames[&seq].clone()))
            .chain([(copy, format!("{session_id}:{copy}:again"), copied)]);
        for (seq, id, frame) in again {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Tandem-Seq", seq.to_string().as_str());
            headers.insert("Nats-Msg-Id", id.as_str());
            js.publish_with_headers(subject.clone(), headers, frame)
                .await
                .unwrap_or_else(|e| panic!("publish seq {seq} again: {e}"))
                .await
                .unwrap_or_else(|e| panic!("the ack of seq {seq}: {e}"));
        }
    }

    /// A JetStream context on this server and its events stream.
    async fn events_stream(
        &self,
    ) -> (
        async_nats::jetstream::Context,
        async_nats::jetstream::stream::Stream,
    ) {
        let client = async_nats::connect(self.url())
            .await
            .unwrap_or_else(|e| panic!("connect to NATS: {e}"));
        let js = async_nats::jetstream::new(client);
        let stream = js
            .get_stream("TANDEM_EVENTS")
            .await
            .unwrap_or_else(|e| panic!("stream TANDEM_EVENTS: {e}"));
        (js, stream)
    }

    /// Every message of a session's events subject, from the first, in stream order.
    async fn read_subject(
        stream: &async_nats::jetstream::stream::Stream,
        session_id: &str,
    ) -> async_nats::jetstream::consumer::pull::Ordered {
        use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
        stream
            .create_consumer(OrderedConfig {
                filter_subject: format!("tandem.sessions.{session_id}.events"),
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("consumer: {e}"))
            .messages()
            .await
            .unwrap_or_else(|e| panic!("messages: {e}"))
    }

    /// The value of `key` in KV bucket `bucket`, if any.
    pub async fn kv(&self, bucket: &str, key: &str) -> Option<serde_json::Value> {
        let client = async_nats::connect(self.url())
            .await
            .unwrap_or_else(|e| panic!("connect to NATS: {e}"));
        let js = async_nats::jetstream::new(client);
        let store = js
            .get_key_value(bucket)
            .await
            .unwrap_or_else(|e| panic!("bucket {bucket}: {e}"));
        let value = store
            .get(key)
            .await
            .unwrap_or_else(|e| panic!("get: {e}"))?;
        serde_json::from_slice(&value).ok()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One message of a session's events subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The first seq it carries.
    pub first: u64,
    /// The last seq it carries (its `Tandem-Seq` header).
    pub last: u64,
    /// Its `Nats-Msg-Id`.
    pub id: String,
}

impl Published {
    fn of(msg: &async_nats::jetstream::Message) -> Published {
        let header = |name: &str| {
            msg.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str().to_string())
        };
        let last = header("Tandem-Seq")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("a message without a numeric Tandem-Seq"));
        let first = header("Tandem-First").map_or(last, |v| {
            v.parse()
                .unwrap_or_else(|e| panic!("a numeric Tandem-First: {e}"))
        });
        Published {
            first,
            last,
            id: header("Nats-Msg-Id").unwrap_or_default(),
        }
    }
}
