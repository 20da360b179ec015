//! Paired devices: pairing codes for a signed-in user, their exchange for a device
//! token, and the user's list of devices (see `store::devices`).

use tandem_protocol::devices::DeviceInfo;

use super::AuthService;
use crate::access::Principal;
use crate::error::RuntimeError;
use crate::ids::UserId;
use crate::store::blocking;
use crate::store::devices::{DeviceRow, PairingRefused};

/// A pairing code as given out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingCode {
    /// The code.
    pub code: String,
    /// The link a phone opens.
    pub url: String,
    /// When it stops working, epoch milliseconds.
    pub expires_at: u64,
    /// False when the server listens on loopback only.
    pub reachable: bool,
}

fn listed(row: DeviceRow) -> DeviceInfo {
    DeviceInfo {
        id: row.id,
        label: row.label,
        created_at: row.created_at,
    }
}

impl AuthService {
    /// Sets where other devices reach this server: `scheme://HOST:PORT` with an
    /// address of this machine another device can use, and whether it is one (false
    /// for a loopback address). Set once, at start.
    pub fn set_public_url(&self, url: &str, reachable: bool) {
        let _ = self
            .public_url
            .set((url.trim_end_matches('/').to_string(), reachable));
    }

    /// A one-time pairing code for `who`, and the link that carries it.
    pub async fn pair_code(&self, who: &Principal) -> Result<PairingCode, RuntimeError> {
        let store = self.store.clone();
        let user = who.user_id.clone();
        let (code, expires_at) = blocking(move || store.new_pairing_code(&user)).await?;
        let (base, reachable) = self
            .public_url
            .get()
            .cloned()
            .unwrap_or_else(|| ("http://127.0.0.1:7420".to_string(), false));
        Ok(PairingCode {
            url: format!("{base}/#/pair/{code}"),
            code,
            expires_at,
            reachable,
        })
    }

    /// Exchanges a pairing code for a new device and its token. A code that is
    /// unknown, used or expired is `UNAUTHORIZED` with what went wrong.
    pub async fn pair_device(
        &self,
        code: &str,
        label: Option<String>,
    ) -> Result<(UserId, DeviceInfo, String), RuntimeError> {
        let store = self.store.clone();
        let code = code.to_string();
        let label = label
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty());
        match blocking(move || store.redeem_pairing_code(&code, label.as_deref())).await? {
            Ok((row, token)) => {
                tracing::info!(user = %row.user_id, device = %row.id, "device paired");
                let user = row.user_id.clone();
                Ok((user, listed(row), token))
            }
            Err(PairingRefused::TooMany) => Err(RuntimeError::LimitExceeded(
                PairingRefused::TooMany.to_string(),
            )),
            Err(refused) => Err(RuntimeError::PairingRefused(refused.to_string())),
        }
    }

    /// The devices paired for `who`, oldest first.
    pub async fn devices(&self, who: &Principal) -> Result<Vec<DeviceInfo>, RuntimeError> {
        let store = self.store.clone();
        let user = who.user_id.clone();
        let rows = blocking(move || store.devices(&user)).await?;
        Ok(rows.into_iter().map(listed).collect())
    }

    /// Revokes a device of `who`: its token stops working within a second. Another
    /// user's or an unknown device is `NOT_FOUND`.
    pub async fn revoke_device(&self, who: &Principal, id: &str) -> Result<(), RuntimeError> {
        let store = self.store.clone();
        let (user, device) = (who.user_id.clone(), id.to_string());
        if blocking(move || store.revoke_device(&user, &device)).await? {
            tracing::info!(user = %who.user_id, device = %id, "device revoked");
            Ok(())
        } else {
            Err(RuntimeError::Missing(format!("no device `{id:.64}`")))
        }
    }
}
