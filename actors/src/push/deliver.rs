//! One push message to one device: encrypted ([`super::ece`]), signed
//! ([`super::vapid`]), sent with `TTL`, `Urgency` and a `Topic` per session (a newer
//! message replaces an older one still queued at the push service). A device its
//! push service calls gone (404, 410) is removed; 429 and 5xx (and no answer) are
//! tried again with growing waits, a bounded number of times.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};
use tandem_protocol::Attention;

use super::{Moment, VapidKey};
use crate::clock::now_ms;
use crate::store::push::PushTarget;
use crate::text::clip;

/// The longest title and text a notification carries (the whole payload stays far
/// below the 4 KB push services take).
const MAX_TITLE: usize = 120;
const MAX_TEXT: usize = 400;

/// How delivery waits and retries.
#[derive(Debug, Clone)]
pub struct Policy {
    /// How long one request may take, answer included.
    pub timeout: Duration,
    /// Tries after the first, for 429, 5xx and no answer.
    pub retries: u32,
    /// The wait before the first retry; each next one doubles.
    pub backoff: Duration,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            timeout: Duration::from_secs(10),
            retries: 3,
            backoff: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// What a device is sent: JSON for the page's service worker, with the headers that
/// go with it.
#[derive(Debug, Clone)]
pub struct Message {
    /// The JSON payload.
    pub payload: String,
    /// Seconds the push service keeps it for an unreachable device.
    pub ttl: u32,
    /// `very-low`, `low`, `normal` or `high` (RFC 8030 section 5.3).
    pub urgency: &'static str,
    /// Replaces a queued message of the same session (32 base64url characters).
    pub topic: String,
}

impl Message {
    /// The message for `moment`: `{sessionId, title, body, attention, url, tag,
    /// requestId?}`.
    pub fn of(moment: &Moment) -> Message {
        let mut payload = serde_json::json!({
            "sessionId": moment.session_id,
            "title": clip(&moment.title, MAX_TITLE),
            "body": clip(&moment.what, MAX_TEXT),
            "attention": moment.attention,
            "url": format!("/#/s/{}", moment.session_id),
            "tag": format!("tandem-{}", moment.session_id),
        });
        if let Some(request) = &moment.request_id {
            payload["requestId"] = request.as_str().into();
        }
        let (ttl, urgency) = match moment.attention {
            Attention::NeedsInput => (24 * 3600, "high"),
            Attention::Failed => (24 * 3600, "normal"),
            Attention::DoneUnseen | Attention::None => (3600, "low"),
        };
        // A Topic is at most 32 URL-safe characters; a session id may be longer.
        let digest = Sha256::digest(moment.session_id.as_bytes());
        Message {
            payload: payload.to_string(),
            ttl,
            urgency,
            topic: URL_SAFE_NO_PAD.encode(&digest[..24]),
        }
    }
}

/// The TLS settings of push requests: the system's root certificates, ring.
fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::warn!(error = %e, "a system root certificate could not be read");
            }
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                tracing::warn!(
                    "no system root certificates: pushes to https:// services will fail"
                );
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = match rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
            {
                Ok(builder) => builder.with_root_certificates(roots).with_no_client_auth(),
                Err(e) => {
                    tracing::error!(error = %e, "no TLS versions for push requests");
                    rustls::ClientConfig::builder()
                        .with_root_certificates(rustls::RootCertStore::empty())
                        .with_no_client_auth()
                }
            };
            Arc::new(config)
        })
        .clone()
}

/// An HTTP client for push requests.
pub fn client(policy: &Policy) -> awc::Client {
    awc::Client::builder()
        .connector(awc::Connector::new().rustls_0_23(tls_config()))
        .timeout(policy.timeout)
        .disable_redirects()
        .finish()
}

/// How one attempt ended.
enum Outcome {
    Delivered,
    /// The device is gone (404, 410): removed.
    Gone(u16),
    /// Try again after this long.
    Again(Duration, String),
    /// Refused for good (another 4xx, a message that cannot be made).
    Refused(String),
}

/// Sends `message` to `target`, retrying as [`Policy`] says; true when its push
/// service says the device is gone (the caller removes it).
pub async fn deliver(
    client: &awc::Client,
    key: &VapidKey,
    subject: &str,
    policy: &Policy,
    target: PushTarget,
    message: &Message,
) -> bool {
    let mut backoff = policy.backoff;
    for attempt in 0..=policy.retries {
        match attempt_once(client, key, subject, policy, &target, message).await {
            Outcome::Delivered => {
                tracing::debug!(subscription = %target.id, "push delivered");
                return false;
            }
            Outcome::Gone(status) => {
                tracing::info!(subscription = %target.id, status, "push service says the device is gone; removing it");
                return true;
            }
            Outcome::Refused(why) => {
                tracing::warn!(subscription = %target.id, %why, "push refused");
                return false;
            }
            Outcome::Again(wait, why) => {
                if attempt == policy.retries {
                    tracing::warn!(subscription = %target.id, %why, attempts = attempt + 1, "push not delivered; giving up");
                    return false;
                }
                let wait = if wait.is_zero() { backoff } else { wait };
                tracing::info!(subscription = %target.id, %why, wait_ms = wait.as_millis() as u64, "push not delivered; trying again");
                actix_rt::time::sleep(wait).await;
                backoff = backoff.saturating_mul(2);
            }
        }
    }
    false
}

async fn attempt_once(
    client: &awc::Client,
    key: &VapidKey,
    subject: &str,
    policy: &Policy,
    target: &PushTarget,
    message: &Message,
) -> Outcome {
    let body = match super::ece::encrypt(&target.p256dh, &target.auth, message.payload.as_bytes()) {
        Ok(body) => body,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    // Signed per attempt: a retry after a long wait must not carry an old token.
    let authorization = match key.authorization(&target.endpoint, subject, now_ms() / 1000) {
        Ok(header) => header,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    let sent = client
        .post(target.endpoint.as_str())
        .insert_header(("Authorization", authorization))
        .insert_header(("Content-Encoding", "aes128gcm"))
        .insert_header(("Content-Type", "application/octet-stream"))
        .insert_header(("TTL", message.ttl.to_string()))
        .insert_header(("Urgency", message.urgency))
        .insert_header(("Topic", message.topic.as_str()))
        .send_body(body)
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(e) => return Outcome::Again(Duration::ZERO, format!("no answer: {e}")),
    };
    let status = response.status().as_u16();
    match status {
        200..=299 => Outcome::Delivered,
        404 | 410 => Outcome::Gone(status),
        429 | 500..=599 => {
            let wait = response
                .headers()
                .get("Retry-After")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|secs| Duration::from_secs(secs).min(policy.max_retry_after))
                .unwrap_or(Duration::ZERO);
            Outcome::Again(wait, format!("status {status}"))
        }
        _ => Outcome::Refused(format!("status {status}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_carries_the_moment_and_its_headers() {
        let moment = Moment {
            user_id: "u".into(),
            session_id: "ses_1".into(),
            title: "t".repeat(300),
            attention: Attention::NeedsInput,
            what: "Permission: Bash".into(),
            request_id: Some("perm_1".into()),
        };
        let m = Message::of(&moment);
        let payload: serde_json::Value = serde_json::from_str(&m.payload).unwrap();
        assert_eq!(payload["sessionId"], "ses_1");
        assert_eq!(payload["attention"], "needs_input");
        assert_eq!(payload["url"], "/#/s/ses_1");
        assert_eq!(payload["requestId"], "perm_1");
        assert_eq!(
            payload["title"].as_str().unwrap().chars().count(),
            MAX_TITLE + 1
        );
        assert_eq!((m.ttl, m.urgency), (86400, "high"));
        assert_eq!(m.topic.len(), 32);
        assert!(m
            .topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        let done = Message::of(&Moment {
            attention: Attention::DoneUnseen,
            request_id: None,
            ..moment
        });
        assert_eq!(done.urgency, "low");
        assert!(!done.payload.contains("requestId"));
    }
}
