//! Paired devices: a one-time pairing code (5 minutes, used once) made for a user is
//! exchanged by a phone's page for a device token of its own, which acts as that user
//! until the user revokes the device (or is revoked). Only digests of codes and tokens
//! are kept. Written at once, as users are.

use rusqlite::{params, OptionalExtension};

use super::tokens::{digest, new_token, to_hex};
use super::Store;
use crate::clock::{now_ms, random_id, random_token};
use crate::error::RuntimeError;
use crate::ids::UserId;

/// How long a pairing code may be used.
pub const CODE_LIFETIME_MS: u64 = 5 * 60 * 1000;
/// Random bytes in a pairing code (128 bits): it travels in a QR code, never typed.
const CODE_BYTES: usize = 16;
/// At most this many devices per user.
pub const MAX_DEVICES: usize = 20;

/// A paired device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRow {
    /// Its id (`dev_` and hex).
    pub id: String,
    /// The user it acts as.
    pub user_id: UserId,
    /// What it was called when paired.
    pub label: Option<String>,
    /// When it was paired, epoch milliseconds.
    pub created_at: u64,
}

/// Why a pairing code was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairingRefused {
    /// No such code was ever made here.
    #[error(
        "unknown pairing code: make a new one with `tandem pair` or the page's \"Open on a phone\""
    )]
    Unknown,
    /// The code was exchanged already.
    #[error("this pairing code was already used: make a new one")]
    Used,
    /// The code's 5 minutes are over.
    #[error("this pairing code expired: make a new one")]
    Expired,
    /// The user already has the most devices.
    #[error("at most {MAX_DEVICES} devices per user: remove one first")]
    TooMany,
}

impl Store {
    /// Makes a pairing code for `user_id`; returns it and when it expires.
    pub fn new_pairing_code(&self, user_id: &str) -> Result<(String, u64), RuntimeError> {
        let code = random_token("", CODE_BYTES)?;
        let now = now_ms();
        let expires_at = now + CODE_LIFETIME_MS;
        self.with_reader(|conn| {
            // Old codes are of no use: keep the table small.
            conn.execute(
                "DELETE FROM pairing_codes WHERE expires_at < ?1",
                [now as i64 - CODE_LIFETIME_MS as i64],
            )?;
            conn.execute(
                "INSERT INTO pairing_codes (code_hash, user_id, expires_at) VALUES (?1, ?2, ?3)",
                params![to_hex(&digest(&code)), user_id, expires_at as i64],
            )
        })?;
        Ok((code, expires_at))
    }

    /// Exchanges a pairing code for a new device of its user and that device's token
    /// (shown once). A code works once, within its lifetime, for a user that still
    /// exists.
    pub fn redeem_pairing_code(
        &self,
        code: &str,
        label: Option<&str>,
    ) -> Result<Result<(DeviceRow, String), PairingRefused>, RuntimeError> {
        let token = new_token()?;
        let id = random_id("dev_", 8);
        let now = now_ms();
        self.with_reader(|conn| {
            let tx = conn.unchecked_transaction()?;
            let found: Option<(String, i64, Option<i64>)> = tx
                .query_row(
                    "SELECT c.user_id, c.expires_at, c.used_at FROM pairing_codes c \
                     JOIN users u ON u.id = c.user_id WHERE c.code_hash = ?1",
                    [to_hex(&digest(code))],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let user_id = match found {
                None => return Ok(Err(PairingRefused::Unknown)),
                Some((_, _, Some(_))) => return Ok(Err(PairingRefused::Used)),
                Some((_, expires, None)) if (expires as u64) < now => {
                    return Ok(Err(PairingRefused::Expired))
                }
                Some((user, _, None)) => user,
            };
            let count: i64 = tx.query_row(
                "SELECT COUNT(*) FROM devices WHERE user_id = ?1",
                [&user_id],
                |r| r.get(0),
            )?;
            if count as usize >= MAX_DEVICES {
                return Ok(Err(PairingRefused::TooMany));
            }
            tx.execute(
                "UPDATE pairing_codes SET used_at = ?2 WHERE code_hash = ?1",
                params![to_hex(&digest(code)), now as i64],
            )?;
            tx.execute(
                "INSERT INTO devices (id, user_id, token_hash, label, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, user_id, to_hex(&digest(&token)), label, now as i64],
            )?;
            tx.commit()?;
            Ok(Ok((
                DeviceRow {
                    id: id.clone(),
                    user_id: user_id.into(),
                    label: label.map(str::to_string),
                    created_at: now,
                },
                token.clone(),
            )))
        })
    }

    /// The devices paired for `user_id`, oldest first.
    pub fn devices(&self, user_id: &str) -> Result<Vec<DeviceRow>, RuntimeError> {
        self.with_reader(|conn| {
            conn.prepare_cached(
                "SELECT id, user_id, label, created_at FROM devices WHERE user_id = ?1 \
                 ORDER BY created_at, id",
            )?
            .query_map([user_id], |r| {
                Ok(DeviceRow {
                    id: r.get(0)?,
                    user_id: UserId::new(r.get::<_, String>(1)?),
                    label: r.get(2)?,
                    created_at: r.get::<_, i64>(3)? as u64,
                })
            })?
            .collect()
        })
    }

    /// Removes a device of `user_id`: its token stops working. False when the user
    /// has no device of that id.
    pub fn revoke_device(&self, user_id: &str, id: &str) -> Result<bool, RuntimeError> {
        self.with_reader(|conn| {
            conn.execute(
                "DELETE FROM devices WHERE id = ?1 AND user_id = ?2",
                params![id, user_id],
            )
        })
        .map(|n| n > 0)
    }
}
