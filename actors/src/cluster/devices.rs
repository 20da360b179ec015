//! Web Push devices in a cluster: the KV bucket `tandem_push` (key = subscription
//! id, value = the device as JSON), read by every node, so the node that runs a
//! session reaches its owner's devices whichever node registered them; and the one
//! VAPID key every node signs with (key `vapid-key`: the first node's), since a push
//! service takes a device's pushes only when signed with the key it subscribed with.

use async_nats::jetstream::kv::Store;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};

use crate::push::{SharedDevices, SharedDevicesError};
use crate::store::push::PushTarget;

/// The bucket's name.
pub const BUCKET: &str = "tandem_push";
/// The key of the cluster's VAPID key; devices are `psub_…`.
const KEY: &str = "vapid-key";

/// [`SharedDevices`] on the `tandem_push` bucket.
pub struct KvDevices {
    /// The bucket.
    pub kv: Store,
}

impl SharedDevices for KvDevices {
    fn all(&self) -> BoxFuture<'static, Result<Vec<PushTarget>, SharedDevicesError>> {
        let kv = self.kv.clone();
        async move {
            let mut keys = kv.keys().await.map_err(SharedDevicesError::store)?;
            let mut out = Vec::new();
            while let Some(key) = keys.next().await {
                let key = key.map_err(SharedDevicesError::store)?;
                if key == KEY {
                    continue;
                }
                if let Some(value) = kv.get(&key).await.map_err(SharedDevicesError::store)? {
                    match serde_json::from_slice::<PushTarget>(&value) {
                        Ok(target) => out.push(target),
                        Err(e) => tracing::warn!(%key, error = %e, "unreadable push device"),
                    }
                }
            }
            Ok(out)
        }
        .boxed()
    }

    fn put(&self, target: PushTarget) -> BoxFuture<'static, Result<(), SharedDevicesError>> {
        let kv = self.kv.clone();
        async move {
            let value = serde_json::to_vec(&target)?;
            kv.put(&target.id, value.into())
                .await
                .map(|_| ())
                .map_err(SharedDevicesError::store)
        }
        .boxed()
    }

    fn remove(&self, id: String) -> BoxFuture<'static, Result<(), SharedDevicesError>> {
        let kv = self.kv.clone();
        async move { kv.delete(&id).await.map_err(SharedDevicesError::store) }.boxed()
    }

    fn key(&self, mine: Vec<u8>) -> BoxFuture<'static, Result<Vec<u8>, SharedDevicesError>> {
        let kv = self.kv.clone();
        async move {
            // `create` only when absent: two nodes joining at once agree on one key.
            if kv.create(KEY, mine.clone().into()).await.is_ok() {
                return Ok(mine);
            }
            match kv.get(KEY).await.map_err(SharedDevicesError::store)? {
                Some(stored) => Ok(stored.to_vec()),
                None => Err(SharedDevicesError::NoKey),
            }
        }
        .boxed()
    }
}
