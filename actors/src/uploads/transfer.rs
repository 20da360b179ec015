//! Moving an upload between cluster nodes (`--nats`). Uploads belong to the node
//! that took them, and a message is resolved on the node that owns its session; so a
//! node that forwards a message naming one of its uploads hands the bytes over to
//! the owner first, in parts that fit a NATS message ([`Uploads::receive_part`]),
//! and a node that serves the bytes of an upload used in another node's session
//! reads them from the owner in parts ([`Uploads::read_part`]).
//!
//! Ids are content addresses (`up_<sha256>`), so the owner stores the same upload
//! under the same id, and checks the bytes against it: a part lost, doubled or
//! changed on the way cannot become a wrong file.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::{digest_of, hex, Upload, Uploads};
use crate::error::RuntimeError;
use crate::ids::UploadId;

/// One part of an upload handed over by another node.
#[derive(Debug, Clone)]
pub struct Part {
    /// Names this hand-over (chosen by the sender; letters and digits): its parts
    /// are gathered in a temporary file of that name.
    pub transfer: String,
    /// The upload, `up_<sha256>` of the whole.
    pub upload_id: UploadId,
    /// Its media type.
    pub mime_type: String,
    /// Its file name.
    pub name: Option<String>,
    /// Bytes of the whole upload.
    pub total: u64,
    /// Where this part starts; parts come in order.
    pub offset: u64,
    /// The part's bytes.
    pub data: Vec<u8>,
}

impl Uploads {
    /// Takes one part of an upload another node hands over for `owner`. Answers
    /// true once the upload is here whole: after its last part, or at once when
    /// `owner` has it already. A part with no bytes at offset 0 only asks that
    /// (the sender probes before it sends an upload a message may have sent before).
    pub fn receive_part(&self, owner: &str, part: &Part) -> Result<bool, RuntimeError> {
        let bad = |why: String| RuntimeError::InvalidAttachment(why);
        let sha = digest_of(&part.upload_id)
            .ok_or_else(|| bad(format!("{} is not an upload id", part.upload_id)))?;
        if part.offset == 0 && self.get(owner, &part.upload_id).is_ok() {
            return Ok(true);
        }
        if part.offset == 0 && part.data.is_empty() {
            return Ok(false);
        }
        if part.total > self.limits.max_file_bytes {
            return Err(RuntimeError::AttachmentTooLarge(format!(
                "the file has {} bytes; at most {} are taken",
                part.total, self.limits.max_file_bytes
            )));
        }
        let end = part.offset + part.data.len() as u64;
        if part.data.is_empty() || end > part.total {
            return Err(bad(format!(
                "a part of {} bytes at {} does not fit a file of {}",
                part.data.len(),
                part.offset,
                part.total
            )));
        }
        let path = self.part_path(&part.transfer)?;
        let result = (|| {
            let mut file = if part.offset == 0 {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&path)?
            } else {
                std::fs::OpenOptions::new().append(true).open(&path)?
            };
            if file.metadata()?.len() != part.offset {
                return Err(bad(format!(
                    "the part at {} came out of order",
                    part.offset
                )));
            }
            file.write_all(&part.data)?;
            if end < part.total {
                return Ok(None);
            }
            let bytes = std::fs::read(&path)?;
            Ok(Some(bytes))
        })();
        let bytes = match result {
            Ok(None) => return Ok(false),
            Ok(Some(bytes)) => bytes,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        let _ = std::fs::remove_file(&path);
        if hex(&Sha256::digest(&bytes)) != sha {
            return Err(bad(format!(
                "the bytes handed over are not those of {}",
                part.upload_id
            )));
        }
        let mime_type = super::sniff::normalize(&part.mime_type)?;
        super::sniff::check_declared(&mime_type, &bytes)?;
        self.put(owner, &bytes, &mime_type, part.name.as_deref())?;
        Ok(true)
    }

    /// `len` bytes (at most) at `offset` of upload `id` as used in `session_id`:
    /// the upload and the bytes.
    pub fn read_part(
        &self,
        session_id: &str,
        id: &str,
        offset: u64,
        len: usize,
    ) -> Result<(Upload, Vec<u8>), RuntimeError> {
        let upload = self.get_in_session(session_id, id)?;
        let mut file = std::fs::File::open(self.blob(&upload.sha256))
            .map_err(|_| RuntimeError::NoSuchUpload(id.to_string()))?;
        file.seek(SeekFrom::Start(offset))?;
        let mut data = Vec::with_capacity(len.min(upload.size as usize));
        file.take(len as u64).read_to_end(&mut data)?;
        Ok((upload, data))
    }

    /// The temporary file a hand-over gathers its parts in (removed at start like
    /// any `.tmp-` file a crash left).
    fn part_path(&self, transfer: &str) -> Result<PathBuf, RuntimeError> {
        let ok = !transfer.is_empty()
            && transfer.len() <= 64
            && transfer.bytes().all(|b| b.is_ascii_alphanumeric());
        if !ok {
            return Err(RuntimeError::InvalidAttachment(format!(
                "{transfer:?} does not name a hand-over"
            )));
        }
        Ok(self.dir.join(format!(".tmp-part-{transfer}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    fn uploads(dir: &std::path::Path) -> Uploads {
        let store = Store::open(dir).unwrap();
        Uploads::open(dir, store, super::super::UploadLimits::default()).unwrap()
    }

    fn parts(bytes: &[u8], size: usize, transfer: &str) -> Vec<Part> {
        let id = super::super::upload_id(&hex(&Sha256::digest(bytes)));
        bytes
            .chunks(size)
            .enumerate()
            .map(|(i, data)| Part {
                transfer: transfer.into(),
                upload_id: id.clone(),
                mime_type: "text/plain".into(),
                name: Some("notes.txt".into()),
                total: bytes.len() as u64,
                offset: (i * size) as u64,
                data: data.to_vec(),
            })
            .collect()
    }

    #[test]
    fn an_upload_handed_over_in_parts_is_stored_under_its_id() {
        let dir = crate::testkit::Scratch::new("transfer");
        let up = uploads(dir.path());
        let bytes: Vec<u8> = (0..10_000u32)
            .flat_map(|i| format!("{i} ").into_bytes())
            .collect();
        let parts = parts(&bytes, 4096, "t1");
        let last = parts.len() - 1;
        for (i, part) in parts.iter().enumerate() {
            assert_eq!(up.receive_part("alice", part).unwrap(), i == last);
        }
        let stored = up.get("alice", &parts[0].upload_id).unwrap();
        assert_eq!(stored.size, bytes.len() as u64);
        assert_eq!(stored.name.as_deref(), Some("notes.txt"));
        assert_eq!(std::fs::read(up.blob(&stored.sha256)).unwrap(), bytes);
        // Handed over again: the probe and the first part say it is here already.
        let probe = Part {
            data: Vec::new(),
            ..parts[0].clone()
        };
        assert!(up.receive_part("alice", &probe).unwrap());
        assert!(up.receive_part("alice", &parts[0]).unwrap());
        // Another user's probe: not there for them.
        assert!(!up.receive_part("bob", &probe).unwrap());
        // Nobody else got it.
        assert!(up.get("bob", &parts[0].upload_id).is_err());
    }

    #[test]
    fn parts_out_of_order_or_of_other_bytes_are_refused_and_leave_nothing() {
        let dir = crate::testkit::Scratch::new("transfer-bad");
        let up = uploads(dir.path());
        let bytes = vec![b'a'; 10_000];
        let parts = parts(&bytes, 4096, "t2");
        up.receive_part("alice", &parts[0]).unwrap();
        let skipped = up.receive_part("alice", &parts[2]).unwrap_err();
        assert!(skipped.to_string().contains("out of order"), "{skipped}");
        // A changed byte: the whole is not what the id names.
        let mut changed = parts.clone();
        changed[1].data[0] = b'b';
        for part in &changed {
            let result = up.receive_part("alice", part);
            if part.offset + part.data.len() as u64 == part.total {
                let e = result.unwrap_err();
                assert!(e.to_string().contains("not those of"), "{e}");
            }
        }
        assert!(up.get("alice", &parts[0].upload_id).is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("uploads"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let named = Part {
            transfer: "../x".into(),
            ..parts[0].clone()
        };
        assert!(up.receive_part("alice", &named).is_err());
    }
}
