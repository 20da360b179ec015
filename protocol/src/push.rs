//! Web Push: the server's VAPID public key, the devices a user registered
//! (`push.subscribe`, `push.subscriptions`, `push.unsubscribe`), what a session tells
//! them of ([`Notify`]) and which session a client shows (`client.visible`, so a
//! device is not told of what its user is looking at).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::SessionId;
use crate::operations::{Refusal, Validate};

/// JSON Schema `pattern` of a push endpoint: `https://`, or `http://` on a loopback
/// address (a push service on this machine, and the tests' stand-in).
pub const ENDPOINT: &str = r"^(https://[^/?#]|http://(localhost|127\.0\.0\.1|\[::1\])([:/?#]|$))";
/// The longest endpoint taken (browsers' are a few hundred characters).
pub const MAX_ENDPOINT: usize = 2048;
/// JSON Schema `pattern` of `p256dh`: 65 bytes in base64url (an uncompressed P-256
/// point starts with 0x04: `B`, then a character of the first sixteen).
pub const P256DH: &str = r"^B[A-P][A-Za-z0-9_-]{85}=?$";
/// JSON Schema `pattern` of `auth`: 16 bytes in base64url.
pub const AUTH: &str = r"^[A-Za-z0-9_-]{22}(==)?$";
/// The longest device label.
pub const MAX_LABEL: usize = 100;

/// Which of a session's moments its owner's devices are told of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Notify {
    /// Input needed, a failed turn, and a turn that ended unseen.
    All,
    /// Input needed and a failed turn (the default).
    #[default]
    Attention,
    /// Nothing.
    None,
}

impl Notify {
    /// True for the default, left out of session metadata.
    pub fn is_default(&self) -> bool {
        *self == Notify::Attention
    }
}

/// Fields of `push.key` (none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushKeyParams {}

/// `push.key` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushKeyResult {
    /// The server's VAPID public key (uncompressed P-256 point, base64url): the
    /// `applicationServerKey` of `pushManager.subscribe`.
    pub public_key: String,
}

/// A device's keys, as `PushSubscription.toJSON()` gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushKeys {
    /// Its P-256 public key, base64url.
    #[schemars(regex(pattern = P256DH))]
    pub p256dh: String,
    /// Its authentication secret, base64url.
    #[schemars(regex(pattern = AUTH))]
    pub auth: String,
}

/// Fields of `push.subscribe`: a device of the caller to notify.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushSubscribeParams {
    /// The push service's URL for the device.
    #[schemars(regex(pattern = ENDPOINT), length(max = MAX_ENDPOINT))]
    pub endpoint: String,
    /// The device's keys.
    pub keys: PushKeys,
    /// What to call the device in lists.
    #[serde(default)]
    #[schemars(length(max = MAX_LABEL))]
    pub label: Option<String>,
}

/// Whether `endpoint` is `https://` with a host, or `http://` on a loopback address
/// ([`ENDPOINT`]).
fn endpoint_ok(endpoint: &str) -> bool {
    if let Some(rest) = endpoint.strip_prefix("https://") {
        return rest.chars().next().is_some_and(|c| !"/?#".contains(c));
    }
    let Some(rest) = endpoint.strip_prefix("http://") else {
        return false;
    };
    ["localhost", "127.0.0.1", "[::1]"].iter().any(|host| {
        rest.strip_prefix(host)
            .is_some_and(|after| after.chars().next().is_none_or(|c| ":/?#".contains(c)))
    })
}

fn base64url(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Whether `key` matches [`P256DH`].
fn p256dh_ok(key: &str) -> bool {
    let body = key.strip_suffix('=').unwrap_or(key);
    let mut chars = body.chars();
    body.len() == 87
        && chars.next() == Some('B')
        && chars.next().is_some_and(|c| ('A'..='P').contains(&c))
        && chars.all(base64url)
}

/// Whether `auth` matches [`AUTH`].
fn auth_ok(auth: &str) -> bool {
    let body = auth.strip_suffix("==").unwrap_or(auth);
    body.len() == 22 && body.chars().all(base64url)
}

impl Validate for PushSubscribeParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.endpoint.chars().count() > MAX_ENDPOINT || !endpoint_ok(&self.endpoint) {
            return Err(Refusal::invalid(format!(
                "endpoint must be an https:// URL (or http:// on a loopback address) of at most {MAX_ENDPOINT} characters"
            )));
        }
        if !p256dh_ok(&self.keys.p256dh) {
            return Err(Refusal::invalid(
                "keys.p256dh must be a P-256 public key, 65 bytes in base64url",
            ));
        }
        if !auth_ok(&self.keys.auth) {
            return Err(Refusal::invalid("keys.auth must be 16 bytes in base64url"));
        }
        if self
            .label
            .as_ref()
            .is_some_and(|l| l.chars().count() > MAX_LABEL)
        {
            return Err(Refusal::invalid(format!(
                "label is at most {MAX_LABEL} characters"
            )));
        }
        Ok(())
    }
}

/// A registered device, as listed (its keys are not given back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushSubscription {
    /// Its id, for `push.unsubscribe`.
    pub id: String,
    /// The push service's URL for the device.
    pub endpoint: String,
    /// What the user called it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When it was registered, epoch milliseconds.
    pub created_at: u64,
}

/// `push.subscribe` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushSubscribeResult {
    /// The device as registered (the same id when its endpoint was registered before).
    pub subscription: PushSubscription,
}

/// Fields of `push.subscriptions` (none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushSubscriptionsParams {}

/// `push.subscriptions` reply: the caller's devices, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushSubscriptionsResult {
    /// The devices.
    pub subscriptions: Vec<PushSubscription>,
}

/// Fields of `push.unsubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PushUnsubscribeParams {
    /// The device's id.
    pub subscription_id: String,
}

/// `push.unsubscribe` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PushUnsubscribeResult {
    /// The device's id.
    pub subscription_id: String,
    /// Always true (a device the caller does not have is `NOT_FOUND`).
    pub removed: bool,
}

/// The most sessions one connection shows at once (a pair's Driver and Workers).
pub const MAX_VISIBLE: usize = 8;

/// Fields of `client.visible`: the sessions this connection's page shows in a
/// visible tab (none when hidden). Their owner's devices are not notified of them
/// meanwhile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientVisibleParams {
    /// The sessions shown; each replaces what the connection said before.
    #[serde(default)]
    #[schemars(length(max = MAX_VISIBLE))]
    pub session_ids: Vec<SessionId>,
}

impl Validate for ClientVisibleParams {
    fn validate(&self) -> Result<(), Refusal> {
        if self.session_ids.len() > MAX_VISIBLE {
            return Err(Refusal::invalid(format!(
                "at most {MAX_VISIBLE} sessions are shown at once"
            )));
        }
        Ok(())
    }
}

/// `client.visible` reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientVisibleResult {
    /// The sessions now counted as shown by this connection.
    pub session_ids: Vec<SessionId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_https_or_loopback_http() {
        for ok in [
            "https://fcm.googleapis.com/fcm/send/x",
            "https://h",
            "http://127.0.0.1:9000/push/a",
            "http://localhost",
            "http://[::1]:1/",
        ] {
            assert!(endpoint_ok(ok), "{ok}");
        }
        for bad in [
            "http://example.com/x",
            "http://127.0.0.1.evil.net/",
            "http://localhost.evil.net",
            "https://",
            "https:///x",
            "ftp://h",
            "",
        ] {
            assert!(!endpoint_ok(bad), "{bad}");
        }
    }

    #[test]
    fn keys_are_checked_like_their_patterns() {
        let p = format!("BA{}", "a".repeat(85));
        assert!(p256dh_ok(&p) && p256dh_ok(&format!("{p}=")));
        assert!(!p256dh_ok(&format!("BQ{}", "a".repeat(85))));
        assert!(!p256dh_ok(&format!("BA{}", "a".repeat(84))));
        assert!(!p256dh_ok(&format!("BA{}+", "a".repeat(84))));
        assert!(auth_ok(&"a".repeat(22)) && auth_ok(&format!("{}==", "a".repeat(22))));
        assert!(!auth_ok(&"a".repeat(23)) && !auth_ok(&format!("{}=", "a".repeat(22))));
    }
}
