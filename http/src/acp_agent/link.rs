//! The one WebSocket to the tandem server, shared by every request of the editor: a
//! task owns the terminal client's [`Socket`], sends request frames handed to it and
//! routes what the server writes: the `reply` or `protocol_error` that answers a
//! request to whoever waits for it, everything else (events, `chat_subscribed`,
//! `lagged`) to the agent's event stream.

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::client::conn::{ClientError, Socket, Target};

/// A request to send, and where its answer goes.
struct Call {
    kind: String,
    params: Value,
    request_id: String,
    answer: oneshot::Sender<Result<Value, ClientError>>,
}

/// A handle on the connection; clones share it.
#[derive(Clone)]
pub struct Link {
    calls: mpsc::UnboundedSender<Call>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Link")
    }
}

impl Link {
    /// Opens `/ws` at `target` and starts the task that serves it; frames other than
    /// answers go to the returned receiver, which closes when the connection does.
    pub async fn open(
        target: &Target,
    ) -> Result<(Link, mpsc::UnboundedReceiver<Value>), ClientError> {
        let socket = target.ws().await?;
        let (calls_tx, calls_rx) = mpsc::unbounded_channel();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        actix_rt::spawn(serve(socket, calls_rx, events_tx));
        Ok((Link { calls: calls_tx }, events_rx))
    }

    /// Whether the connection is gone (its task ended: the socket closed or broke).
    pub fn is_closed(&self) -> bool {
        self.calls.is_closed()
    }

    /// Sends request `kind` with `params`' fields (an object) and waits for its answer.
    pub async fn call(&self, kind: &str, params: Value) -> Result<Value, ClientError> {
        self.call_as(kind, params, next_request_id()).await
    }

    /// [`Link::call`] under a chosen `requestId` (a permission answer carries the
    /// permission's id there).
    pub async fn call_as(
        &self,
        kind: &str,
        params: Value,
        request_id: String,
    ) -> Result<Value, ClientError> {
        let (answer, answered) = oneshot::channel();
        let call = Call {
            kind: kind.to_string(),
            params,
            request_id,
            answer,
        };
        if self.calls.send(call).is_err() {
            return Err(lost());
        }
        answered.await.unwrap_or_else(|_| Err(lost()))
    }
}

fn lost() -> ClientError {
    ClientError::Other("the connection to the tandem server was lost".into())
}

/// `acp-N`, unique in this process.
fn next_request_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("acp-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The connection's task: until the socket closes or every handle is gone.
async fn serve(
    mut socket: Socket,
    mut calls: mpsc::UnboundedReceiver<Call>,
    events: mpsc::UnboundedSender<Value>,
) {
    let mut waiting: HashMap<String, oneshot::Sender<Result<Value, ClientError>>> = HashMap::new();
    loop {
        tokio::select! {
            call = calls.recv() => {
                let Some(call) = call else { break };
                match socket.send_as(&call.kind, &call.params, call.request_id.clone()).await {
                    Ok(id) => {
                        waiting.insert(id, call.answer);
                    }
                    Err(e) => {
                        let _ = call.answer.send(Err(e));
                        break;
                    }
                }
            }
            frame = socket.next() => {
                let frame = match frame {
                    Ok(Some(frame)) => frame,
                    Ok(None) => {
                        tracing::error!("the tandem server closed the connection");
                        break;
                    }
                    Err(e) => {
                        tracing::error!("the connection to the tandem server broke: {e}");
                        break;
                    }
                };
                let answers = frame["kind"] == "reply" || frame["kind"] == "protocol_error";
                let waiter = match frame["requestId"].as_str() {
                    Some(id) if answers => waiting.remove(id),
                    _ => None,
                };
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(answer(frame));
                    }
                    None if frame["kind"] == "protocol_error" => {
                        tracing::warn!("the server refused a frame: {frame}");
                    }
                    None => {
                        if events.send(frame).is_err() {
                            break;
                        }
                    }
                }
            }
        }
    }
    for (_, waiter) in waiting {
        let _ = waiter.send(Err(lost()));
    }
}

/// A `reply` as the result, a `protocol_error` as the server's refusal.
fn answer(frame: Value) -> Result<Value, ClientError> {
    if frame["kind"] == "protocol_error" {
        return Err(ClientError::Refused {
            code: frame["code"].as_str().unwrap_or("ERROR").to_string(),
            message: frame["error"].as_str().unwrap_or_default().to_string(),
        });
    }
    Ok(frame)
}
