//! Pairing a phone: a one-time code made by a signed-in client (`device.pair-code`,
//! or `tandem pair`) travels in a QR code to the phone's page, which exchanges it
//! (`POST /api/v1/devices/pair`, no token needed) for a device token of the same user.
//! The user lists and revokes devices (`devices.list`, `device.revoke`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::operations::{Refusal, Validate};

/// JSON Schema `pattern` of a pairing code: 128 bits in lowercase hex.
pub const CODE: &str = r"^[0-9a-f]{32}$";
/// The longest device label.
pub const MAX_LABEL: usize = 100;

/// Fields of `device.pair-code` (none: the code is for the caller).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DevicePairCodeParams {}

/// A QR code as its modules, row by row: `1` dark, `0` light (no quiet zone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QrModules {
    /// Modules per side.
    pub size: u32,
    /// `size`² characters.
    pub modules: String,
}

/// `device.pair-code` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DevicePairCodeResult {
    /// The one-time code (used once, for 5 minutes).
    pub code: String,
    /// The link a phone opens: the page, with the code after `#/pair/`.
    pub url: String,
    /// When the code stops working, epoch milliseconds.
    pub expires_at: u64,
    /// False when the server listens on loopback only: another device cannot reach
    /// the link.
    pub reachable: bool,
    /// `url` as a QR code.
    pub qr: QrModules,
}

/// A paired device, as listed (never its token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceInfo {
    /// Its id, for `device.revoke`.
    pub id: String,
    /// What it was called when paired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When it was paired, epoch milliseconds.
    pub created_at: u64,
}

/// Fields of `devices.list` (none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DevicesListParams {}

/// `devices.list` reply: the caller's devices, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DevicesListResult {
    /// The devices.
    pub devices: Vec<DeviceInfo>,
}

/// Fields of `device.revoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceRevokeParams {
    /// The device's id.
    pub device_id: String,
}

/// `device.revoke` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRevokeResult {
    /// The device's id.
    pub device_id: String,
    /// Always true (a device the caller does not have is `NOT_FOUND`).
    pub revoked: bool,
}

/// Body of `POST /api/v1/devices/pair`: the code from the QR code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PairDeviceBody {
    /// The one-time code.
    #[schemars(regex(pattern = CODE))]
    pub code: String,
    /// What to call this device in the list.
    #[serde(default)]
    #[schemars(length(max = MAX_LABEL))]
    pub label: Option<String>,
}

impl Validate for PairDeviceBody {
    fn validate(&self) -> Result<(), Refusal> {
        let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        if self.code.len() != 32 || !self.code.chars().all(hex) {
            return Err(Refusal::invalid(
                "code must be the 32 lowercase hex digits of a pairing link",
            ));
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

/// `POST /api/v1/devices/pair` reply: the device's own token (shown once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairDeviceResult {
    /// The device's token: it acts as `userId` until the device is revoked.
    pub token: String,
    /// The user it acts as.
    pub user_id: UserId,
    /// The device.
    pub device: DeviceInfo,
}
