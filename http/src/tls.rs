//! TLS for `tandem serve`: `--tls-cert FILE --tls-key FILE` loads a certificate chain
//! and its private key (PEM); `--tls self-signed` makes a certificate for `localhost`
//! and the machine's addresses once, keeps it in the data directory (files 0600) and
//! uses the same one at every start, so a device that trusted it keeps trusting it.
//!
//! rustls with the ring provider serves it; the certificate's SHA-256 fingerprint is
//! printed at start so a person can compare it with what a browser or phone shows.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use sha2::Digest;

/// The self-signed certificate's file in the data directory.
pub const SELF_SIGNED_CERT: &str = "tls-self-signed.crt";
/// Its private key's file in the data directory.
pub const SELF_SIGNED_KEY: &str = "tls-self-signed.key";
/// How long a self-signed certificate is valid. Apple's platforms refuse TLS server
/// certificates valid for more than 825 days, even ones a person installed.
const VALID_DAYS: i64 = 825;
/// Made again this long before it expires, so a start never serves one about to lapse.
const RENEW_DAYS_BEFORE: i64 = 30;

/// Where the certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSource {
    /// `--tls-cert FILE --tls-key FILE`.
    Files {
        /// PEM certificate chain, the server's own certificate first.
        cert: PathBuf,
        /// PEM private key (PKCS#8, PKCS#1 or SEC1) of that certificate.
        key: PathBuf,
    },
    /// `--tls self-signed`: made once in the data directory.
    SelfSigned,
}

/// A loaded certificate, ready to serve.
#[derive(Clone)]
pub struct Tls {
    /// The rustls configuration (HTTP/1.1 only: the server speaks no HTTP/2).
    pub config: ServerConfig,
    /// SHA-256 of the server's certificate, `AB:CD:...`.
    pub fingerprint: String,
    /// The certificate file (to hand to clients that should trust it).
    pub cert_path: PathBuf,
}

impl std::fmt::Debug for Tls {
    // Never the key: only what identifies the certificate.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("fingerprint", &self.fingerprint)
            .field("cert_path", &self.cert_path)
            .finish_non_exhaustive()
    }
}

/// Why TLS could not be set up; each message names the file concerned.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read (missing, no permission, a directory).
    #[error("TLS {what} {path}: {source}")]
    Read {
        /// `certificate` or `key`.
        what: &'static str,
        /// The file, named in the message.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate, or a broken one.
    #[error("TLS certificate {path}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----){detail}")]
    NotCertPem {
        /// The file, named in the message.
        path: PathBuf,
        /// What the PEM reader said, when it said something.
        detail: String,
    },
    /// The key file holds no PEM private key, or a broken one.
    #[error("TLS key {path}: no PEM private key in it (expected -----BEGIN PRIVATE KEY-----, RSA or EC PRIVATE KEY): {detail}")]
    NotKeyPem {
        /// The file, named in the message.
        path: PathBuf,
        /// What the PEM reader said.
        detail: String,
    },
    /// rustls refused the pair: the key does not belong to the certificate, or either
    /// is of a kind it cannot use.
    #[error("TLS key {key} cannot serve certificate {cert}: {reason}")]
    Refused {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What rustls said, in words.
        reason: String,
    },
    /// The self-signed certificate could not be made.
    #[error("making the self-signed TLS certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// The self-signed certificate could not be written to the data directory.
    #[error("writing {path}: {source}")]
    Write {
        /// The file, named in the message.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// Loads (or, for `--tls self-signed`, makes once) the certificate. `data_dir` holds
/// the self-signed files; `bound` is the address served, named in a new certificate.
pub fn load(source: &TlsSource, data_dir: &Path, bound: IpAddr) -> Result<Tls, TlsError> {
    let (cert, key) = match source {
        TlsSource::Files { cert, key } => {
            warn_if_readable_by_others(key);
            (cert.clone(), key.clone())
        }
        TlsSource::SelfSigned => self_signed_files(data_dir, bound)?,
    };
    from_files(&cert, &key)
}

/// Reads a PEM chain and key and builds the rustls configuration.
fn from_files(cert_path: &Path, key_path: &Path) -> Result<Tls, TlsError> {
    let read = |what, path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Read {
            what,
            path: path.to_path_buf(),
            source,
        })
    };
    let cert_pem = read("certificate", cert_path)?;
    let key_pem = read("key", key_path)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::NotCertPem {
            path: cert_path.to_path_buf(),
            detail: format!(": {e}"),
        })?;
    let Some(leaf) = chain.first() else {
        return Err(TlsError::NotCertPem {
            path: cert_path.to_path_buf(),
            detail: String::new(),
        });
    };
    let fingerprint = fingerprint(leaf);
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::NotKeyPem {
        path: key_path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let refused = |e: rustls::Error| TlsError::Refused {
        cert: cert_path.to_path_buf(),
        key: key_path.to_path_buf(),
        reason: match e {
            rustls::Error::InconsistentKeys(_) => {
                "the key does not match the certificate (it belongs to another one)".into()
            }
            other => other.to_string(),
        },
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(refused)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(refused)?;
    // The HTTP layer is built for HTTP/1.1 only (WebSocket upgrades need it).
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        config,
        fingerprint,
        cert_path: cert_path.to_path_buf(),
    })
}

/// `AB:CD:...`: SHA-256 of a certificate's DER, as browsers and `openssl x509
/// -fingerprint -sha256` show it.
pub fn fingerprint(cert: &[u8]) -> String {
    sha2::Sha256::digest(cert)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The self-signed certificate and key files, made when missing (or expiring).
fn self_signed_files(data_dir: &Path, bound: IpAddr) -> Result<(PathBuf, PathBuf), TlsError> {
    let cert = data_dir.join(SELF_SIGNED_CERT);
    let key = data_dir.join(SELF_SIGNED_KEY);
    if cert.is_file() && key.is_file() && !expiring(&cert) {
        // Older files, or ones copied in, are kept private too.
        for path in [&cert, &key] {
            restrict(path)?;
        }
        return Ok((cert, key));
    }
    make_private_dir(data_dir)?;
    let names = certificate_names(bound);
    let key_pair = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(names.clone())?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "tandem (self-signed)");
    let now = time::OffsetDateTime::now_utc();
    // A day back: a device whose clock is a little behind still accepts it.
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(VALID_DAYS);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let certificate = params.self_signed(&key_pair)?;
    // The key first: a certificate file without its key would be reused as is.
    write_private(
        &key,
        pem("PRIVATE KEY", &key_pair.serialize_der()).as_bytes(),
    )?;
    write_private(&cert, pem("CERTIFICATE", certificate.der()).as_bytes())?;
    tracing::info!(
        cert = %cert.display(),
        names = %names.join(", "),
        "made a self-signed TLS certificate"
    );
    Ok((cert, key))
}

/// `der` as a PEM block with `label` (RFC 7468: base64 in lines of 64).
fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Was the certificate written so long ago that it expires within
/// [`RENEW_DAYS_BEFORE`]? Judged by the file's age: it is written once, when made.
fn expiring(cert: &Path) -> bool {
    let age = std::fs::metadata(cert)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok());
    age.is_some_and(|age| {
        age.as_secs() >= ((VALID_DAYS - RENEW_DAYS_BEFORE) * 86_400).unsigned_abs()
    })
}

/// The names a new certificate is for: `localhost`, the loopback addresses, every
/// address of the machine's interfaces, and the bound address when it is a specific one.
fn certificate_names(bound: IpAddr) -> Vec<String> {
    let mut ips: Vec<IpAddr> = vec![
        std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::Ipv6Addr::LOCALHOST.into(),
    ];
    match if_addrs::get_if_addrs() {
        Ok(interfaces) => ips.extend(interfaces.iter().map(|i| i.ip())),
        // Without them the certificate still serves localhost; say why a phone fails.
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the machine's addresses; the self-signed certificate names only localhost and the bound address")
        }
    }
    if !bound.is_unspecified() {
        ips.push(bound);
    }
    let mut names = vec!["localhost".to_string()];
    for ip in ips {
        let name = ip.to_string();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Creates the data directory (0700, as the store does) if it is missing.
fn make_private_dir(dir: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| TlsError::Write {
            path: dir.to_path_buf(),
            source,
        })
}

/// Writes `bytes` to `path` readable by its owner only: a temporary file made 0600,
/// then renamed over, so no one ever sees a partial or wider-open file.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    use std::os::unix::fs::OpenOptionsExt;
    let failed = |source| TlsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(failed)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(failed)?;
    std::fs::rename(&tmp, path).map_err(failed)
}

/// Makes an existing file of ours 0600.
fn restrict(path: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        TlsError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// A key given with `--tls-key` that others may read is served all the same (it is
/// the person's file), but they are told.
fn warn_if_readable_by_others(key: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(key) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                key = %key.display(),
                "the TLS private key file is readable by other users; chmod 600 it"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_colon_separated_upper_hex() {
        let f = fingerprint(b"abc");
        assert_eq!(
            f,
            "BA:78:16:BF:8F:01:CF:EA:41:41:40:DE:5D:AE:22:23:B0:03:61:A3:96:17:7A:9C:B4:10:FF:61:F2:00:15:AD"
        );
    }

    #[test]
    fn a_made_certificate_is_reused_and_made_again_before_it_lapses() {
        let dir = std::env::temp_dir().join(format!("tandem-tls-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bound = IpAddr::from([127, 0, 0, 1]);
        let first = load(&TlsSource::SelfSigned, &dir, bound).unwrap_or_else(|e| panic!("{e}"));
        let again = load(&TlsSource::SelfSigned, &dir, bound).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            first.fingerprint, again.fingerprint,
            "reused, not made again"
        );
        // One written (made) nearly its validity ago is made again before it lapses.
        let old = std::time::SystemTime::now()
            - std::time::Duration::from_secs(((VALID_DAYS - 10) * 86_400).unsigned_abs());
        std::fs::File::options()
            .write(true)
            .open(dir.join(SELF_SIGNED_CERT))
            .and_then(|f| f.set_modified(old))
            .unwrap_or_else(|e| panic!("{e}"));
        let renewed = load(&TlsSource::SelfSigned, &dir, bound).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(renewed.fingerprint, first.fingerprint);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_include_localhost_loopback_and_a_specific_bound_address() {
        let names = certificate_names(IpAddr::from([10, 9, 8, 7]));
        for want in ["localhost", "127.0.0.1", "::1", "10.9.8.7"] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        let any = certificate_names(IpAddr::from([0, 0, 0, 0]));
        assert!(!any.iter().any(|n| n == "0.0.0.0"), "{any:?}");
    }
}
