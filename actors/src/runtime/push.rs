//! Web Push requests: the server's public key, a user's devices, and which session a
//! WebSocket client shows (so its owner is not pushed about what they look at).

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use tandem_protocol::push::{PushSubscribeParams, PushSubscription};

use super::SessionAccess;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::{SessionId, UserId};
use crate::push::{ece, Push};
use crate::store::push::PushTarget;

/// base64url as browsers write subscription keys: padding optional, and the unused
/// low bits of the last character not checked (the schema's pattern does not).
const KEYS: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

fn listed(target: PushTarget) -> PushSubscription {
    PushSubscription {
        id: target.id,
        endpoint: target.endpoint,
        label: target.label,
        created_at: target.created_at,
    }
}

/// The Web Push service: users' devices, and what each client shows.
pub struct PushService {
    access: SessionAccess,
    push: Push,
}

impl PushService {
    /// Registers devices with `push`, checking sessions through `access`.
    pub(super) fn new(access: SessionAccess, push: Push) -> Self {
        PushService { access, push }
    }

    /// Keeps push devices in the cluster's `shared` store from now on (copying this
    /// node's there), so every node reaches every device.
    pub async fn share_devices(
        &self,
        shared: std::sync::Arc<dyn crate::push::SharedDevices>,
    ) -> Result<(), RuntimeError> {
        self.push.share(shared).await
    }

    /// The VAPID public key.
    pub fn public_key(&self) -> String {
        self.push.public_key().to_string()
    }

    /// Registers a device of `who` (the fields' shapes were validated). A key that is
    /// not a point of P-256, or an endpoint that is not a URL, is unusable (422).
    pub async fn subscribe(
        &self,
        who: &Principal,
        params: PushSubscribeParams,
    ) -> Result<PushSubscription, RuntimeError> {
        let p256dh = KEYS
            .decode(params.keys.p256dh.trim_end_matches('='))
            .map_err(|_| RuntimeError::unusable("keys.p256dh is not base64url"))?;
        let auth = KEYS
            .decode(params.keys.auth.trim_end_matches('='))
            .map_err(|_| RuntimeError::unusable("keys.auth is not base64url"))?;
        ece::check_public_key(&p256dh)
            .map_err(|_| RuntimeError::unusable("keys.p256dh is not a point of P-256"))?;
        if auth.len() != ece::AUTH_LEN {
            return Err(RuntimeError::unusable("keys.auth is not 16 bytes"));
        }
        if params.endpoint.parse::<awc::http::Uri>().is_err() {
            return Err(RuntimeError::unusable("endpoint is not a URL"));
        }
        let label = params
            .label
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty());
        let target = self
            .push
            .add(&who.user_id, &params.endpoint, p256dh, auth, label)
            .await?;
        Ok(listed(target))
    }

    /// The devices of `who`, oldest first.
    pub async fn subscriptions(
        &self,
        who: &Principal,
    ) -> Result<Vec<PushSubscription>, RuntimeError> {
        let targets = self.push.devices(&who.user_id).await?;
        Ok(targets.into_iter().map(listed).collect())
    }

    /// Removes a device of `who`; another user's (or an unknown) id is `NOT_FOUND`.
    pub async fn unsubscribe(&self, who: &Principal, id: &str) -> Result<(), RuntimeError> {
        if self.push.remove(&who.user_id, id).await? {
            Ok(())
        } else {
            Err(RuntimeError::Missing(format!(
                "no push subscription `{id:.64}`"
            )))
        }
    }

    /// Records the sessions this node's WebSocket client `client_id` of `who` shows
    /// in a visible tab (none: nothing shown). Each must be one `who` may see here;
    /// the caller passes only this node's sessions (another node's are told to it).
    pub fn set_visible(
        &self,
        client_id: u64,
        who: &Principal,
        sessions: Vec<SessionId>,
    ) -> Result<Vec<SessionId>, RuntimeError> {
        for id in &sessions {
            self.access.visible(who, id)?;
        }
        self.push.set_visible(
            &format!("local:{client_id}"),
            &who.user_id,
            sessions.clone(),
        );
        Ok(sessions)
    }

    /// What another node said its client `client` (`NODE:ID`) of `user_id` shows of
    /// this node's sessions; holds for a while unless said again.
    pub fn set_visible_remote(&self, client: &str, user_id: &UserId, sessions: Vec<SessionId>) {
        self.push.set_visible(client, user_id, sessions);
    }
}
