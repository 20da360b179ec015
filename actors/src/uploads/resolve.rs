//! A message's content blocks → the text history shows, what the vendor gets, and the
//! blocks history keeps. Everything is checked before anything is written, and what a
//! message wrote is listed so a refused message can take it back.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use tandem_protocol::content::{ContentBlock, HistoryBlock, StoredAttachment, TextBlock};
use tandem_protocol::MessageContent;

use super::sniff::{self, IMAGE_TYPES};
use super::{Upload, UploadLimits, Uploads};
use crate::attachments::{Attachments, ImageInput};
use crate::error::RuntimeError;

/// Where files that are not inlined are saved, under the session's working directory.
pub const SAVED_DIR: &str = "tandem-attachments";

/// A message ready for its session.
#[derive(Debug, Default)]
pub struct Resolved {
    /// The person's text (the text blocks, joined by blank lines).
    pub text: String,
    /// Images, files' text and history blocks.
    pub attachments: Attachments,
    /// Digests of the uploads the message uses (recorded as the session's uses).
    pub used: Vec<String>,
    /// Digests of uploads this message created (inline images new to the owner).
    pub created: Vec<String>,
    /// Files this message saved in the working directory.
    pub saved: Vec<PathBuf>,
}

/// One block after the checks, before anything is written.
enum Checked {
    Text(String),
    InlineImage { mime_type: String, bytes: Vec<u8> },
    Image(Upload),
    File(Upload),
}

impl Checked {
    /// The bytes it counts towards the message's limit.
    fn size(&self) -> u64 {
        match self {
            Checked::Text(_) => 0,
            Checked::InlineImage { bytes, .. } => bytes.len() as u64,
            Checked::Image(upload) | Checked::File(upload) => upload.size,
        }
    }
}

/// `owner`'s upload `id`, named inside a message. One it does not have is still
/// `NO_SUCH_UPLOAD`, but for REST a value of the body the server cannot use (422),
/// not a missing target (404): the session the message goes to exists.
fn named_upload(uploads: &Uploads, owner: &str, id: &str) -> Result<Upload, RuntimeError> {
    uploads.get(owner, id).map_err(|e| match e {
        RuntimeError::NoSuchUpload(_) => RuntimeError::Unusable {
            code: e.code(),
            message: e.to_string(),
        },
        other => other,
    })
}

/// Checks and resolves `content` sent by `owner` to a session working in `cwd`.
/// `images` says whether the session's vendor takes images. Blocking.
pub fn resolve(
    uploads: &Uploads,
    owner: &str,
    content: MessageContent,
    cwd: &Path,
    images: bool,
    vendor: &str,
) -> Result<Resolved, RuntimeError> {
    let blocks = match content {
        MessageContent::Text(text) => {
            return Ok(Resolved {
                text,
                ..Resolved::default()
            })
        }
        MessageContent::Blocks(blocks) => blocks,
    };
    let limits = uploads.limits;
    if blocks.len() > limits.max_blocks {
        return Err(RuntimeError::AttachmentTooLarge(format!(
            "the message has {} blocks; at most {} are taken",
            blocks.len(),
            limits.max_blocks
        )));
    }
    let mut checked = Vec::with_capacity(blocks.len());
    let mut total: u64 = 0;
    for (i, block) in blocks.into_iter().enumerate() {
        let c = check_block(uploads, owner, i, block)?;
        total += c.size();
        checked.push(c);
    }
    if total > limits.max_message_bytes {
        return Err(RuntimeError::AttachmentTooLarge(format!(
            "the message's attachments have {total} bytes; at most {} are taken per message",
            limits.max_message_bytes
        )));
    }
    if !images
        && checked
            .iter()
            .any(|c| matches!(c, Checked::InlineImage { .. } | Checked::Image(_)))
    {
        return Err(RuntimeError::AttachmentNotSupported(format!(
            "vendor {vendor} does not take images"
        )));
    }
    let mut out = Resolved::default();
    match write(uploads, owner, checked, cwd, &mut out) {
        Ok(()) => Ok(out),
        Err(e) => {
            undo_files(&out.saved);
            uploads.undo(owner, "", &[], &out.created);
            Err(e)
        }
    }
}

/// Checks content block `i` sent by `owner`: an inline image is decoded, an
/// upload's id looked up.
fn check_block(
    uploads: &Uploads,
    owner: &str,
    i: usize,
    block: ContentBlock,
) -> Result<Checked, RuntimeError> {
    let bad = |why: String| RuntimeError::InvalidAttachment(format!("content block {i}: {why}"));
    Ok(match block {
        ContentBlock::Text(t) => Checked::Text(t.text),
        ContentBlock::Image(img) => match (img.data, img.upload_id) {
            (Some(data), None) => {
                let mime_type = img
                    .mime_type
                    .ok_or_else(|| bad("an inline image needs `mimeType`".into()))?;
                inline_image(uploads.limits, i, &mime_type, &data, bad)?
            }
            (None, Some(id)) => {
                if img.mime_type.is_some() {
                    return Err(bad(
                        "`mimeType` goes with `data`, not with `uploadId`".into()
                    ));
                }
                let upload = named_upload(uploads, owner, &id)?;
                if !IMAGE_TYPES.contains(&upload.mime_type.as_str()) {
                    return Err(bad(format!(
                        "upload {id} is {}, not an image ({}); send it as a file",
                        upload.mime_type,
                        IMAGE_TYPES.join(", ")
                    )));
                }
                Checked::Image(upload)
            }
            (Some(_), Some(_)) => return Err(bad("give `data` or `uploadId`, not both".into())),
            (None, None) => return Err(bad("an image needs `data` or `uploadId`".into())),
        },
        ContentBlock::File(f) => Checked::File(named_upload(uploads, owner, &f.upload_id)?),
    })
}

/// Block `i`'s inline image, `data` in base64 declared as `mime_type`: decoded and
/// checked against `limits` and its declared type (`bad` says what is wrong).
fn inline_image(
    limits: UploadLimits,
    i: usize,
    mime_type: &str,
    data: &str,
    bad: impl Fn(String) -> RuntimeError,
) -> Result<Checked, RuntimeError> {
    let mime_type = sniff::normalize(mime_type).map_err(|e| bad(e.to_string()))?;
    if !IMAGE_TYPES.contains(&mime_type.as_str()) {
        return Err(bad(format!(
            "{mime_type} is not an image type taken here ({})",
            IMAGE_TYPES.join(", ")
        )));
    }
    // Base64 takes 4 characters for 3 bytes: a string far over the
    // limit is refused before it is decoded.
    if (data.len() as u64 / 4) * 3 > limits.max_file_bytes + 3 {
        return Err(RuntimeError::AttachmentTooLarge(format!(
            "content block {i}: the image is larger than {} bytes",
            limits.max_file_bytes
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| bad(format!("`data` is not base64: {e}")))?;
    if bytes.is_empty() {
        return Err(bad("the image is empty".into()));
    }
    if bytes.len() as u64 > limits.max_file_bytes {
        return Err(RuntimeError::AttachmentTooLarge(format!(
            "content block {i}: the image has {} bytes; at most {} are taken",
            bytes.len(),
            limits.max_file_bytes
        )));
    }
    sniff::check_declared(&mime_type, &bytes).map_err(|e| bad(e.to_string()))?;
    Ok(Checked::InlineImage { mime_type, bytes })
}

/// Stores inline images, reads text files, saves other files; fills `out` as it goes
/// so a failure can be taken back.
fn write(
    uploads: &Uploads,
    owner: &str,
    checked: Vec<Checked>,
    cwd: &Path,
    out: &mut Resolved,
) -> Result<(), RuntimeError> {
    let mut texts: Vec<String> = Vec::new();
    let mut extra: Vec<String> = Vec::new();
    for c in checked {
        match c {
            Checked::Text(text) => {
                out.attachments
                    .blocks
                    .push(HistoryBlock::Text(TextBlock { text: text.clone() }));
                texts.push(text);
            }
            Checked::InlineImage { mime_type, bytes } => {
                let (upload, new) = uploads.put(owner, &bytes, &mime_type, None)?;
                if new {
                    out.created.push(upload.sha256.clone());
                }
                image(uploads, upload, out);
            }
            Checked::Image(upload) => image(uploads, upload, out),
            Checked::File(upload) => {
                let bytes = std::fs::read(uploads.blob(&upload.sha256))?;
                let name = upload.name.clone().unwrap_or_else(|| "file".into());
                let mut path = None;
                if sniff::is_text(&upload.mime_type, &bytes) {
                    let text = String::from_utf8_lossy(&bytes);
                    extra.push(format!(
                        "<file name=\"{name}\" type=\"{}\">\n{}\n</file>",
                        upload.mime_type,
                        text.trim_end()
                    ));
                } else {
                    let file_name = format!("{}-{name}", &upload.sha256[..12]);
                    let rel = format!("{SAVED_DIR}/{file_name}");
                    if save(cwd, &file_name, &bytes)? {
                        out.saved.push(cwd.join(&rel));
                    }
                    extra.push(format!(
                        "[Attached file {name} ({}, {} bytes), saved at {rel}]",
                        upload.mime_type, upload.size
                    ));
                    path = Some(rel);
                }
                out.used.push(upload.sha256.clone());
                out.attachments
                    .blocks
                    .push(HistoryBlock::File(StoredAttachment {
                        upload_id: upload.id,
                        mime_type: upload.mime_type,
                        size: upload.size,
                        name: upload.name,
                        path,
                    }));
            }
        }
    }
    if out
        .attachments
        .blocks
        .iter()
        .all(|b| matches!(b, HistoryBlock::Text(_)))
    {
        // Text only: `user_message.text` says it all.
        out.attachments.blocks.clear();
    }
    out.text = texts.join("\n\n");
    out.attachments.prompt_text = extra.join("\n\n");
    Ok(())
}

/// Saves `bytes` as `file_name` in the working directory's [`SAVED_DIR`], creating
/// it, following no link: a link (or anything but a directory) in the place of
/// [`SAVED_DIR`], or in the place of the file, is refused and nothing is written, so
/// a message cannot write outside the working directory. False when the same file
/// was saved already.
fn save(cwd: &Path, file_name: &str, bytes: &[u8]) -> Result<bool, RuntimeError> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use rustix::io::Errno;
    use std::io::Write as _;
    let refused = |what: &str| {
        RuntimeError::InvalidAttachment(format!(
            "{what} in the session's working directory is a symbolic link or not a \
             directory; nothing was saved"
        ))
    };
    let os =
        |e: Errno| RuntimeError::InvalidAttachment(format!("saving {SAVED_DIR}/{file_name}: {e}"));
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = rustix::fs::open(cwd, dir_flags, Mode::empty()).map_err(|e| {
        RuntimeError::InvalidAttachment(format!("the session's working directory: {e}"))
    })?;
    match rustix::fs::mkdirat(&root, SAVED_DIR, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(os(e)),
    }
    let dir = rustix::fs::openat(
        &root,
        SAVED_DIR,
        dir_flags | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => refused(SAVED_DIR),
        e => os(e),
    })?;
    let created = rustix::fs::openat(
        &dir,
        file_name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    );
    let fd = match created {
        Ok(fd) => fd,
        Err(Errno::EXIST) => {
            // Saved by an earlier message (the name carries the digest), unless
            // something else took its place.
            let stat =
                rustix::fs::statat(&dir, file_name, AtFlags::SYMLINK_NOFOLLOW).map_err(os)?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                return Err(refused(&format!("{SAVED_DIR}/{file_name}")));
            }
            return Ok(false);
        }
        Err(e) => return Err(os(e)),
    };
    let mut file = std::fs::File::from(fd);
    if let Err(e) = file.write_all(bytes) {
        let _ = rustix::fs::unlinkat(&dir, file_name, AtFlags::empty());
        return Err(RuntimeError::InvalidAttachment(format!(
            "saving {SAVED_DIR}/{file_name}: {e}"
        )));
    }
    Ok(true)
}

fn image(uploads: &Uploads, upload: Upload, out: &mut Resolved) {
    out.used.push(upload.sha256.clone());
    out.attachments.images.push(ImageInput {
        upload_id: upload.id.clone(),
        mime_type: upload.mime_type.clone(),
        path: uploads.blob(&upload.sha256),
    });
    out.attachments
        .blocks
        .push(HistoryBlock::Image(StoredAttachment {
            upload_id: upload.id,
            mime_type: upload.mime_type,
            size: upload.size,
            name: upload.name,
            path: None,
        }));
}

/// Removes files a refused message saved in the working directory.
pub fn undo_files(saved: &[PathBuf]) {
    for path in saved {
        if let Err(e) = std::fs::remove_file(path) {
            tracing::warn!(path = %path.display(), error = %e, "removing a refused message's file failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uploads::UploadLimits;
    use serde_json::json;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn setup() -> (crate::testkit::Scratch, Uploads, PathBuf) {
        let dir = crate::testkit::Scratch::new("resolve");
        let store = crate::store::Store::open(&dir.path().join("data")).unwrap();
        let uploads = Uploads::open(
            &dir.path().join("data"),
            store,
            UploadLimits {
                max_message_bytes: 64,
                ..UploadLimits::default()
            },
        )
        .unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        (dir, uploads, cwd)
    }

    fn content(v: serde_json::Value) -> MessageContent {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn blocks_become_text_images_and_files() {
        let (_d, up, cwd) = setup();
        let (notes, _) = up
            .put("alice", b"line one\n", "text/plain", Some("notes.txt"))
            .unwrap();
        let (pdf, _) = up
            .put(
                "alice",
                b"%PDF-1.4 \x00\x01",
                "application/pdf",
                Some("a.pdf"),
            )
            .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(PNG);
        let r = resolve(
            &up,
            "alice",
            content(json!([
                {"type": "text", "text": "look"},
                {"type": "image", "mimeType": "image/png", "data": b64},
                {"type": "file", "uploadId": notes.id},
                {"type": "file", "uploadId": pdf.id},
            ])),
            &cwd,
            true,
            "scripted",
        )
        .unwrap();
        assert_eq!(r.text, "look");
        assert_eq!(r.attachments.images.len(), 1);
        assert!(r
            .attachments
            .prompt_text
            .contains("<file name=\"notes.txt\" type=\"text/plain\">\nline one\n</file>"));
        assert!(r
            .attachments
            .prompt_text
            .contains("saved at tandem-attachments/"));
        assert_eq!(r.saved.len(), 1);
        assert!(r.saved[0].exists());
        assert_eq!(r.attachments.blocks.len(), 4);
        assert_eq!(r.created.len(), 1);
    }

    #[test]
    fn bad_blocks_are_refused_and_nothing_is_left() {
        let (_d, up, cwd) = setup();
        let cases = [
            (
                json!([{"type": "image", "mimeType": "image/png", "data": "!!notbase64"}]),
                "INVALID_ATTACHMENT",
            ),
            (
                json!([{"type": "image", "mimeType": "image/gif", "data": base64::engine::general_purpose::STANDARD.encode(PNG)}]),
                "INVALID_ATTACHMENT",
            ),
            (
                json!([{"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zy8+"}]),
                "INVALID_ATTACHMENT",
            ),
            (
                json!([{"type": "image", "uploadId": format!("up_{}", "0".repeat(64))}]),
                "NO_SUCH_UPLOAD",
            ),
            (
                json!([{"type": "file", "uploadId": "up_x"}]),
                "NO_SUCH_UPLOAD",
            ),
            (json!([{"type": "image"}]), "INVALID_ATTACHMENT"),
            (
                json!([{"type": "image", "mimeType": "image/png", "data": base64::engine::general_purpose::STANDARD.encode([PNG, &[0u8; 80]].concat())}]),
                "ATTACHMENT_TOO_LARGE",
            ),
        ];
        for (c, code) in cases {
            let e = resolve(&up, "alice", content(c.clone()), &cwd, true, "scripted").unwrap_err();
            assert_eq!(
                serde_json::to_value(e.code()).unwrap(),
                json!(code),
                "{c}: {e}"
            );
        }
        let b64 = base64::engine::general_purpose::STANDARD.encode(PNG);
        let e = resolve(
            &up,
            "alice",
            content(json!([{"type": "image", "mimeType": "image/png", "data": b64}])),
            &cwd,
            false,
            "acme",
        )
        .unwrap_err();
        assert_eq!(
            serde_json::to_value(e.code()).unwrap(),
            json!("ATTACHMENT_NOT_SUPPORTED")
        );
        // Nothing was stored.
        let blobs: Vec<_> = std::fs::read_dir(up.blob("x").parent().unwrap())
            .unwrap()
            .collect();
        assert!(blobs.is_empty(), "{blobs:?}");
    }
}
