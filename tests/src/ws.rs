//! A WebSocket client for tests: JSON in, JSON out, with timeouts.

use std::collections::VecDeque;
use std::time::Duration;

use actix_codec::Framed;
use awc::ws::{Codec, Frame, Message};
use awc::BoxedSocket;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};

/// How long a test waits for one frame before failing.
pub const RECV_TIMEOUT: Duration = Duration::from_secs(20);

/// Opens a WebSocket to `url` (HTTP/1.1; frames up to 64 MiB, since replayed
/// `assistant_message`s of long `/stream`s are large).
pub async fn connect_framed(url: &str) -> Result<Framed<BoxedSocket, Codec>, String> {
    let (_, framed) = awc::Client::builder()
        .max_http_version(awc::http::Version::HTTP_11)
        .finish()
        .ws(url)
        .max_frame_size(64 << 20)
        .connect()
        .await
        .map_err(|e| format!("connect {url}: {e}"))?;
    Ok(framed)
}

/// A connected WebSocket client.
pub struct WsClient {
    framed: Framed<BoxedSocket, Codec>,
    /// Frames received while waiting for something else, oldest first.
    backlog: VecDeque<Value>,
    next_request: u64,
    /// Pong frames received (answers to our pings).
    pub pongs: u64,
}

impl WsClient {
    /// Connects or panics.
    pub async fn connect(url: &str) -> WsClient {
        match Self::try_connect(url).await {
            Ok(c) => c,
            Err(e) => panic!("cannot connect to {url}: {e}"),
        }
    }

    /// Connects, or returns the HTTP status / error text.
    pub async fn try_connect(url: &str) -> Result<WsClient, String> {
        Ok(Self::from_framed(connect_framed(url).await?))
    }

    /// A client over a socket connected elsewhere (e.g. through TLS).
    pub fn from_framed(framed: Framed<BoxedSocket, Codec>) -> WsClient {
        WsClient {
            framed,
            backlog: VecDeque::new(),
            next_request: 1,
            pongs: 0,
        }
    }

    /// Sends a JSON value as a text frame.
    pub async fn send(&mut self, value: &Value) {
        self.send_text(value.to_string()).await;
    }

    /// Sends raw text.
    pub async fn send_text(&mut self, text: String) {
        if let Err(e) = self.try_send_text(text).await {
            panic!("ws send: {e}");
        }
    }

    /// Sends raw text; an error when the server has closed the connection already.
    pub async fn try_send_text(&mut self, text: String) -> Result<(), String> {
        self.framed
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| e.to_string())
    }

    /// Sends a raw WebSocket message.
    pub async fn send_message(&mut self, msg: Message) {
        if let Err(e) = self.framed.send(msg).await {
            panic!("ws send: {e}");
        }
    }

    /// The next frame from the socket itself (not the backlog), or `None` when the
    /// socket closed; panics after `timeout`.
    pub async fn next_frame(&mut self, timeout: Duration) -> Option<Value> {
        // One deadline for the whole wait: the server's pings must not extend it.
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let frame = match tokio::time::timeout_at(deadline, self.framed.next()).await {
                Ok(f) => f,
                Err(_) => panic!("no frame within {timeout:?}"),
            };
            match frame {
                None => return None,
                Some(Err(e)) => panic!("ws receive: {e}"),
                Some(Ok(Frame::Text(bytes))) => match serde_json::from_slice(&bytes) {
                    Ok(v) => return Some(v),
                    Err(e) => panic!("server sent non-JSON text: {e}"),
                },
                Some(Ok(Frame::Ping(p))) => {
                    let _ = self.framed.send(Message::Pong(p)).await;
                }
                Some(Ok(Frame::Pong(_))) => self.pongs += 1,
                Some(Ok(Frame::Close(_))) => return None,
                Some(Ok(_)) => {}
            }
        }
    }

    /// Puts frames back to be received again, in order (a helper that read past what
    /// it wanted).
    pub fn requeue(&mut self, frames: impl IntoIterator<Item = Value>) {
        let mut frames: Vec<Value> = frames.into_iter().collect();
        frames.extend(self.backlog.drain(..));
        self.backlog.extend(frames);
    }

    /// The next frame (backlog first); panics on timeout or close.
    pub async fn recv(&mut self) -> Value {
        if let Some(v) = self.backlog.pop_front() {
            return v;
        }
        match self.next_frame(RECV_TIMEOUT).await {
            Some(v) => v,
            None => panic!("socket closed"),
        }
    }

    /// Frames until (and including) the first that satisfies `done`, waiting at most
    /// `timeout` for each (backlog first): for vendors whose first turn starts slow
    /// processes.
    pub async fn recv_until_within(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&Value) -> bool,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let v = match self.backlog.pop_front() {
                Some(v) => v,
                None => match self.next_frame(timeout).await {
                    Some(v) => v,
                    None => panic!("socket closed"),
                },
            };
            let stop = done(&v);
            out.push(v);
            if stop {
                return out;
            }
        }
    }

    /// Frames until (and including) the first that satisfies `done`.
    pub async fn recv_until(&mut self, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let v = self.recv().await;
            let stop = done(&v);
            out.push(v);
            if stop {
                return out;
            }
        }
    }

    /// Sends a request with a fresh `requestId` and returns its `reply` or
    /// `protocol_error`; other frames meanwhile go to the backlog.
    pub async fn request(&mut self, mut body: Value) -> Value {
        let id = format!("r{}", self.next_request);
        self.next_request += 1;
        body["requestId"] = json!(id);
        self.send(&body).await;
        loop {
            let v = match self.next_frame(RECV_TIMEOUT).await {
                Some(v) => v,
                None => panic!("socket closed while waiting for {id}"),
            };
            if v["requestId"] == json!(id)
                && (v["kind"] == "reply" || v["kind"] == "protocol_error")
            {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Like [`WsClient::request`] for a request that names its own `requestId` (a
    /// permission answer carries the permission's id): other frames meanwhile go to the
    /// backlog, so events that overtake the reply are not lost.
    pub async fn request_with_id(&mut self, body: Value) -> Value {
        let id = body["requestId"].clone();
        self.send(&body).await;
        loop {
            let v = match self.next_frame(RECV_TIMEOUT).await {
                Some(v) => v,
                None => panic!("socket closed while waiting for {id}"),
            };
            if v["requestId"] == id && (v["kind"] == "reply" || v["kind"] == "protocol_error") {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Like [`WsClient::request`] but panics unless the answer is a `reply`.
    pub async fn ok(&mut self, body: Value) -> Value {
        let answer = self.request(body.clone()).await;
        assert_eq!(answer["kind"], "reply", "request {body} failed: {answer}");
        answer
    }

    /// Creates a scripted session and returns its id (a typed call: every test that
    /// creates one also checks the reply's shape).
    pub async fn create_session(&mut self) -> String {
        let params = tandem_protocol::client::SessionCreateParams {
            title: Some("test".into()),
            ..Default::default()
        };
        self.call_ok(params).await.session.id.to_string()
    }

    /// Subscribes to a session after `last_seq`.
    pub async fn subscribe(&mut self, session_id: &str, last_seq: u64) {
        self.send(&json!({"type": "chat.subscribe", "sessions": [{"sessionId": session_id, "lastSeq": last_seq}]}))
            .await;
    }

    /// Sends `content` to `session_id` (`chat.send`, a typed call) and panics unless
    /// it is accepted.
    pub async fn chat(
        &mut self,
        session_id: &str,
        content: &str,
    ) -> tandem_protocol::results::ChatSendResult {
        let params = tandem_protocol::client::ChatSendParams {
            session_id: session_id.into(),
            content: content.to_string().into(),
            options: None,
            queue: false,
        };
        self.call_ok(params).await
    }

    /// [`WsClient::chat`], then the turn's events through its `turn_completed` (the
    /// client must be subscribed to the session).
    pub async fn turn(&mut self, session_id: &str, content: &str) -> Vec<Value> {
        self.chat(session_id, content).await;
        self.events_until_turn_end(session_id).await
    }

    /// Events of `session_id` until its `turn_completed` (inclusive), skipping other
    /// frames.
    pub async fn events_until_turn_end(&mut self, session_id: &str) -> Vec<Value> {
        let frames = self
            .recv_until(|v| v["kind"] == "turn_completed" && v["sessionId"] == session_id)
            .await;
        Self::events_of(frames, session_id)
    }

    /// [`WsClient::events_until_turn_end`], waiting at most `timeout` for each frame:
    /// for vendors whose first turn starts slow processes.
    pub async fn events_until_turn_end_within(
        &mut self,
        timeout: Duration,
        session_id: &str,
    ) -> Vec<Value> {
        let frames = self
            .recv_until_within(timeout, |v| {
                v["kind"] == "turn_completed" && v["sessionId"] == session_id
            })
            .await;
        Self::events_of(frames, session_id)
    }

    /// The numbered events of `session_id` among `frames`; each must read as a
    /// `tandem_protocol::Event` (a contract check on every turn a test reads).
    fn events_of(frames: Vec<Value>, session_id: &str) -> Vec<Value> {
        let events: Vec<Value> = frames
            .into_iter()
            .filter(|v| v["sessionId"] == session_id && v.get("seq").is_some())
            .collect();
        for event in &events {
            if let Err(e) = serde_json::from_value::<tandem_protocol::Event>(event.clone()) {
                panic!("not a history event ({e}): {event}");
            }
        }
        events
    }

    /// Runs one scripted turn that calls agent tool `tool` with `args` (`/tool NAME
    /// {json}`) as `session_id`, which this client must be subscribed to; returns the
    /// tool result's `output` and `isError`. Retries while the session is busy with a
    /// turn of its own (a pushed-back result).
    pub async fn scripted_tool(
        &mut self,
        session_id: &str,
        tool: &str,
        args: Value,
    ) -> (Value, bool) {
        let send = json!({"type": "chat.send", "sessionId": session_id,
            "content": format!("/tool {tool} {args}")});
        let mut reply = self.request(send.clone()).await;
        for _ in 0..400 {
            if reply["code"] != "RUN_IN_PROGRESS" {
                break;
            }
            actix_rt::time::sleep(Duration::from_millis(25)).await;
            reply = self.request(send.clone()).await;
        }
        assert_eq!(reply["kind"], "reply", "{reply}");
        let turn = reply["turnId"]
            .as_str()
            .unwrap_or_else(|| panic!("no turnId in {reply}"))
            .to_string();
        let events = self
            .recv_until(|v| {
                v["kind"] == "turn_completed"
                    && v["sessionId"] == session_id
                    && v["turnId"] == turn.as_str()
            })
            .await;
        let result = events
            .iter()
            .find(|v| {
                v["kind"] == "tool_result"
                    && v["sessionId"] == session_id
                    && v["turnId"] == turn.as_str()
            })
            .cloned()
            .unwrap_or_else(|| panic!("no tool_result in {events:?}"));
        (result["output"].clone(), result["isError"] == true)
    }

    /// Closes the socket.
    pub async fn close(mut self) {
        let _ = self.framed.send(Message::Close(None)).await;
    }
}
