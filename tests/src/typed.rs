//! The typed side of the test client: requests sent as `tandem_protocol` params and
//! answers and events read back as its types, so a renamed or retyped field fails
//! the build instead of a test run.

use serde_json::Value;
use tandem_protocol::error::ErrorCode;
use tandem_protocol::operations::Operation;
use tandem_protocol::server::ServerFrame;
use tandem_protocol::Event;

use crate::WsClient;

/// A request the server refused (`protocol_error`).
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The machine-readable code.
    pub code: ErrorCode,
    /// What the server said was wrong.
    pub error: String,
}

impl WsClient {
    /// Sends `params` as the request they make (a fresh `requestId`) and reads its
    /// result; a refusal is `Err`. Panics on an answer that does not parse as the
    /// request's result: that is a contract failure, whatever the test expects.
    pub async fn call<P: Operation>(&mut self, params: P) -> Result<P::Result, Refused> {
        let mut body = match serde_json::to_value(&params) {
            Ok(Value::Object(fields)) => fields,
            other => panic!("{} params are not an object: {other:?}", P::NAME),
        };
        body.insert("type".into(), P::NAME.into());
        let answer = self.request(Value::Object(body)).await;
        let frame: ServerFrame = match serde_json::from_value(answer.clone()) {
            Ok(frame) => frame,
            Err(e) => panic!("{}: the answer is no server frame ({e}): {answer}", P::NAME),
        };
        match frame {
            ServerFrame::Reply { payload, .. } => {
                match serde_json::from_value(Value::Object(payload)) {
                    Ok(result) => Ok(result),
                    Err(e) => panic!("{}: the reply is not its result ({e}): {answer}", P::NAME),
                }
            }
            ServerFrame::ProtocolError { code, error, .. } => Err(Refused { code, error }),
            _ => panic!("{}: answered with {answer}", P::NAME),
        }
    }

    /// [`WsClient::call`] that panics on a refusal.
    pub async fn call_ok<P: Operation>(&mut self, params: P) -> P::Result {
        let name = P::NAME;
        match self.call(params).await {
            Ok(result) => result,
            Err(refused) => panic!("{name} was refused: {refused:?}"),
        }
    }

    /// The events of `session_id` through its next `turn_completed`, typed (the
    /// client must be subscribed to the session).
    pub async fn turn_events(&mut self, session_id: &str) -> Vec<Event> {
        self.events_until_turn_end(session_id)
            .await
            .into_iter()
            .map(|v| match serde_json::from_value(v.clone()) {
                Ok(event) => event,
                Err(e) => panic!("not a history event ({e}): {v}"),
            })
            .collect()
    }
}
