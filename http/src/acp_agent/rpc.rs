//! JSON-RPC 2.0 framing on stdio, one JSON object per line: what the editor's lines
//! are ([`parse_line`]), and [`Output`], the one writer of stdout.

use serde::Serialize;
use serde_json::Value;
use tandem_actors::adapter::acp::wire::{self, OutNotification, OutRequest, OutResponse, RpcError};

/// Not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON, but not a JSON-RPC request, notification or response.
pub const INVALID_REQUEST: i64 = -32600;
/// A method this agent does not serve.
pub const METHOD_NOT_FOUND: i64 = wire::METHOD_NOT_FOUND;
/// Parameters missing or of the wrong shape, or a value the server cannot use.
pub const INVALID_PARAMS: i64 = -32602;
/// Anything else that went wrong.
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP's "resource not found": a session the server does not have.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// One line from the editor, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answer with the same `id`.
    Request {
        /// Echoed in the answer (a number or a string).
        id: Value,
        /// What it asks.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// A notification (`session/cancel`).
    Notification {
        /// What it tells.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// The answer to one of our requests (`session/request_permission`).
    Response {
        /// Our id (we send numbers).
        id: Value,
        /// Its result, or the editor's error.
        outcome: Result<Value, RpcError>,
    },
    /// A line that is none of these: answered with `error` (and `id` when it had one).
    Bad {
        /// The request's id when it could be read, else `null`.
        id: Value,
        /// Parse error or invalid request.
        error: RpcError,
    },
}

/// Classifies one line the editor wrote.
pub fn parse_line(line: &str) -> Incoming {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return Incoming::Bad {
                id: Value::Null,
                error: error(PARSE_ERROR, format!("Parse error: {e}")),
            }
        }
    };
    let Value::Object(mut obj) = value else {
        return invalid(Value::Null, "a JSON-RPC message is a JSON object");
    };
    let id = obj.remove("id").unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::Null | Value::Number(_) | Value::String(_));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let id = if id_ok { id } else { Value::Null };
        return invalid(id, "`jsonrpc` must be \"2.0\"");
    }
    if !id_ok {
        return invalid(Value::Null, "`id` must be a number or a string");
    }
    let params = obj.remove("params").unwrap_or(Value::Null);
    match obj.remove("method") {
        Some(Value::String(method)) if id.is_null() => Incoming::Notification { method, params },
        Some(Value::String(method)) => Incoming::Request { id, method, params },
        Some(_) => invalid(id, "`method` must be a string"),
        None if id.is_null() => invalid(id, "neither a request nor a response"),
        None => {
            let outcome = match (obj.remove("result"), obj.remove("error")) {
                (_, Some(e)) => Err(serde_json::from_value(e).unwrap_or_else(|_| {
                    error(
                        INTERNAL_ERROR,
                        "the editor answered with an unreadable error",
                    )
                })),
                (Some(result), None) => Ok(result),
                (None, None) => return invalid(id, "a response needs `result` or `error`"),
            };
            Incoming::Response { id, outcome }
        }
    }
}

fn invalid(id: Value, why: &str) -> Incoming {
    Incoming::Bad {
        id,
        error: error(INVALID_REQUEST, format!("Invalid request: {why}")),
    }
}

/// A JSON-RPC error object.
pub fn error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError {
        code,
        message: message.into(),
        data: None,
    }
}

/// The writer of stdout: each message is one line, written whole by a thread of its
/// own, in the order they were handed over. Cloning shares the writer.
#[derive(Debug, Clone)]
pub struct Output {
    lines: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Output {
    /// Starts the writer thread on `sink` (stdout; a buffer in tests).
    pub fn start(mut sink: impl std::io::Write + Send + 'static) -> Output {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            for line in rx {
                if sink.write_all(&line).and_then(|()| sink.flush()).is_err() {
                    tracing::warn!("stdout is closed; the editor went away");
                    return;
                }
            }
        });
        Output { lines: tx }
    }

    fn write<T: Serialize>(&self, message: &T) {
        let _ = self.lines.send(wire::line(message));
    }

    /// Answers request `id` with `result`.
    pub fn result<R: Serialize>(&self, id: Value, result: R) {
        self.write(&OutResponse {
            jsonrpc: "2.0",
            id,
            result: Some(result),
            error: None,
        });
    }

    /// Answers request `id` with an error.
    pub fn error(&self, id: Value, error: RpcError) {
        self.write(&OutResponse::<Value> {
            jsonrpc: "2.0",
            id,
            result: None,
            error: Some(error),
        });
    }

    /// Sends a notification.
    pub fn notify<P: Serialize>(&self, method: &str, params: P) {
        self.write(&OutNotification {
            jsonrpc: "2.0",
            method,
            params,
        });
    }

    /// Sends a request of ours; its answer comes back as [`Incoming::Response`].
    pub fn request<P: Serialize>(&self, id: u64, method: &str, params: P) {
        self.write(&OutRequest {
            jsonrpc: "2.0",
            id,
            method,
            params,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn code(incoming: &Incoming) -> Option<i64> {
        match incoming {
            Incoming::Bad { error, .. } => Some(error.code),
            _ => None,
        }
    }

    #[test]
    fn lines_are_classified() {
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#),
            Incoming::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"a": 1})
            }
        );
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Incoming::Notification {
                method: "session/cancel".into(),
                params: Value::Null
            }
        );
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","id":"x","result":{"ok":true}}"#),
            Incoming::Response {
                id: json!("x"),
                outcome: Ok(json!({"ok": true}))
            }
        );
        let Incoming::Response { outcome, .. } =
            parse_line(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#)
        else {
            panic!("not a response");
        };
        assert_eq!(outcome.map_err(|e| e.code), Err(-1));
    }

    #[test]
    fn bad_lines_get_their_codes() {
        assert_eq!(code(&parse_line("{not json")), Some(PARSE_ERROR));
        assert_eq!(code(&parse_line("")), Some(PARSE_ERROR));
        assert_eq!(code(&parse_line("[1, 2]")), Some(INVALID_REQUEST));
        assert_eq!(code(&parse_line("7")), Some(INVALID_REQUEST));
        assert_eq!(
            code(&parse_line(r#"{"id":1,"method":"initialize"}"#)),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(&parse_line(r#"{"jsonrpc":"2.0","id":1,"method":5}"#)),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(&parse_line(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#)),
            Some(INVALID_REQUEST)
        );
        assert_eq!(
            code(&parse_line(r#"{"jsonrpc":"2.0","id":4}"#)),
            Some(INVALID_REQUEST)
        );
        // The id of an invalid request is echoed when it could be read.
        let Incoming::Bad { id, .. } = parse_line(r#"{"jsonrpc":"2.0","id":9,"method":1}"#) else {
            panic!("not bad");
        };
        assert_eq!(id, json!(9));
    }
}
