//! Web Push to a user's devices when one of their sessions needs them: the VAPID
//! identity ([`vapid`]), message encryption ([`ece`]), delivery with retries
//! ([`deliver`]) and what decides a push: a session's attention changing to
//! something its `notify` setting asks for, while no client of the owner shows it.

pub mod deliver;
pub mod ece;
pub mod vapid;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tandem_protocol::push::Notify;
use tandem_protocol::Attention;

use crate::store::Store;

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
    /// Which sessions each WebSocket client shows in a visible tab, with the
    /// client's user (`client.visible`).
    visible: Mutex<HashMap<u64, (String, Vec<String>)>>,
    /// How delivery retries and times out.
    policy: deliver::Policy,
}

/// A moment of a session its owner's devices may be told of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moment {
    /// The session's owner.
    pub user_id: String,
    /// The session.
    pub session_id: String,
    /// Its title.
    pub title: String,
    /// What it asks of its owner now.
    pub attention: Attention,
    /// What waits, for a person: the tool to approve, why the turn failed.
    pub what: String,
    /// The waiting permission request, when one waits (the notification's actions
    /// answer it).
    pub request_id: Option<String>,
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
            }),
        })
    }

    /// The VAPID public key (base64url), for `pushManager.subscribe`.
    pub fn public_key(&self) -> &str {
        self.inner.key.public()
    }

    /// Records that WebSocket client `client` of `user_id` shows `sessions` in a
    /// visible tab (none: nothing, or the tab is hidden, or the client left).
    pub fn set_visible(&self, client: u64, user_id: &str, sessions: Vec<String>) {
        let mut visible = match self.inner.visible.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if sessions.is_empty() {
            visible.remove(&client);
        } else {
            visible.insert(client, (user_id.to_string(), sessions));
        }
    }

    /// True when a client of `user_id` shows `session` now.
    pub fn shown(&self, user_id: &str, session: &str) -> bool {
        let visible = match self.inner.visible.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        visible
            .values()
            .any(|(u, shown)| u == user_id && shown.iter().any(|s| s == session))
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
            let store = push.inner.store.clone();
            let user = moment.user_id.clone();
            let targets =
                match tokio::task::spawn_blocking(move || store.push_subscriptions(&user)).await {
                    Ok(Ok(targets)) => targets,
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "cannot read push subscriptions");
                        return;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "push subscription read stopped");
                        return;
                    }
                };
            if targets.is_empty() {
                return;
            }
            let message = deliver::Message::of(&moment);
            let client = deliver::client(&push.inner.policy);
            let sends = targets.into_iter().map(|target| {
                deliver::deliver(
                    &client,
                    &push.inner.key,
                    DEFAULT_SUBJECT,
                    &push.inner.policy,
                    &push.inner.store,
                    target,
                    &message,
                )
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
