//! Live events framed once for every client: a committed run of one session's events
//! becomes WebSocket text frames (header and payload) in shared buffers, and every
//! client that receives the run gets reference-counted slices of them. A delivery then
//! costs one reference count per piece, not per event, and the connection hands the
//! bytes to the socket as they are, without framing or copying them again.

use bytes::{BufMut, Bytes, BytesMut};

use crate::store::StoredEvent;

/// Most bytes of one piece (larger single frames go alone): the HTTP layer takes a
/// whole piece at once, so this bounds what leaves a client's byte accounting before
/// the socket has it, like the connection's own write chunk.
pub const PIECE: usize = 16 << 10;

/// Whole WebSocket frames, ready for the socket, and what they count against the
/// client's budget (the JSON text of the events, without the frame headers: the same
/// bytes a replayed or control frame is charged).
#[derive(Debug, Clone)]
pub struct Framed {
    /// One or more complete, unmasked, final text frames.
    pub bytes: Bytes,
    /// The frames' payload bytes, charged to the client's [`super::ClientQueue`].
    pub charged: usize,
}

/// Appends the header of an unmasked, final WebSocket text frame of `len` payload
/// bytes (RFC 6455, section 5.2).
pub fn text_header(len: usize, out: &mut BytesMut) {
    out.put_u8(0x81);
    if len < 126 {
        out.put_u8(len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.put_u8(126);
        out.put_u16(short);
    } else {
        out.put_u8(127);
        out.put_u64(len as u64);
    }
}

/// Where one event's frame sits in a [`FramedRun`].
#[derive(Debug, Clone, Copy)]
struct At {
    /// Index of its piece.
    piece: usize,
    /// Byte offset of its frame within the piece.
    offset: usize,
    /// Payload bytes of the piece's frames before it.
    charged_before: usize,
}

/// One session's run of committed events (consecutive, in `seq` order), framed once.
#[derive(Debug)]
pub struct FramedRun {
    /// The whole run, split at frame boundaries into pieces of at most [`PIECE`]
    /// bytes (or one frame).
    pieces: Vec<Framed>,
    /// Per event of the run, in order.
    at: Vec<At>,
}

impl FramedRun {
    /// Frames every event of `run`.
    pub fn new(run: &[StoredEvent]) -> FramedRun {
        let total: usize = run.iter().map(|e| e.frame.len() + 10).sum();
        let mut pieces = Vec::with_capacity(total / PIECE + 1);
        let mut at = Vec::with_capacity(run.len());
        let mut buf = BytesMut::with_capacity(total.min(PIECE + 16));
        let mut charged = 0;
        for ev in run {
            let len = ev.frame.len();
            if !buf.is_empty() && buf.len() + len + 10 > PIECE {
                pieces.push(Framed {
                    bytes: buf.split().freeze(),
                    charged,
                });
                charged = 0;
                buf.reserve((total - buf.len()).min(PIECE + 16));
            }
            at.push(At {
                piece: pieces.len(),
                offset: buf.len(),
                charged_before: charged,
            });
            text_header(len, &mut buf);
            buf.extend_from_slice(ev.frame.as_bytes());
            charged += len;
        }
        if !buf.is_empty() {
            pieces.push(Framed {
                bytes: buf.freeze(),
                charged,
            });
        }
        FramedRun { pieces, at }
    }

    /// Appends to `out` the frames of the run's events from index `first` on; returns
    /// their charge.
    pub fn from(&self, first: usize, out: &mut Vec<Framed>) -> usize {
        let Some(at) = self.at.get(first) else {
            return 0;
        };
        let mut total = 0;
        for (i, piece) in self.pieces.iter().enumerate().skip(at.piece) {
            let framed = if i == at.piece && at.offset > 0 {
                Framed {
                    bytes: piece.bytes.slice(at.offset..),
                    charged: piece.charged - at.charged_before,
                }
            } else {
                piece.clone()
            };
            total += framed.charged;
            out.push(framed);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytestring::ByteString;

    use super::*;
    use crate::flow::FlowGate;

    fn event(seq: u64, text: String) -> StoredEvent {
        StoredEvent {
            session_id: "s".into(),
            seq,
            frame: ByteString::from(text),
            gate: Arc::new(FlowGate::new(0)),
        }
    }

    /// Reads back whole frames: their payloads, checking each header.
    fn payloads(mut bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            assert_eq!(bytes[0], 0x81, "final text frame");
            let (len, at) = match bytes[1] {
                126 => (u16::from_be_bytes([bytes[2], bytes[3]]) as usize, 4),
                127 => {
                    let mut n = [0; 8];
                    n.copy_from_slice(&bytes[2..10]);
                    (u64::from_be_bytes(n) as usize, 10)
                }
                n => {
                    assert!(n < 126, "unmasked");
                    (n as usize, 2)
                }
            };
            out.push(String::from_utf8(bytes[at..at + len].to_vec()).expect("utf-8"));
            bytes = &bytes[at + len..];
        }
        out
    }

    /// Every suffix of a run, of frames small, medium (16-bit length) and large (64-bit
    /// length, alone in its piece), comes back whole, in order, and charged exactly
    /// its payload bytes; pieces stay within [`PIECE`] unless one frame is larger.
    #[test]
    fn every_suffix_is_whole_frames_charged_their_payload() {
        let sizes = [3, 125, 126, 400, 65_535, 65_536, 90, 20_000, 7, 16_000, 5];
        let run: Vec<StoredEvent> = sizes
            .iter()
            .enumerate()
            .map(|(i, n)| event(i as u64 + 1, format!("{i}").repeat(*n)))
            .collect();
        let framed = FramedRun::new(&run);
        for piece in &framed.pieces {
            let frames = payloads(&piece.bytes);
            assert!(
                piece.bytes.len() <= PIECE || frames.len() == 1,
                "{} bytes in {} frames",
                piece.bytes.len(),
                frames.len()
            );
        }
        for first in 0..run.len() {
            let mut out = Vec::new();
            let charged = framed.from(first, &mut out);
            let got: Vec<String> = out.iter().flat_map(|f| payloads(&f.bytes)).collect();
            let want: Vec<String> = run[first..].iter().map(|e| e.frame.to_string()).collect();
            assert_eq!(got, want, "from event {first}");
            assert_eq!(charged, want.iter().map(String::len).sum::<usize>());
            assert_eq!(charged, out.iter().map(|f| f.charged).sum::<usize>());
            for f in &out {
                assert_eq!(
                    f.charged,
                    payloads(&f.bytes).iter().map(String::len).sum::<usize>()
                );
            }
        }
        let mut out = Vec::new();
        assert_eq!(framed.from(run.len(), &mut out), 0);
        assert!(out.is_empty());
    }

    /// Many small events share a few pieces: a client gets a handful of slices, not one
    /// per event.
    #[test]
    fn small_events_share_pieces() {
        let run: Vec<StoredEvent> = (1..=1500)
            .map(|seq| event(seq, format!("{{\"seq\":{seq},\"text\":\"chunk\"}}")))
            .collect();
        let framed = FramedRun::new(&run);
        let mut out = Vec::new();
        framed.from(0, &mut out);
        let bytes: usize = out.iter().map(|f| f.bytes.len()).sum();
        // About 45 KB: three pieces, the first two nearly full.
        assert!(
            bytes > 2 * PIECE && out.len() == 3,
            "{bytes} bytes in {}",
            out.len()
        );
    }
}
