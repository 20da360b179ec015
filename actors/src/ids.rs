//! Ids every layer names: [`VendorId`], which vendor serves a session, as the server
//! handles it. A leaf: it imports no other module of the crate, so the stored record
//! (`record`) names a vendor without importing the adapters.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A vendor's id: `scripted`, `codex`, `claude`, or the key of an ACP agent's
/// `[vendors.<id>]` table. On the wire and in stored records it is the plain string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VendorId(Cow<'static, str>);

impl VendorId {
    /// The built-in scripted agent.
    pub const SCRIPTED: VendorId = VendorId(Cow::Borrowed("scripted"));
    /// Codex (`codex app-server`).
    pub const CODEX: VendorId = VendorId(Cow::Borrowed("codex"));
    /// Claude Code (`claude -p`, stream-json).
    pub const CLAUDE: VendorId = VendorId(Cow::Borrowed("claude"));

    /// The id `name` (as given on the wire or in the config file).
    pub fn new(name: impl Into<String>) -> Self {
        VendorId(Cow::Owned(name.into()))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the built-in scripted agent, which is never chosen for a person when a
    /// real vendor can serve.
    pub fn is_scripted(&self) -> bool {
        *self == Self::SCRIPTED
    }
}

impl fmt::Display for VendorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for VendorId {
    fn from(name: &str) -> Self {
        VendorId::new(name)
    }
}

impl From<String> for VendorId {
    fn from(name: String) -> Self {
        VendorId::new(name)
    }
}

impl From<VendorId> for String {
    fn from(id: VendorId) -> String {
        id.0.into_owned()
    }
}

impl PartialEq<str> for VendorId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for VendorId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
