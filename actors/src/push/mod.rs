//! Web Push to a user's devices when one of their sessions needs them: the VAPID
//! identity ([`vapid`]), message encryption ([`ece`]), delivery with retries
//! ([`deliver`]), where devices are kept (this node's store, or in a cluster the
//! [`SharedDevices`] every node reads, so the node that runs a session reaches its
//! owner's devices wherever they were registered) and what decides a push: a
//! session's attention changing to something its `notify` setting asks for, while no
//! client of the owner shows it.

pub mod deliver;
pub mod ece;
pub mod vapid;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use futures_util::future::BoxFuture;
use tandem_protocol::push::Notify;
use tandem_protocol::Attention;

use crate::clock::{now_ms, random_id};
use crate::error::RuntimeError;
use crate::ids::{RequestId, SessionId, UserId};
use crate::store::push::{PushTarget, MAX_PER_USER};
use crate::store::{blocking, Store};

pub use vapid::{VapidError, VapidKey};

/// Who the push services may contact about this server's pushes (`sub` of the
/// VAPID token); a `mailto:` without a real address is what self-hosted servers use.
const DEFAULT_SUBJECT: &str = "mailto:tandem@localhost";

/// Sends Web Push notifications; cheap to clone.
#[derive(Clone)]
pub struct Push {
    inner: Arc<PushInner>,
}

struct PushInner {
    key: VapidKey,
    store: Store,
    /// Which sessions each WebSocket client shows in a visible tab (`client.visible`),
    /// by client: this node's (`local:ID`) or another node's (`NODE:ID`, told by that
    /// node), with the client's user and, for another node's, until when it holds
    /// unless told again (a node that died cannot clear its clients).
    visible: Mutex<HashMap<String, Shown>>,
    /// How delivery retries and times out.
    policy: deliver::Policy,
    /// In a cluster, where devices are kept instead of the store.
    shared: OnceLock<Arc<dyn SharedDevices>>,
    /// In a cluster, the key every node signs with (a device subscribed with one
    /// node's public key accepts only pushes signed by it).
    cluster_key: OnceLock<VapidKey>,
}

/// Why [`SharedDevices`] could not read or write the devices kept for the cluster.
#[derive(Debug, thiserror::Error)]
pub enum SharedDevicesError {
    /// The store failed the read or write; the message is what it said.
    #[error("{0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A device could not be written as JSON.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    /// No VAPID key is stored for the cluster, and this node's could not be stored.
    #[error("the cluster's VAPID key is neither stored nor storable")]
    NoKey,
}

impl SharedDevicesError {
    /// The store's own failure.
    pub fn store(e: impl std::error::Error + Send + Sync + 'static) -> SharedDevicesError {
        SharedDevicesError::Store(Box::new(e))
    }
}

/// Devices kept where every node of a cluster reads them (a JetStream KV bucket).
pub trait SharedDevices: Send + Sync {
    /// Every device kept.
    fn all(&self) -> BoxFuture<'static, Result<Vec<PushTarget>, SharedDevicesError>>;
    /// Adds or replaces a device (by id).
    fn put(&self, target: PushTarget) -> BoxFuture<'static, Result<(), SharedDevicesError>>;
    /// Removes a device.
    fn remove(&self, id: String) -> BoxFuture<'static, Result<(), SharedDevicesError>>;
    /// The cluster's VAPID key (PKCS#8 DER): the one stored, else `mine`, stored now.
    fn key(&self, mine: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, SharedDevicesError>>;
}

/// A shared store's failure, for the caller.
fn unavailable(e: SharedDevicesError) -> RuntimeError {
    RuntimeError::Internal(format!("the cluster's push devices cannot be read: {e}"))
}

/// What one client shows.
#[derive(Debug, Clone)]
struct Shown {
    /// The client's user.
    user_id: UserId,
    /// The sessions on its screen.
    sessions: Vec<SessionId>,
    /// For another node's client: when this lapses unless told again.
    until: Option<std::time::Instant>,
}

/// How long another node's word that its client shows a session holds: the page
/// says it again every minute while visible.
pub const REMOTE_SHOWN_FOR: std::time::Duration = std::time::Duration::from_secs(150);

/// A moment of a session its owner's devices may be told of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    /// The session's owner.
    pub user_id: UserId,
    /// The session.
    pub session_id: SessionId,
    /// Its title.
    pub title: String,
    /// What it asks of its owner now.
    pub attention: Attention,
    /// What waits, for a person: the tool to approve, why the turn failed.
    pub what: String,
    /// The waiting permission request, when one waits (the notification's actions
    /// answer it).
    pub request_id: Option<RequestId>,
}

/// Whether `notify` asks for a push when a session's attention becomes `attention`.
pub fn wanted(notify: Notify, attention: Attention) -> bool {
    match attention {
        Attention::None => false,
        Attention::NeedsInput | Attention::Failed => notify != Notify::None,
        Attention::DoneUnseen => notify == Notify::All,
    }
}

impl Push {
    /// Loads (or makes, at first start) the VAPID key in `data_dir`.
    pub fn open(data_dir: &Path, store: Store) -> Result<Push, VapidError> {
        Ok(Push {
            inner: Arc::new(PushInner {
                key: VapidKey::load_or_create(data_dir)?,
                store,
                visible: Mutex::default(),
                policy: deliver::Policy::default(),
                shared: OnceLock::new(),
                cluster_key: OnceLock::new(),
            }),
        })
    }

    /// The key pushes are signed with: the cluster's, else this node's.
    fn key(&self) -> &VapidKey {
        self.inner.cluster_key.get().unwrap_or(&self.inner.key)
    }

    /// Keeps devices in `shared` from now on (the node joined a cluster); the devices
    /// this node's store holds are copied there.
    pub async fn share(&self, shared: Arc<dyn SharedDevices>) -> Result<(), RuntimeError> {
        let der = shared
            .key(self.inner.key.der().to_vec())
            .await
            .map_err(unavailable)?;
        if der != self.inner.key.der() {
            let key = VapidKey::from_der(der)?;
            tracing::info!(public = %key.public(), "signing pushes with the cluster's VAPID key");
            let _ = self.inner.cluster_key.set(key);
        }
        let store = self.inner.store.clone();
        let local = blocking(move || store.all_push_subscriptions()).await?;
        let there = shared.all().await.map_err(unavailable)?;
        for target in local {
            if !there.iter().any(|t| t.id == target.id) {
                shared.put(target).await.map_err(unavailable)?;
            }
        }
        let _ = self.inner.shared.set(shared);
        Ok(())
    }

    /// The devices of `user_id`, oldest first.
    pub async fn devices(&self, user_id: &str) -> Result<Vec<PushTarget>, RuntimeError> {
        match self.inner.shared.get() {
            Some(shared) => {
                let mut mine: Vec<PushTarget> = shared
                    .all()
                    .await
                    .map_err(unavailable)?
                    .into_iter()
                    .filter(|t| t.user_id == user_id)
                    .collect();
                mine.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
                Ok(mine)
            }
            None => {
                let (store, user) = (self.inner.store.clone(), user_id.to_string());
                blocking(move || store.push_subscriptions(&user)).await
            }
        }
    }

    /// Registers a device of `user_id` (its keys checked by the caller); the same
    /// endpoint again renews that device.
    pub async fn add(
        &self,
        user_id: &str,
        endpoint: &str,
        p256dh: Vec<u8>,
        auth: Vec<u8>,
        label: Option<String>,
    ) -> Result<PushTarget, RuntimeError> {
        let Some(shared) = self.inner.shared.get() else {
            let store = self.inner.store.clone();
            let (user, endpoint) = (user_id.to_string(), endpoint.to_string());
            return blocking(move || {
                store.add_push_subscription(&user, &endpoint, &p256dh, &auth, label.as_deref())
            })
            .await;
        };
        let mine = self.devices(user_id).await?;
        let count = mine.len();
        let target = match mine.into_iter().find(|t| t.endpoint == endpoint) {
            Some(old) => PushTarget {
                p256dh,
                auth,
                label,
                ..old
            },
            None if count >= MAX_PER_USER => {
                return Err(RuntimeError::LimitExceeded(format!(
                    "at most {MAX_PER_USER} push subscriptions per user; remove one first"
                )))
            }
            None => PushTarget {
                id: random_id("psub_", 12),
                user_id: user_id.into(),
                endpoint: endpoint.to_string(),
                p256dh,
                auth,
                label,
                created_at: now_ms(),
            },
        };
        shared.put(target.clone()).await.map_err(unavailable)?;
        Ok(target)
    }

    /// Removes a device of `user_id`; false when the user has none of that id.
    pub async fn remove(&self, user_id: &str, id: &str) -> Result<bool, RuntimeError> {
        match self.inner.shared.get() {
            Some(shared) => {
                let owned = self.devices(user_id).await?.iter().any(|t| t.id == id);
                if owned {
                    shared.remove(id.to_string()).await.map_err(unavailable)?;
                }
                Ok(owned)
            }
            None => {
                let (store, user, id) = (
                    self.inner.store.clone(),
                    user_id.to_string(),
                    id.to_string(),
                );
                blocking(move || store.remove_push_subscription(&user, &id)).await
            }
        }
    }

    /// The VAPID public key (base64url), for `pushManager.subscribe`.
    pub fn public_key(&self) -> &str {
        self.key().public()
    }

    /// Records that client `client` (`local:ID` for this node's WebSocket clients,
    /// `NODE:ID` for another node's) of `user_id` shows `sessions` in a visible tab
    /// (none: nothing, or the tab is hidden, or the client left). Another node's word
    /// holds for [`REMOTE_SHOWN_FOR`] unless said again.
    pub fn set_visible(&self, client: &str, user_id: &str, sessions: Vec<SessionId>) {
        let mut visible = match self.inner.visible.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = std::time::Instant::now();
        visible.retain(|_, s| s.until.is_none_or(|until| until > now));
        if sessions.is_empty() {
            visible.remove(client);
        } else {
            let until = (!client.starts_with("local:")).then(|| now + REMOTE_SHOWN_FOR);
            visible.insert(
                client.to_string(),
                Shown {
                    user_id: user_id.into(),
                    sessions,
                    until,
                },
            );
        }
    }

    /// True when a client of `user_id` shows `session` now.
    pub fn shown(&self, user_id: &str, session: &str) -> bool {
        let visible = match self.inner.visible.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let now = std::time::Instant::now();
        visible.values().any(|s| {
            s.user_id == user_id
                && s.until.is_none_or(|until| until > now)
                && s.sessions.iter().any(|id| id == session)
        })
    }

    /// Tells the owner's devices of `moment`, unless a client of the owner shows the
    /// session. Runs in the background on the calling arbiter: a slow or failing
    /// push service never holds up the session.
    pub fn notify(&self, moment: Moment) {
        if self.shown(&moment.user_id, &moment.session_id) {
            tracing::debug!(session = %moment.session_id, "shown on a client; no push");
            return;
        }
        let push = self.clone();
        actix_rt::spawn(async move {
            let targets = match push.devices(&moment.user_id).await {
                Ok(targets) => targets,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read push subscriptions");
                    return;
                }
            };
            if targets.is_empty() {
                return;
            }
            let message = deliver::Message::of(&moment);
            let client = deliver::client(&push.inner.policy);
            let sends = targets.into_iter().map(|target| {
                let push = push.clone();
                let (client, message) = (&client, &message);
                async move {
                    let (user, id) = (target.user_id.clone(), target.id.clone());
                    let gone = deliver::deliver(
                        client,
                        push.key(),
                        DEFAULT_SUBJECT,
                        &push.inner.policy,
                        target,
                        message,
                    )
                    .await;
                    if gone {
                        if let Err(e) = push.remove(&user, &id).await {
                            tracing::error!(error = %e, "cannot remove a push subscription");
                        }
                    }
                }
            });
            futures_util::future::join_all(sends).await;
        });
    }
}

impl From<VapidError> for crate::error::RuntimeError {
    fn from(e: VapidError) -> Self {
        match e {
            VapidError::Io { path, source } => crate::error::RuntimeError::DataDir { path, source },
            other => crate::error::RuntimeError::Internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_settings_choose_the_moments() {
        use Attention::*;
        assert!(wanted(Notify::Attention, NeedsInput) && wanted(Notify::Attention, Failed));
        assert!(!wanted(Notify::Attention, DoneUnseen) && !wanted(Notify::Attention, None));
        assert!(wanted(Notify::All, DoneUnseen) && wanted(Notify::All, NeedsInput));
        assert!(!wanted(Notify::None, NeedsInput) && !wanted(Notify::None, Failed));
    }
}
