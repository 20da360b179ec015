//! Uploads across cluster nodes (`--nats`). An upload belongs to the node that took
//! it (`POST /api/v1/uploads`), and a message is resolved on the node that owns its
//! session. So:
//! - a node that forwards a request naming uploads (`uploadId` anywhere in a
//!   `chat.send` or `chat.edit-send` frame, or in a REST body) first hands the
//!   caller's uploads it holds over to the owner ([`hand_over`]) as
//!   `Call::UploadPart`s: base64 parts sized to the NATS server's `max_payload`; the
//!   owner keeps them under the same content-address id, and answers the first part
//!   "complete" when it has the upload already;
//! - a node asked for the bytes of an upload used in another node's session
//!   (`GET /api/v1/sessions/{id}/uploads/{upload}`, the page's thumbnails) reads
//!   them from the owner in parts ([`fetch`], `Call::UploadRead`): that route is not
//!   a request of the table (its body is bytes, not JSON), and serves them with the
//!   local route's headers.
//!
//! E2e `uploads_on_one_node_reach_a_session_on_another` moves a 2.5 MB image both
//! ways.
//!
//! The owner's side is [`answer_part`] and [`answer_read`]; the bytes are checked
//! against their id when the last part arrives (see
//! [`tandem_actors::uploads::transfer`]).

use std::time::Duration;
use tandem_protocol::ids::{SessionId, UploadId};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use tandem_actors::cluster::Cluster;
use tandem_actors::uploads::transfer::Part;
use tandem_actors::{Principal, Runtime, RuntimeError};
use tandem_protocol::error::{ErrorBody, ErrorDetail};
use tandem_protocol::ErrorCode;

use crate::cluster_wire::{Call, Forward, PartCall, ReadCall};

/// How long one part may take.
const PART_TIMEOUT: Duration = Duration::from_secs(30);
/// Room in a NATS message for what wraps a part (JSON, headers, subject).
const ENVELOPE: usize = 16 << 10;

/// The owner's answer to a [`PartCall`].
#[derive(Debug, Serialize, Deserialize)]
struct PartAnswer {
    /// The upload is there whole: no more parts are needed.
    complete: bool,
}

/// The owner's answer to a [`ReadCall`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadAnswer {
    /// The upload's media type.
    mime_type: String,
    /// Bytes of the whole upload.
    size: u64,
    /// The part, base64.
    data: String,
}

/// An answer or the owner's error.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Answer<T> {
    Err(ErrorBody),
    Ok(T),
}

/// Why moving an upload failed: a code and a message for the caller.
pub type Failure = (ErrorCode, String);

/// Raw bytes per part, so that a part in base64 inside its forward fits the NATS
/// server's largest message.
fn part_size(cluster: &Cluster) -> usize {
    let max = cluster.client().server_info().max_payload;
    (max.saturating_sub(ENVELOPE) / 4 * 3).max(4096)
}

/// The upload ids `json` names: every string value of an `uploadId` key in it.
fn upload_ids(json: &str) -> Vec<UploadId> {
    fn walk(value: &serde_json::Value, out: &mut Vec<UploadId>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, v) in map {
                    match v {
                        serde_json::Value::String(id) if key == "uploadId" => {
                            if !out.iter().any(|known| known == id) {
                                out.push(id.into());
                            }
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    // Most forwarded requests name no upload: not even parsed then.
    if json.contains("\"uploadId\"") {
        if let Ok(value) = serde_json::from_str(json) {
            walk(&value, &mut out);
        }
    }
    out
}

/// Sends `call` to `node` as `who` and reads its answer.
async fn ask<T: serde::de::DeserializeOwned>(
    cluster: &Cluster,
    who: &Principal,
    node: &str,
    call: Call,
) -> Result<T, Failure> {
    let forward = Forward {
        user_id: who.user_id.clone(),
        admin: who.admin,
        call,
    };
    let payload = serde_json::to_vec(&forward).map_err(|e| (ErrorCode::Internal, e.to_string()))?;
    let reply = cluster
        .request(node, payload, PART_TIMEOUT)
        .await
        .map_err(|e| {
            (
                ErrorCode::NodeUnavailable,
                format!("node {node} did not answer while an upload moved: {e}"),
            )
        })?;
    match serde_json::from_slice::<Answer<T>>(&reply) {
        Ok(Answer::Ok(answer)) => Ok(answer),
        Ok(Answer::Err(body)) => Err((body.error.code, body.error.message)),
        Err(e) => Err((
            ErrorCode::Internal,
            format!("bad answer from node {node}: {e}"),
        )),
    }
}

/// Hands the uploads `json` names that `who` has here over to `node`, before `json`
/// is forwarded there. An id not found here is left to the owner (it may have it,
/// or answers `NO_SUCH_UPLOAD` as it would locally).
pub async fn hand_over(
    cluster: &Cluster,
    runtime: &Runtime,
    who: &Principal,
    node: &str,
    json: &str,
) -> Result<(), Failure> {
    let size = part_size(cluster);
    for id in upload_ids(json) {
        let (upload, bytes) = match runtime.uploads().own(who, &id).await {
            Ok(found) => found,
            Err(RuntimeError::NoSuchUpload(_)) => continue,
            Err(e) => return Err((e.code(), e.to_string())),
        };
        let transfer = tandem_actors::clock::random_id("", 16);
        let part = |offset: usize, data: &[u8]| {
            Call::UploadPart(PartCall {
                transfer: transfer.clone(),
                upload_id: upload.id.clone(),
                mime_type: upload.mime_type.clone(),
                name: upload.name.clone(),
                total: upload.size,
                offset: offset as u64,
                data: base64::engine::general_purpose::STANDARD.encode(data),
            })
        };
        // An empty first part asks whether the owner has it (an earlier message).
        let probe: PartAnswer = ask(cluster, who, node, part(0, &[])).await?;
        if probe.complete {
            continue;
        }
        for (i, chunk) in bytes.chunks(size).enumerate() {
            let answer: PartAnswer = ask(cluster, who, node, part(i * size, chunk)).await?;
            if answer.complete {
                break;
            }
        }
        tracing::debug!(upload = %upload.id, %node, "upload handed over");
    }
    Ok(())
}

/// The media type and bytes of upload `upload_id` as used in `session_id`, which
/// `node` owns, read from there in parts.
pub async fn fetch(
    cluster: &Cluster,
    who: &Principal,
    node: &str,
    session_id: &SessionId,
    upload_id: &UploadId,
) -> Result<(String, Vec<u8>), Failure> {
    let size = part_size(cluster);
    let mut bytes = Vec::new();
    loop {
        let call = Call::UploadRead(ReadCall {
            session_id: session_id.into(),
            upload_id: upload_id.into(),
            offset: bytes.len() as u64,
            len: size,
        });
        let answer: ReadAnswer = ask(cluster, who, node, call).await?;
        let part = base64::engine::general_purpose::STANDARD
            .decode(&answer.data)
            .map_err(|e| (ErrorCode::Internal, format!("bad part from {node}: {e}")))?;
        if part.is_empty() && (bytes.len() as u64) < answer.size {
            return Err((
                ErrorCode::Internal,
                format!("node {node} sent no more of {upload_id}"),
            ));
        }
        bytes.extend_from_slice(&part);
        if bytes.len() as u64 >= answer.size {
            return Ok((answer.mime_type, bytes));
        }
    }
}

/// [`answer_json`]'s answer when an answer cannot be written: an `INTERNAL` error
/// the asking node reads like any other.
const UNWRITABLE: &str =
    r#"{"error":{"code":"INTERNAL","message":"the owner could not write its answer"}}"#;

/// The JSON of an answer for the asking node. Answers hold only strings, numbers and
/// flags, so writing one cannot fail; were it to, the asker still gets an error it can
/// read (rather than an empty answer), and the log says why.
fn answer_json<T: Serialize>(answer: &Answer<T>) -> String {
    serde_json::to_string(answer).unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot serialize an upload answer");
        UNWRITABLE.to_string()
    })
}

/// The JSON of an error answer.
fn error_json(e: &RuntimeError) -> String {
    answer_json::<()>(&Answer::Err(ErrorBody {
        error: ErrorDetail {
            code: e.code(),
            message: e.to_string(),
            paths: None,
        },
    }))
}

/// The owner's side of [`PartCall`].
pub async fn answer_part(runtime: &Runtime, who: &Principal, call: PartCall) -> String {
    let data = match base64::engine::general_purpose::STANDARD.decode(&call.data) {
        Ok(data) => data,
        Err(e) => {
            return error_json(&RuntimeError::InvalidAttachment(format!(
                "a part is not base64: {e}"
            )))
        }
    };
    let part = Part {
        transfer: call.transfer,
        upload_id: call.upload_id,
        mime_type: call.mime_type,
        name: call.name,
        total: call.total,
        offset: call.offset,
        data,
    };
    match runtime.uploads().receive_part(who, part).await {
        Ok(complete) => answer_json(&Answer::Ok(PartAnswer { complete })),
        Err(e) => error_json(&e),
    }
}

/// The owner's side of [`ReadCall`].
pub async fn answer_read(runtime: &Runtime, who: &Principal, call: ReadCall) -> String {
    match runtime
        .uploads()
        .read_in_session(
            who,
            &call.session_id,
            &call.upload_id,
            call.offset,
            call.len,
        )
        .await
    {
        Ok((upload, data)) => answer_json(&Answer::Ok(ReadAnswer {
            mime_type: upload.mime_type,
            size: upload.size,
            data: base64::engine::general_purpose::STANDARD.encode(data),
        })),
        Err(e) => error_json(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::{upload_ids, Answer, PartAnswer, UNWRITABLE};
    use tandem_protocol::ErrorCode;

    /// The fallback answer reads back as an `INTERNAL` error.
    #[test]
    fn the_unwritable_answer_is_an_error() {
        match serde_json::from_str::<Answer<PartAnswer>>(UNWRITABLE) {
            Ok(Answer::Err(body)) => assert_eq!(body.error.code, ErrorCode::Internal),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finds_the_uploads_a_request_names() {
        let frame = r#"{"type":"chat.send","sessionId":"ses_1","content":[
            {"type":"text","text":"uploadId"},
            {"type":"image","uploadId":"up_a"},
            {"type":"file","uploadId":"up_b"},
            {"type":"image","uploadId":"up_a"}]}"#;
        assert_eq!(upload_ids(frame), vec!["up_a", "up_b"]);
        assert!(upload_ids(r#"{"type":"chat.send","content":"hi"}"#).is_empty());
        assert!(upload_ids("not json \"uploadId\"").is_empty());
    }
}
