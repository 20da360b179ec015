//! Web Push subscriptions: each a device of one user, kept until the user removes it
//! or its push service says it is gone. Written at once (not through the group-commit
//! writer): they are rare and the caller answers only after the row is on disk.

use rusqlite::{params, OptionalExtension};

use super::Store;
use crate::clock::{now_ms, random_id};
use crate::error::RuntimeError;
use crate::ids::UserId;

/// At most this many devices per user: each costs a request per notification.
pub const MAX_PER_USER: usize = 20;

/// One stored subscription (also a value of the cluster's shared bucket, so
/// serializable).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushTarget {
    /// Its id (`psub_` and hex).
    pub id: String,
    /// The user whose sessions it is told of.
    pub user_id: UserId,
    /// The push service's URL for this device.
    pub endpoint: String,
    /// The device's P-256 public key, uncompressed (65 bytes).
    pub p256dh: Vec<u8>,
    /// The device's 16-byte authentication secret.
    pub auth: Vec<u8>,
    /// What the user called the device.
    pub label: Option<String>,
    /// When it was registered, epoch milliseconds.
    pub created_at: u64,
}

const COLUMNS: &str = "id, user_id, endpoint, p256dh, auth, label, created_at";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PushTarget> {
    Ok(PushTarget {
        id: r.get(0)?,
        user_id: UserId::new(r.get::<_, String>(1)?),
        endpoint: r.get(2)?,
        p256dh: r.get(3)?,
        auth: r.get(4)?,
        label: r.get(5)?,
        created_at: r.get::<_, i64>(6)? as u64,
    })
}

impl Store {
    /// Registers a device for `user_id`. The same endpoint again replaces its keys
    /// and label and keeps its id (a browser renews its subscription that way).
    pub fn add_push_subscription(
        &self,
        user_id: &str,
        endpoint: &str,
        p256dh: &[u8],
        auth: &[u8],
        label: Option<&str>,
    ) -> Result<PushTarget, RuntimeError> {
        self.with_reader(|conn| {
            let tx = conn.unchecked_transaction()?;
            let existing: Option<String> = tx
                .query_row(
                    "SELECT id FROM push_subscriptions WHERE user_id = ?1 AND endpoint = ?2",
                    params![user_id, endpoint],
                    |r| r.get(0),
                )
                .optional()?;
            let id = match existing {
                Some(id) => {
                    tx.execute(
                        "UPDATE push_subscriptions SET p256dh = ?2, auth = ?3, label = ?4 \
                         WHERE id = ?1",
                        params![id, p256dh, auth, label],
                    )?;
                    id
                }
                None => {
                    let count: i64 = tx.query_row(
                        "SELECT COUNT(*) FROM push_subscriptions WHERE user_id = ?1",
                        [user_id],
                        |r| r.get(0),
                    )?;
                    if count as usize >= MAX_PER_USER {
                        return Ok(None);
                    }
                    let id = random_id("psub_", 12);
                    tx.execute(
                        "INSERT INTO push_subscriptions \
                         (id, user_id, endpoint, p256dh, auth, label, created_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        params![id, user_id, endpoint, p256dh, auth, label, now_ms() as i64],
                    )?;
                    id
                }
            };
            let target = tx.query_row(
                &format!("SELECT {COLUMNS} FROM push_subscriptions WHERE id = ?1"),
                [&id],
                row,
            )?;
            tx.commit()?;
            Ok(Some(target))
        })?
        .ok_or_else(|| {
            RuntimeError::LimitExceeded(format!(
                "at most {MAX_PER_USER} push subscriptions per user; remove one first"
            ))
        })
    }

    /// Every user's devices (moved to the cluster's bucket when the node joins one).
    pub fn all_push_subscriptions(&self) -> Result<Vec<PushTarget>, RuntimeError> {
        self.with_reader(|conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions ORDER BY created_at, id"
            ))?
            .query_map([], row)?
            .collect()
        })
    }

    /// The devices of `user_id`, oldest first.
    pub fn push_subscriptions(&self, user_id: &str) -> Result<Vec<PushTarget>, RuntimeError> {
        self.with_reader(|conn| {
            conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions WHERE user_id = ?1 \
                 ORDER BY created_at, id"
            ))?
            .query_map([user_id], row)?
            .collect()
        })
    }

    /// Removes a device of `user_id`; false when that user has none of this id.
    pub fn remove_push_subscription(&self, user_id: &str, id: &str) -> Result<bool, RuntimeError> {
        self.with_reader(|conn| {
            conn.execute(
                "DELETE FROM push_subscriptions WHERE id = ?1 AND user_id = ?2",
                params![id, user_id],
            )
        })
        .map(|n| n > 0)
    }
}
