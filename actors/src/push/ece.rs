//! Message encryption for Web Push (RFC 8291 over RFC 8188's `aes128gcm`): one record,
//! a fresh ECDH key and salt per message, so a push service sees only ciphertext.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use ring::agreement::{agree_ephemeral, EphemeralPrivateKey, UnparsedPublicKey, ECDH_P256};
use ring::hkdf::{KeyType, Salt, HKDF_SHA256};
use ring::rand::{SecureRandom, SystemRandom};

/// Length of an uncompressed P-256 point (`0x04 || x || y`), the form of `p256dh`.
pub const PUBLIC_KEY_LEN: usize = 65;
/// Length of a subscription's `auth` secret.
pub const AUTH_LEN: usize = 16;
/// The record size written in the header. One record holds the whole message, so it
/// only has to exceed the largest plaintext; 4096 is what push services take.
const RECORD_SIZE: u32 = 4096;
/// Bytes of the header (salt, record size, key id length, key id) and the tag.
pub const OVERHEAD: usize = 16 + 4 + 1 + PUBLIC_KEY_LEN + 16 + 1;

/// Why a message could not be encrypted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EceError {
    /// `p256dh` is not a point of P-256 (or not 65 bytes).
    #[error("the subscription's p256dh is not a P-256 public key")]
    BadPublicKey,
    /// `auth` is not 16 bytes.
    #[error("the subscription's auth secret is not 16 bytes")]
    BadAuth,
    /// The message does not fit one 4096-byte record.
    #[error("the message is {0} bytes; at most {max} fit", max = RECORD_SIZE as usize - 17)]
    TooLong(usize),
    /// The system's random source or a primitive failed.
    #[error("encryption failed")]
    Crypto,
}

impl From<ring::error::Unspecified> for EceError {
    fn from(_: ring::error::Unspecified) -> Self {
        EceError::Crypto
    }
}

/// An HKDF output length.
struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// HKDF-SHA-256: extract with `salt`, expand with `info` to `n` bytes.
fn hkdf(salt: &[u8], ikm: &[u8], info: &[&[u8]], n: usize) -> Result<Vec<u8>, EceError> {
    let prk = Salt::new(HKDF_SHA256, salt).extract(ikm);
    let mut out = vec![0; n];
    prk.expand(info, Len(n))?.fill(&mut out)?;
    Ok(out)
}

/// Encrypts `plaintext` for the user agent whose subscription keys are `ua_public`
/// (`p256dh`) and `auth`: the body of the push request, with `Content-Encoding:
/// aes128gcm`.
pub fn encrypt(ua_public: &[u8], auth: &[u8], plaintext: &[u8]) -> Result<Vec<u8>, EceError> {
    let rng = SystemRandom::new();
    let mut salt = [0u8; 16];
    rng.fill(&mut salt)?;
    let key = EphemeralPrivateKey::generate(&ECDH_P256, &rng)?;
    encrypt_with(key, salt, ua_public, auth, plaintext)
}

/// [`encrypt`] with the application server's key and the salt given.
fn encrypt_with(
    key: EphemeralPrivateKey,
    salt: [u8; 16],
    ua_public: &[u8],
    auth: &[u8],
    plaintext: &[u8],
) -> Result<Vec<u8>, EceError> {
    if ua_public.len() != PUBLIC_KEY_LEN || ua_public.first() != Some(&4) {
        return Err(EceError::BadPublicKey);
    }
    if auth.len() != AUTH_LEN {
        return Err(EceError::BadAuth);
    }
    // One record: the plaintext, the last-record delimiter 0x02, the 16-byte tag.
    if plaintext.len() + 17 > RECORD_SIZE as usize {
        return Err(EceError::TooLong(plaintext.len()));
    }
    let as_public = key.compute_public_key()?;
    let peer = UnparsedPublicKey::new(&ECDH_P256, ua_public);
    let shared = agree_ephemeral(key, &peer, |secret| secret.to_vec())
        .map_err(|_| EceError::BadPublicKey)?;
    // RFC 8291 section 3.4: the input keying material binds both public keys.
    let ikm = hkdf(
        auth,
        &shared,
        &[b"WebPush: info\0", ua_public, as_public.as_ref()],
        32,
    )?;
    let cek = hkdf(&salt, &ikm, &[b"Content-Encoding: aes128gcm\0"], 16)?;
    let nonce = hkdf(&salt, &ikm, &[b"Content-Encoding: nonce\0"], 12)?;
    let sealing = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek)?);
    let mut record = Vec::with_capacity(plaintext.len() + 17);
    record.extend_from_slice(plaintext);
    record.push(2);
    // The first (and only) record's nonce is the derived one XOR 0.
    let nonce = Nonce::try_assume_unique_for_key(&nonce)?;
    sealing.seal_in_place_append_tag(nonce, Aad::empty(), &mut record)?;
    let mut body = Vec::with_capacity(OVERHEAD + plaintext.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(PUBLIC_KEY_LEN as u8);
    body.extend_from_slice(as_public.as_ref());
    body.extend_from_slice(&record);
    Ok(body)
}

/// Checks that `p256dh` is a point a message can be encrypted to (an agreement with a
/// throwaway key succeeds).
pub fn check_public_key(ua_public: &[u8]) -> Result<(), EceError> {
    if ua_public.len() != PUBLIC_KEY_LEN || ua_public.first() != Some(&4) {
        return Err(EceError::BadPublicKey);
    }
    let rng = SystemRandom::new();
    let key = EphemeralPrivateKey::generate(&ECDH_P256, &rng)?;
    agree_ephemeral(key, &UnparsedPublicKey::new(&ECDH_P256, ua_public), |_| ())
        .map_err(|_| EceError::BadPublicKey)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The user agent's side of RFC 8291: decrypts what [`encrypt`] made, with the
    /// user agent's private key. The independent check is the e2e test's push service
    /// stand-in (Python's `http_ece`); this one pins the layout.
    fn decrypt(ua: EphemeralPrivateKey, ua_public: &[u8], auth: &[u8], body: &[u8]) -> Vec<u8> {
        let salt = &body[..16];
        assert_eq!(u32::from_be_bytes(body[16..20].try_into().unwrap()), 4096);
        assert_eq!(body[20] as usize, PUBLIC_KEY_LEN);
        let as_public = &body[21..21 + PUBLIC_KEY_LEN];
        let shared = agree_ephemeral(ua, &UnparsedPublicKey::new(&ECDH_P256, as_public), |s| {
            s.to_vec()
        })
        .unwrap();
        let ikm = hkdf(
            auth,
            &shared,
            &[b"WebPush: info\0", ua_public, as_public],
            32,
        )
        .unwrap();
        let cek = hkdf(salt, &ikm, &[b"Content-Encoding: aes128gcm\0"], 16).unwrap();
        let nonce = hkdf(salt, &ikm, &[b"Content-Encoding: nonce\0"], 12).unwrap();
        let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).unwrap());
        let mut record = body[21 + PUBLIC_KEY_LEN..].to_vec();
        let plain = key
            .open_in_place(
                Nonce::try_assume_unique_for_key(&nonce).unwrap(),
                Aad::empty(),
                &mut record,
            )
            .unwrap()
            .to_vec();
        assert_eq!(plain.last(), Some(&2), "the last-record delimiter");
        plain[..plain.len() - 1].to_vec()
    }

    #[test]
    fn a_message_decrypts_with_the_user_agents_key() {
        let rng = SystemRandom::new();
        let ua = EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        let ua_public = ua.compute_public_key().unwrap().as_ref().to_vec();
        let auth = [7u8; 16];
        let body = encrypt(&ua_public, &auth, b"{\"hello\":1}").unwrap();
        assert_eq!(body.len(), OVERHEAD + 11);
        assert_eq!(decrypt(ua, &ua_public, &auth, &body), b"{\"hello\":1}");
        // A fresh key and salt each time: the same message never looks the same.
        assert_ne!(
            encrypt(&ua_public, &auth, b"x").unwrap()[..86],
            encrypt(&ua_public, &auth, b"x").unwrap()[..86]
        );
    }

    #[test]
    fn bad_keys_and_long_messages_are_refused() {
        let rng = SystemRandom::new();
        let ua = EphemeralPrivateKey::generate(&ECDH_P256, &rng).unwrap();
        let ua_public = ua.compute_public_key().unwrap().as_ref().to_vec();
        let mut off_curve = ua_public.clone();
        off_curve[64] ^= 1;
        assert_eq!(check_public_key(&off_curve), Err(EceError::BadPublicKey));
        assert_eq!(check_public_key(&ua_public), Ok(()));
        assert_eq!(
            encrypt(&off_curve, &[0; 16], b"x"),
            Err(EceError::BadPublicKey)
        );
        assert_eq!(
            encrypt(&ua_public[..64], &[0; 16], b"x"),
            Err(EceError::BadPublicKey)
        );
        assert_eq!(encrypt(&ua_public, &[0; 15], b"x"), Err(EceError::BadAuth));
        assert_eq!(
            encrypt(&ua_public, &[0; 16], &[b'a'; 4080]),
            Err(EceError::TooLong(4080))
        );
        assert!(encrypt(&ua_public, &[0; 16], &[b'a'; 4079]).is_ok());
    }
}
