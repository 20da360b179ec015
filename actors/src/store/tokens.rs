//! Users and their tokens. The database holds only the SHA-256 digest of each token
//! (`users.token_hash`, hex): a copied or backed-up `tandem.db` gives no access. A
//! token carries 192 random bits, so an unsalted fast digest is enough; lookups go by
//! digest and the stored digest is compared in constant time.
//!
//! The admin token alone is also kept in `admin-token` (0600) in the data directory
//! (0700), so `tandem token show` can print it again; other users' tokens are shown
//! once, when they are made.

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use super::Store;
use crate::clock::{now_ms, random_token};
use crate::error::RuntimeError;

/// Random bytes in a token (192 bits), hex-encoded after the `tdm_` prefix.
const TOKEN_BYTES: usize = 24;
/// The file holding the admin token, in the data directory.
pub const ADMIN_TOKEN_FILE: &str = "admin-token";

/// A SHA-256 digest of a token.
pub type TokenDigest = [u8; 32];

/// The digest of `token`: only digests are stored, so a leaked database holds no token.
pub fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// Equality of two digests in time independent of where they differ.
pub fn digests_equal(a: &TokenDigest, b: &TokenDigest) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub(super) fn to_hex(d: &TokenDigest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(s: &str) -> Option<TokenDigest> {
    let mut out = [0u8; 32];
    if s.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A fresh token: `tdm_` and 192 random bits in hex.
pub fn new_token() -> Result<String, RuntimeError> {
    Ok(random_token("tdm_", TOKEN_BYTES)?)
}

/// One user, as `tandem user list` shows it (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    /// The user's id; sessions record it as their owner.
    pub id: String,
    /// May see and drive every session.
    pub admin: bool,
    /// When the user was added, epoch milliseconds.
    pub created_at: u64,
}

/// Renames a plain-text `users.token` column to `token_hash` and replaces each token
/// by its digest (databases written before tokens were hashed). The admin's plain
/// token is first saved to `admin-token`, so the person can still print it.
pub(super) fn migrate(conn: &Connection, data_dir: &Path) -> Result<(), RuntimeError> {
    let has_plain: bool = conn
        .prepare("SELECT 1 FROM pragma_table_info('users') WHERE name = 'token'")?
        .exists([])?;
    if !has_plain {
        return Ok(());
    }
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT id, token FROM users")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if let Some((_, token)) = rows.iter().find(|(id, _)| id == crate::access::ADMIN_USER) {
        write_admin_file(data_dir, token)?;
    }
    // Zero the plain tokens' old bytes rather than leave them in free space, and
    // checkpoint so no copy stays in the WAL.
    conn.pragma_update(None, "secure_delete", "ON")?;
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch("ALTER TABLE users RENAME COLUMN token TO token_hash")?;
    for (id, token) in &rows {
        tx.execute(
            "UPDATE users SET token_hash = ?1 WHERE id = ?2",
            params![to_hex(&digest(token)), id],
        )?;
    }
    tx.commit()?;
    conn.pragma_update(None, "secure_delete", "OFF")?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    tracing::info!(
        users = rows.len(),
        "stored tokens replaced by their SHA-256 digests"
    );
    Ok(())
}

/// Writes the admin token to `admin-token`, readable by the owner only.
fn write_admin_file(data_dir: &Path, token: &str) -> Result<(), RuntimeError> {
    let path = data_dir.join(ADMIN_TOKEN_FILE);
    let tmp = data_dir.join(format!("{ADMIN_TOKEN_FILE}.tmp"));
    let io = |path: &PathBuf| {
        let path = path.clone();
        move |source| RuntimeError::DataDir { path, source }
    };
    let mut file = super::private_file(&tmp).map_err(io(&tmp))?;
    file.write_all(format!("{token}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    Ok(())
}

impl Store {
    fn data_dir(&self) -> &Path {
        self.path().parent().unwrap_or_else(|| Path::new("."))
    }

    /// The user a token belongs to: `(user_id, admin)`.
    pub fn user_by_token(&self, token: &str) -> Result<Option<(String, bool)>, RuntimeError> {
        let wanted = digest(token);
        // A user's own token, or one of the user's paired devices' (`store::devices`):
        // a device acts as its user, and goes with it when the user is revoked.
        let row: Option<(String, bool, String)> = self.with_reader(|conn| {
            let hex = to_hex(&wanted);
            let own = conn
                .query_row(
                    "SELECT id, admin, token_hash FROM users WHERE token_hash = ?1",
                    [&hex],
                    |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?)),
                )
                .optional()?;
            match own {
                Some(row) => Ok(Some(row)),
                None => conn
                    .query_row(
                        "SELECT u.id, u.admin, d.token_hash FROM devices d \
                         JOIN users u ON u.id = d.user_id WHERE d.token_hash = ?1",
                        [&hex],
                        |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?)),
                    )
                    .optional(),
            }
        })?;
        Ok(row.and_then(|(id, admin, stored)| {
            let stored = from_hex(&stored)?;
            digests_equal(&stored, &wanted).then_some((id, admin))
        }))
    }

    /// Adds a user and returns its new token (shown once; only its digest is kept).
    /// An existing id is an error: tokens are never silently replaced.
    pub fn add_user(&self, id: &str, admin: bool) -> Result<String, RuntimeError> {
        let token = new_token()?;
        let inserted = self.with_reader(|conn| {
            conn.execute(
                "INSERT OR IGNORE INTO users (id, token_hash, admin, created_at) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![id, to_hex(&digest(&token)), admin as i64, now_ms() as i64],
            )
        })?;
        if inserted == 0 {
            return Err(RuntimeError::InvalidArgument(format!(
                "user `{id}` already exists"
            )));
        }
        // A user of a revoked id is that user again: its sessions take commands.
        self.with_reader(|conn| conn.execute("DELETE FROM revoked_users WHERE id = ?1", [id]))?;
        Ok(token)
    }

    /// True when a user of this id exists now.
    pub fn user_exists(&self, id: &str) -> Result<bool, RuntimeError> {
        self.with_reader(|conn| {
            conn.prepare_cached("SELECT 1 FROM users WHERE id = ?1")?
                .exists([id])
        })
    }

    /// True when the user was removed with [`Store::revoke_user`] and not added again.
    /// An id that never was a user here is not revoked (in a cluster, a session's
    /// owner may be a user of another node).
    pub fn user_revoked(&self, id: &str) -> Result<bool, RuntimeError> {
        self.with_reader(|conn| {
            conn.prepare_cached("SELECT 1 FROM revoked_users WHERE id = ?1")?
                .exists([id])
        })
    }

    /// Every user, sorted by id.
    pub fn list_users(&self) -> Result<Vec<UserRow>, RuntimeError> {
        self.with_reader(|conn| {
            conn.prepare("SELECT id, admin, created_at FROM users ORDER BY id")?
                .query_map([], |r| {
                    Ok(UserRow {
                        id: r.get(0)?,
                        admin: r.get::<_, i64>(1)? != 0,
                        created_at: r.get::<_, i64>(2)?.max(0) as u64,
                    })
                })?
                .collect()
        })
    }

    /// Removes a user: its token stops working (within a second on a running
    /// server). Its sessions stay, and are marked as a revoked user's (see
    /// [`Store::user_revoked`]) in the same transaction. False when there was no such
    /// user.
    pub fn revoke_user(&self, id: &str) -> Result<bool, RuntimeError> {
        let removed = self.with_reader(|conn| {
            let tx = conn.unchecked_transaction()?;
            let removed = tx.execute("DELETE FROM users WHERE id = ?1", [id])?;
            // The user's devices and codes go too: a user added again under this id
            // must pair anew, not find old phones still signed in.
            tx.execute("DELETE FROM devices WHERE user_id = ?1", [id])?;
            tx.execute("DELETE FROM pairing_codes WHERE user_id = ?1", [id])?;
            if removed > 0 {
                tx.execute(
                    "INSERT OR REPLACE INTO revoked_users (id, revoked_at) VALUES (?1, ?2)",
                    params![id, now_ms() as i64],
                )?;
            }
            tx.commit()?;
            Ok(removed)
        })?;
        if removed > 0 && id == crate::access::ADMIN_USER {
            let _ = std::fs::remove_file(self.data_dir().join(ADMIN_TOKEN_FILE));
        }
        Ok(removed > 0)
    }

    /// Gives a user a new token (the old one stops working) and returns it.
    pub fn rotate_token(&self, id: &str) -> Result<String, RuntimeError> {
        let token = new_token()?;
        let changed = self.with_reader(|conn| {
            conn.execute(
                "UPDATE users SET token_hash = ?1 WHERE id = ?2",
                params![to_hex(&digest(&token)), id],
            )
        })?;
        if changed == 0 {
            return Err(RuntimeError::InvalidArgument(format!(
                "no user `{id}` (tandem user list shows them)"
            )));
        }
        if id == crate::access::ADMIN_USER {
            write_admin_file(self.data_dir(), &token)?;
        }
        Ok(token)
    }

    /// Creates the admin user on first use. Returns its token when it was created
    /// now (to be shown once), `None` when it already existed.
    pub fn ensure_admin(&self) -> Result<Option<String>, RuntimeError> {
        let exists = self.with_reader(|conn| {
            conn.prepare("SELECT 1 FROM users WHERE id = ?1")?
                .exists([crate::access::ADMIN_USER])
        })?;
        if exists {
            return Ok(None);
        }
        let token = new_token()?;
        write_admin_file(self.data_dir(), &token)?;
        let inserted = self.with_reader(|conn| {
            conn.execute(
                "INSERT OR IGNORE INTO users (id, token_hash, admin, created_at) \
                 VALUES (?1, ?2, 1, ?3)",
                params![
                    crate::access::ADMIN_USER,
                    to_hex(&digest(&token)),
                    now_ms() as i64
                ],
            )
        })?;
        self.with_reader(|conn| {
            conn.execute(
                "DELETE FROM revoked_users WHERE id = ?1",
                [crate::access::ADMIN_USER],
            )
        })?;
        Ok((inserted > 0).then_some(token))
    }

    /// The admin token, as kept in `admin-token`.
    pub fn admin_token(&self) -> Result<String, RuntimeError> {
        let path = self.data_dir().join(ADMIN_TOKEN_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|source| RuntimeError::DataDir { path, source })?;
        Ok(text.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revoked_user_stays_marked_until_added_again() {
        let dir = crate::testkit::Scratch::new("revoked");
        let store = Store::open(&dir.path().join("data")).unwrap();
        assert!(!store.user_revoked("carol").unwrap(), "never a user");
        store.add_user("carol", false).unwrap();
        assert!(store.user_exists("carol").unwrap());
        assert!(store.revoke_user("carol").unwrap());
        assert!(!store.user_exists("carol").unwrap());
        assert!(store.user_revoked("carol").unwrap());
        assert!(!store.revoke_user("carol").unwrap(), "gone already");
        store.add_user("carol", false).unwrap();
        assert!(!store.user_revoked("carol").unwrap(), "added again");
    }

    #[test]
    fn digests_compare() {
        let a = digest("tdm_a");
        assert!(digests_equal(&a, &digest("tdm_a")));
        assert!(!digests_equal(&a, &digest("tdm_b")));
        assert_eq!(from_hex(&to_hex(&a)), Some(a));
        assert_eq!(from_hex("zz"), None);
    }
}
