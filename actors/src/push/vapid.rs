//! The server's VAPID identity (RFC 8292): an ECDSA P-256 key made at first start and
//! kept in the data directory (0600), and the ES256 JWT that signs each push request
//! for the push service's origin.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};

/// The key's file in the data directory: PKCS#8 DER.
pub const KEY_FILE: &str = "vapid-key.p8";
/// How long a signature is good for: RFC 8292 allows at most 24 hours; push services
/// refuse a token that outlives it, so stay well inside.
const LIFETIME_SECS: u64 = 12 * 3600;

/// Why the key could not be loaded, made or used.
#[derive(Debug, thiserror::Error)]
pub enum VapidError {
    /// Reading or writing the key file failed.
    #[error("{path}: {source}")]
    Io {
        /// The key file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file holds no P-256 key.
    #[error("{0}: not a P-256 private key in PKCS#8")]
    BadKey(PathBuf),
    /// Key generation or signing failed.
    #[error("signing failed")]
    Crypto,
}

/// The server's signing key and its public half.
pub struct VapidKey {
    /// The key as stored (PKCS#8 DER), for the cluster's copy.
    der: Vec<u8>,
    pair: EcdsaKeyPair,
    rng: SystemRandom,
    /// The public key, uncompressed, base64url: `applicationServerKey` for
    /// `pushManager.subscribe` and the `k` of each request.
    public: String,
}

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the private key.
        f.debug_struct("VapidKey")
            .field("public", &self.public)
            .finish()
    }
}

impl VapidKey {
    /// Loads the key from `data_dir`, making it (0600) at first start.
    pub fn load_or_create(data_dir: &Path) -> Result<VapidKey, VapidError> {
        let path = data_dir.join(KEY_FILE);
        let io = |source| VapidError::Io {
            path: path.clone(),
            source,
        };
        let rng = SystemRandom::new();
        let der = match std::fs::read(&path) {
            Ok(der) => der,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .map_err(|_| VapidError::Crypto)?;
                let tmp = data_dir.join(format!("{KEY_FILE}.tmp"));
                let mut file = crate::store::private_file(&tmp).map_err(io)?;
                file.write_all(doc.as_ref())
                    .and_then(|()| file.sync_all())
                    .map_err(io)?;
                std::fs::rename(&tmp, &path).map_err(io)?;
                tracing::info!(path = %path.display(), "made the Web Push (VAPID) key");
                doc.as_ref().to_vec()
            }
            Err(e) => return Err(io(e)),
        };
        VapidKey::from_der(der).map_err(|_| VapidError::BadKey(path.clone()))
    }

    /// A key from its PKCS#8 DER (the cluster's, shared by every node).
    pub fn from_der(der: Vec<u8>) -> Result<VapidKey, VapidError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
            .map_err(|_| VapidError::Crypto)?;
        let public = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        Ok(VapidKey {
            der,
            pair,
            rng,
            public,
        })
    }

    /// The key as stored (PKCS#8 DER).
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// The public key, uncompressed point, base64url without padding.
    pub fn public(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push request to `endpoint`'s origin, valid
    /// from `now_secs` (Unix time) for 12 hours; `subject` is who the push service
    /// may contact (`mailto:` or `https:`).
    pub fn authorization(
        &self,
        endpoint: &str,
        subject: &str,
        now_secs: u64,
    ) -> Result<String, VapidError> {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": origin(endpoint),
            "exp": now_secs + LIFETIME_SECS,
            "sub": subject,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        // ES256 in a JWS is r || s, 64 bytes: ring's fixed-length signature.
        let signature = self
            .pair
            .sign(&self.rng, signed.as_bytes())
            .map_err(|_| VapidError::Crypto)?;
        let signature = URL_SAFE_NO_PAD.encode(signature.as_ref());
        Ok(format!("vapid t={signed}.{signature}, k={}", self.public))
    }
}

/// `scheme://host[:port]` of a URL: the audience a push service checks.
pub fn origin(endpoint: &str) -> String {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("https", endpoint));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    format!("{scheme}://{authority}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    #[test]
    fn the_key_is_kept_private_and_reused() {
        let dir = std::env::temp_dir().join(format!("tandem-vapid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = VapidKey::load_or_create(&dir).unwrap();
        let again = VapidKey::load_or_create(&dir).unwrap();
        assert_eq!(first.public(), again.public());
        assert_eq!(URL_SAFE_NO_PAD.decode(first.public()).unwrap().len(), 65);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!format!("{first:?}").contains("pair"));
        std::fs::write(dir.join(KEY_FILE), b"junk").unwrap();
        assert!(matches!(
            VapidKey::load_or_create(&dir),
            Err(VapidError::BadKey(_))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_token_names_the_push_services_origin_and_verifies() {
        let dir = std::env::temp_dir().join(format!("tandem-vapid-jwt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = VapidKey::load_or_create(&dir).unwrap();
        let header = key
            .authorization(
                "https://push.example.net:8443/send/abc?x=1",
                "mailto:a@b.c",
                1000,
            )
            .unwrap();
        let (t, k) = header
            .strip_prefix("vapid t=")
            .unwrap()
            .split_once(", k=")
            .unwrap();
        assert_eq!(k, key.public());
        let (signed, signature) = t.rsplit_once('.').unwrap();
        let public = URL_SAFE_NO_PAD.decode(k).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).unwrap(),
            )
            .unwrap();
        let claims = signed.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(claims["aud"], "https://push.example.net:8443");
        assert_eq!(claims["exp"], 1000 + 12 * 3600);
        assert_eq!(claims["sub"], "mailto:a@b.c");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
