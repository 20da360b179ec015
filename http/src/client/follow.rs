//! Following one session's events across disconnects and server restarts: each
//! (re)connection subscribes from the last `seq` handed out, and anything at or below
//! it is dropped, so no event is repeated or lost.

use std::collections::VecDeque;
use std::time::Duration;
use tandem_protocol::ids::SessionId;

use serde_json::Value;
use tandem_protocol::client::{ChatSubscribeParams, SubscribeEntry};

use super::conn::{ClientError, Socket, Target};

/// First wait before reconnecting; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(3);

/// A subscription to one session that survives losing its connection.
pub struct Follower {
    target: Target,
    session_id: SessionId,
    /// The newest `seq` handed out (or the position to start after).
    last: u64,
    socket: Option<Socket>,
    /// Frames read while waiting for something else (a request's answer).
    queued: VecDeque<Value>,
    /// The `pendingPermissions` of the latest `chat_subscribed`.
    pub pending: Vec<Value>,
}

impl Follower {
    /// Follows `session_id` from the event after `after`.
    pub fn new(target: Target, session_id: SessionId, after: u64) -> Follower {
        Follower {
            target,
            session_id,
            last: after,
            socket: None,
            queued: VecDeque::new(),
            pending: Vec::new(),
        }
    }

    /// Connects and subscribes if not connected; waits for `chat_subscribed`.
    pub async fn connect(&mut self) -> Result<&mut Socket, ClientError> {
        if self.socket.is_none() {
            let mut socket = self.target.ws().await?;
            let params = ChatSubscribeParams {
                sessions: vec![SubscribeEntry {
                    session_id: self.session_id.clone(),
                    last_seq: Some(self.last),
                }],
            };
            let id = socket.send("chat.subscribe", &params).await?;
            loop {
                let Some(frame) = socket.next().await? else {
                    return Err(ClientError::Other(
                        "the server closed the connection".into(),
                    ));
                };
                if frame["kind"] == "protocol_error" && frame["requestId"] == id.as_str() {
                    return Err(ClientError::Refused {
                        code: frame["code"].as_str().unwrap_or("ERROR").to_string(),
                        message: frame["error"].as_str().unwrap_or_default().to_string(),
                    });
                }
                if frame["kind"] == "chat_subscribed"
                    && frame["sessionId"] == self.session_id.as_str()
                {
                    self.pending = frame["pendingPermissions"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    break;
                }
                self.queued.push_back(frame);
            }
            self.socket = Some(socket);
        }
        match self.socket.as_mut() {
            Some(socket) => Ok(socket),
            None => Err(ClientError::Other("not connected".into())),
        }
    }

    /// Sends a request on the live connection and returns its answer; events that
    /// arrive first are kept for [`Follower::next_event`].
    pub async fn call<P: serde::Serialize>(
        &mut self,
        kind: &str,
        params: &P,
    ) -> Result<Value, ClientError> {
        let mut before = Vec::new();
        let answer = self.connect().await?.call(kind, params, &mut before).await;
        self.queued.extend(before);
        answer
    }

    /// The next event of the session (`seq` one above the last handed out, in order),
    /// reconnecting for as long as it takes when the connection is lost.
    pub async fn next_event(&mut self) -> Result<Value, ClientError> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let frame = match self.queued.pop_front() {
                Some(frame) => Some(frame),
                None => match self.connect().await {
                    Ok(socket) => match socket.next().await {
                        Ok(Some(frame)) => Some(frame),
                        Ok(None) | Err(ClientError::Unreachable { .. }) => None,
                        Err(e) => return Err(e),
                    },
                    Err(ClientError::Unreachable { .. }) => None,
                    Err(e) => return Err(e),
                },
            };
            let Some(frame) = frame else {
                if self.socket.take().is_some() {
                    eprintln!(
                        "tandem: connection lost; reconnecting from seq {}",
                        self.last
                    );
                }
                actix_rt::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            };
            backoff = FIRST_BACKOFF;
            if frame["kind"] == "lagged" {
                // The server dropped events for us: subscribe again from what we have.
                self.socket = None;
                continue;
            }
            let Some(seq) = frame["seq"].as_u64() else {
                continue;
            };
            if frame["sessionId"] != self.session_id.as_str() || seq <= self.last {
                continue;
            }
            self.last = seq;
            return Ok(frame);
        }
    }
}
