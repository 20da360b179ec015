//! Media types: what a declared type may be, and whether image bytes are what their
//! type says (by their signature, the first bytes of the file).

use crate::error::RuntimeError;

/// The image types every vendor that takes images accepts.
pub const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The image type the bytes' signature says, if it is one of [`IMAGE_TYPES`].
pub fn image_type_of(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A declared media type reduced to its essence in lower case (`Image/PNG;
/// charset=x` → `image/png`); refused when it is not `type/subtype`.
pub fn normalize(declared: &str) -> Result<String, RuntimeError> {
    let essence = declared
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match essence.split_once('/') {
        Some((t, s)) if token(t) && token(s) => Ok(essence),
        _ => Err(RuntimeError::InvalidAttachment(format!(
            "`{declared}` is not a media type (type/subtype)"
        ))),
    }
}

/// Checks bytes against their declared type: a type naming one of [`IMAGE_TYPES`]
/// must match the bytes' signature (other types are taken as declared).
pub fn check_declared(mime_type: &str, bytes: &[u8]) -> Result<(), RuntimeError> {
    if IMAGE_TYPES.contains(&mime_type) {
        let actual = image_type_of(bytes);
        if actual != Some(mime_type) {
            return Err(RuntimeError::InvalidAttachment(format!(
                "the bytes are not {mime_type} ({})",
                actual.map_or("no image signature found".to_string(), |a| format!(
                    "they look like {a}"
                ))
            )));
        }
    }
    Ok(())
}

/// True when a file of this type with these bytes is text to inline into a prompt:
/// a textual media type, and UTF-8 without NUL bytes.
pub fn is_text(mime_type: &str, bytes: &[u8]) -> bool {
    let textual = mime_type.starts_with("text/")
        || matches!(
            mime_type,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/octet-stream"
        )
        || mime_type.ends_with("+json")
        || mime_type.ends_with("+xml");
    textual && !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures() {
        assert_eq!(image_type_of(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_type_of(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(image_type_of(b"GIF89a.."), Some("image/gif"));
        assert_eq!(image_type_of(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type_of(b"hello"), None);
        assert!(check_declared("image/png", b"GIF89a..").is_err());
        assert!(check_declared("image/png", b"\x89PNG\r\n\x1a\n").is_ok());
        assert!(check_declared("application/pdf", b"%PDF").is_ok());
    }

    #[test]
    fn media_types() {
        assert_eq!(normalize("Image/PNG; q=1").unwrap(), "image/png");
        assert!(normalize("png").is_err());
        assert!(normalize("a/b c").is_err());
        assert!(is_text("text/plain", b"hi"));
        assert!(!is_text("text/plain", b"h\0i"));
        assert!(!is_text("application/pdf", b"%PDF"));
    }
}
