//! Talking to a running server as a client: where it is and with which token, REST
//! calls, and a WebSocket that sends request frames and reads server frames.

use std::path::PathBuf;
use std::time::Duration;

use actix_codec::Framed;
use awc::ws::{Codec, Frame, Message};
use awc::BoxedSocket;
use futures_util::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// The server a local `tandem serve` listens on by default.
pub const DEFAULT_URL: &str = "http://127.0.0.1:7420";

/// How long one REST call may take.
const REST_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest server frame accepted (a replayed event can be large).
const MAX_FRAME: usize = 64 << 20;

/// Why a client command failed; the message is printed after `tandem: `.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached or the connection broke.
    #[error("cannot reach the server at {url}: {reason} (is `tandem serve` running? --url or TANDEM_URL say where)")]
    Unreachable {
        /// The server's URL.
        url: String,
        /// What the transport said.
        reason: String,
    },
    /// The server refused the request; `code` and `message` are its error body.
    #[error("{code}: {message}")]
    Refused {
        /// The error code (`SESSION_NOT_FOUND`, ...).
        code: String,
        /// The server's explanation.
        message: String,
    },
    /// Anything else the command cannot go on from.
    #[error("{0}")]
    Other(String),
}

/// Where the server is and how to authenticate.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http://HOST:PORT`, without a trailing slash.
    pub base: String,
    /// Bearer token; `None` for a server run with `--auth none`.
    pub token: Option<String>,
    /// A certificate to trust besides the system's for `https://` (`TANDEM_CA`, else
    /// the data directory's self-signed one when there is one).
    pub ca: Option<PathBuf>,
}

impl Target {
    /// `--url`, else `TANDEM_URL`, else [`DEFAULT_URL`]; `TANDEM_TOKEN`, else the admin
    /// token file in the data directory (`--data-dir`, default `~/.tandem`), else none.
    pub fn resolve(url: Option<String>, data_dir: Option<PathBuf>) -> Target {
        let base = url
            .or_else(|| std::env::var("TANDEM_URL").ok())
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_URL.to_string());
        let dir = data_dir.or_else(|| crate::server::default_data_dir().ok());
        let ca = std::env::var_os("TANDEM_CA")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                let own = dir.as_ref()?.join(crate::tls::SELF_SIGNED_CERT);
                own.is_file().then_some(own)
            });
        let token = std::env::var("TANDEM_TOKEN")
            .ok()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| {
                let dir = dir?;
                let text = std::fs::read_to_string(
                    dir.join(tandem_actors::store::tokens::ADMIN_TOKEN_FILE),
                )
                .ok()?;
                Some(text.trim().to_string()).filter(|t| !t.is_empty())
            });
        Target {
            base: base.trim().trim_end_matches('/').to_string(),
            token,
            ca,
        }
    }

    /// An HTTP client for the server: over `https://` it trusts the system's roots
    /// and [`Target::ca`].
    fn client(&self, timeout: std::time::Duration) -> awc::Client {
        if self.base.starts_with("https://") {
            awc::Client::builder()
                .connector(awc::Connector::new().rustls_0_23(self.tls()))
                .timeout(timeout)
                .finish()
        } else {
            awc::Client::builder().timeout(timeout).finish()
        }
    }

    /// TLS settings trusting the system's roots and [`Target::ca`].
    fn tls(&self) -> std::sync::Arc<rustls::ClientConfig> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        let _ = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        if let Some(ca) = &self.ca {
            match rustls::pki_types::CertificateDer::pem_file_iter(ca) {
                Ok(certs) => {
                    let _ = roots.add_parsable_certificates(certs.flatten());
                }
                Err(e) => eprintln!("tandem: cannot read {}: {e}", ca.display()),
            }
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = match rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
        {
            Ok(b) => b.with_root_certificates(roots).with_no_client_auth(),
            Err(_) => rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        };
        std::sync::Arc::new(config)
    }

    fn unreachable(&self, reason: impl std::fmt::Display) -> ClientError {
        ClientError::Unreachable {
            url: self.base.clone(),
            reason: reason.to_string(),
        }
    }

    fn request(&self, method: awc::http::Method, path: &str) -> awc::ClientRequest {
        let client = self.client(REST_TIMEOUT);
        let req = client.request(method, format!("{}/api/v1{path}", self.base));
        match &self.token {
            Some(t) => req.insert_header(("Authorization", format!("Bearer {t}"))),
            None => req,
        }
    }

    /// Reads a response: the body as `T` on success, the server's error otherwise.
    async fn answer<T: DeserializeOwned>(
        &self,
        sent: Result<awc::ClientResponse, awc::error::SendRequestError>,
    ) -> Result<T, ClientError> {
        let mut resp = sent.map_err(|e| self.unreachable(e))?;
        let body = resp
            .body()
            .limit(MAX_FRAME)
            .await
            .map_err(|e| self.unreachable(e))?;
        if !resp.status().is_success() {
            let error: Value = serde_json::from_slice(&body).unwrap_or_default();
            let error = &error["error"];
            return Err(ClientError::Refused {
                code: error["code"]
                    .as_str()
                    .map_or_else(|| resp.status().to_string(), str::to_string),
                message: error["message"].as_str().unwrap_or_default().to_string(),
            });
        }
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::Other(format!("unexpected answer from the server: {e}")))
    }

    /// `GET /api/v1{path}`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let sent = self.request(awc::http::Method::GET, path).send().await;
        self.answer(sent).await
    }

    /// `POST /api/v1{path}` with a JSON body.
    pub async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ClientError::Other(e.to_string()))?;
        let sent = self
            .request(awc::http::Method::POST, path)
            .insert_header(("Content-Type", "application/json"))
            .send_body(bytes)
            .await;
        self.answer(sent).await
    }

    /// `POST /api/v1/uploads?name=NAME` with `bytes` as the body: the answer
    /// (`{uploadId, size, mimeType}`).
    pub async fn upload(
        &self,
        name: &str,
        mime: &str,
        bytes: Vec<u8>,
    ) -> Result<Value, ClientError> {
        let path = format!("/uploads?name={}", query_value(name));
        let sent = self
            .request(awc::http::Method::POST, &path)
            .insert_header(("Content-Type", mime))
            .send_body(bytes)
            .await;
        self.answer(sent).await
    }

    /// Opens `/ws`.
    pub async fn ws(&self) -> Result<Socket, ClientError> {
        let url = format!("{}/ws", self.base.replacen("http", "ws", 1));
        // awc's default: the handshake's answer within 5 s.
        let mut req = self
            .client(std::time::Duration::from_secs(5))
            .ws(url)
            .max_frame_size(MAX_FRAME);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let (_, framed) = req.connect().await.map_err(|e| self.unreachable(e))?;
        Ok(Socket {
            framed,
            next_id: 0,
            base: self.base.clone(),
        })
    }
}

/// One WebSocket connection.
pub struct Socket {
    framed: Framed<BoxedSocket, Codec>,
    next_id: u64,
    base: String,
}

impl Socket {
    fn broken(&self, reason: impl std::fmt::Display) -> ClientError {
        ClientError::Unreachable {
            url: self.base.clone(),
            reason: reason.to_string(),
        }
    }

    /// Sends request `kind` with `params`' fields; returns the `requestId` it carries.
    pub async fn send<P: Serialize>(
        &mut self,
        kind: &str,
        params: &P,
    ) -> Result<String, ClientError> {
        self.next_id += 1;
        let request_id = format!("cli-{}", self.next_id);
        self.send_as(kind, params, request_id).await
    }

    /// [`Socket::send`] with a chosen `requestId` (a permission answer carries the
    /// permission's id there).
    pub async fn send_as<P: Serialize>(
        &mut self,
        kind: &str,
        params: &P,
        request_id: String,
    ) -> Result<String, ClientError> {
        let mut frame = match serde_json::to_value(params) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        frame.insert("type".into(), Value::String(kind.into()));
        frame.insert("requestId".into(), Value::String(request_id.clone()));
        let text = Value::Object(frame).to_string();
        self.framed
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| self.broken(e))?;
        Ok(request_id)
    }

    /// The next server frame; `None` when the connection closed.
    pub async fn next(&mut self) -> Result<Option<Value>, ClientError> {
        loop {
            let Some(frame) = self.framed.next().await else {
                return Ok(None);
            };
            match frame.map_err(|e| self.broken(e))? {
                Frame::Text(bytes) => {
                    return serde_json::from_slice(&bytes)
                        .map(Some)
                        .map_err(|e| ClientError::Other(format!("unreadable frame: {e}")));
                }
                Frame::Ping(p) => {
                    let _ = self.framed.send(Message::Pong(p)).await;
                }
                Frame::Close(_) => return Ok(None),
                _ => {}
            }
        }
    }

    /// Sends a request and waits for its answer, keeping the frames that came first in
    /// `before` (events of a subscription, say). A `protocol_error` is an error.
    pub async fn call<P: Serialize>(
        &mut self,
        kind: &str,
        params: &P,
        before: &mut Vec<Value>,
    ) -> Result<Value, ClientError> {
        let id = self.send(kind, params).await?;
        self.answer_to(&id, before).await
    }

    /// Waits for the answer to request `id`, keeping earlier frames in `before`.
    ///
    /// Only a `reply` or a `protocol_error` answers: events carry a `requestId` too (a
    /// `permission_request`'s is the very id a permission answer is sent under), and
    /// taking one for the answer would let the caller exit before the server has read
    /// the request, which is then lost with the connection.
    pub async fn answer_to(
        &mut self,
        id: &str,
        before: &mut Vec<Value>,
    ) -> Result<Value, ClientError> {
        loop {
            let Some(frame) = self.next().await? else {
                return Err(self.broken("the connection closed before the answer"));
            };
            let answers = frame["kind"] == "reply" || frame["kind"] == "protocol_error";
            if answers && frame["requestId"] == id {
                if frame["kind"] == "protocol_error" {
                    return Err(ClientError::Refused {
                        code: frame["code"].as_str().unwrap_or("ERROR").to_string(),
                        message: frame["error"].as_str().unwrap_or_default().to_string(),
                    });
                }
                return Ok(frame);
            }
            before.push(frame);
        }
    }
}

/// `text` percent-encoded for a URL's query (every byte but the unreserved ones).
fn query_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(super::query_value("notes v2.md"), "notes%20v2.md");
        assert_eq!(super::query_value("a&b=c/é"), "a%26b%3Dc%2F%C3%A9");
    }
}
