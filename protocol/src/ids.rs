//! The ids every layer names, one type per kind of thing: a session's id cannot be
//! passed where a pair's is expected. A leaf: it imports nothing else of the crate.
//!
//! Each is a string on the wire (`#[serde(transparent)]`, and the same in the JSON
//! Schema), so typing them changed no frame. The server makes them with a prefix
//! (`ses_`, `pair_`, `turn_`, `dlg_`, `perm_`, `up_`); a client may name any string,
//! which the server then looks up and refuses when unknown, so parsing accepts any.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares a string id newtype with the conversions the layers use: from `String`
/// and `&str` (a client's or a stored value), to `&str` (by `Deref`, `AsRef` and
/// `Borrow`, so maps keyed by the id are found by a `&str`), and comparisons with
/// strings.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(String);

        /// A plain string in the schema, inlined where it is used: the documents
        /// describe the wire, where the id is a string.
        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                String::json_schema(generator)
            }
        }

        impl $name {
            /// The id `value` (as a client or the store names it).
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            /// The id as a string.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's string, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }

        impl From<&String> for $name {
            fn from(value: &String) -> Self {
                Self(value.clone())
            }
        }

        impl From<&$name> for $name {
            fn from(value: &$name) -> Self {
                value.clone()
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<&$name> for $name {
            fn eq(&self, other: &&$name) -> bool {
                self == *other
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

string_id!(
    /// A session's id (`ses_` and 24 hex digits when the server makes it).
    SessionId
);
string_id!(
    /// A Driver/Worker pair's id (`pair_…`).
    PairId
);
string_id!(
    /// A turn's id within its session (`turn_N`, N counting from 1).
    TurnId
);
string_id!(
    /// A delegation's id (`dlg_…`): one message a Driver sent its Worker.
    DelegationId
);
string_id!(
    /// A permission request's id (`perm_…`), unique across the server: clients answer
    /// by it.
    RequestId
);
string_id!(
    /// A user's id: the owner of sessions and tokens.
    UserId
);
string_id!(
    /// An upload's id (`up_` and the SHA-256 of its bytes): content-addressed.
    UploadId
);

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

impl TurnId {
    /// The id of a session's `n`th turn (`turn_N`), as the server numbers them.
    pub fn nth(n: u64) -> Self {
        Self(format!("turn_{n}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_a_plain_string_on_the_wire() {
        let id = SessionId::from("ses_1");
        assert_eq!(serde_json::to_string(&id).unwrap_or_default(), "\"ses_1\"");
        let back: PairId = serde_json::from_str("\"pair_9\"").unwrap_or_default();
        assert_eq!(back, "pair_9");
        let schema = schemars::schema_for!(TurnId);
        assert_eq!(schema.get("type"), Some(&serde_json::json!("string")));
    }

    #[test]
    fn a_map_keyed_by_an_id_is_found_by_a_str() {
        let mut map = std::collections::HashMap::new();
        map.insert(UserId::from("alice"), 1);
        assert_eq!(map.get("alice"), Some(&1));
        assert_eq!(TurnId::nth(3), "turn_3");
    }
}
