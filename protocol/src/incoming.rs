//! Turning WebSocket data frames into client messages, independent of any WebSocket
//! library: size limit, reassembly of fragmented messages, binary refusal and UTF-8
//! checking. Whole and fragmented messages get the same answers: a message that is
//! not UTF-8 is `INVALID_JSON` either way, and the socket stays open.

use crate::error::ErrorCode;

/// What a data frame amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A complete text message, to be parsed with [`crate::parse_client_frame`].
    Text(String),
    /// The message is refused; answer with a `protocol_error` of this code.
    Refused {
        /// Code to report.
        code: ErrorCode,
        /// What was wrong.
        message: String,
    },
    /// A fragment was taken in; the message is not complete yet.
    Pending,
}

/// A piece of a fragmented message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fragment {
    /// The first frame of a text message.
    FirstText,
    /// The first frame of a binary message.
    FirstBinary,
    /// A middle frame.
    Continue,
    /// The final frame.
    Last,
}

/// A message being reassembled from continuation frames.
#[derive(Debug)]
struct Partial {
    text: bool,
    data: Vec<u8>,
    too_large: bool,
    /// Payload bytes of the message so far, kept or not.
    seen: usize,
}

/// Reassembles one socket's messages. Holds at most `max_bytes` of a message.
#[derive(Debug)]
pub struct Reassembler {
    max_bytes: usize,
    partial: Option<Partial>,
}

impl Reassembler {
    /// A reassembler for messages of at most `max_bytes`.
    pub fn new(max_bytes: usize) -> Reassembler {
        Reassembler {
            max_bytes,
            partial: None,
        }
    }

    /// An unfragmented text frame's payload (which may not be UTF-8).
    pub fn text(&mut self, bytes: &[u8]) -> Incoming {
        if bytes.len() > self.max_bytes {
            return self.too_large(bytes.len());
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Incoming::Text(text.to_owned()),
            Err(_) => not_utf8(),
        }
    }

    /// An unfragmented binary frame: never accepted.
    pub fn binary(&mut self) -> Incoming {
        refused(ErrorCode::InvalidJson, "binary frames are not accepted")
    }

    /// One frame of a fragmented message.
    pub fn fragment(&mut self, kind: Fragment, bytes: &[u8]) -> Incoming {
        match kind {
            Fragment::FirstText | Fragment::FirstBinary => {
                // A new first frame abandons an unfinished message.
                self.partial = Some(Partial {
                    text: kind == Fragment::FirstText,
                    data: Vec::new(),
                    too_large: false,
                    seen: 0,
                });
            }
            Fragment::Continue | Fragment::Last => {}
        }
        let Some(partial) = self.partial.as_mut() else {
            return refused(ErrorCode::InvalidJson, "continuation without a first frame");
        };
        partial.seen = partial.seen.saturating_add(bytes.len());
        if partial.too_large || partial.data.len().saturating_add(bytes.len()) > self.max_bytes {
            // Read to the end of the message, but keep none of it.
            partial.too_large = true;
            partial.data = Vec::new();
        } else {
            partial.data.extend_from_slice(bytes);
        }
        if kind != Fragment::Last {
            return Incoming::Pending;
        }
        let Some(done) = self.partial.take() else {
            return Incoming::Pending;
        };
        if done.too_large {
            refused(
                ErrorCode::FrameTooLarge,
                format!("message exceeds the {} byte limit", self.max_bytes),
            )
        } else if !done.text {
            refused(ErrorCode::InvalidJson, "binary messages are not accepted")
        } else {
            match String::from_utf8(done.data) {
                Ok(text) => Incoming::Text(text),
                Err(_) => not_utf8(),
            }
        }
    }

    /// The answer to a text message of `len` bytes over the limit.
    pub fn too_large(&self, len: usize) -> Incoming {
        refused(
            ErrorCode::FrameTooLarge,
            format!(
                "frame of {len} bytes exceeds the {} byte limit",
                self.max_bytes
            ),
        )
    }

    /// Bytes held for an unfinished message.
    pub fn held(&self) -> usize {
        self.partial.as_ref().map_or(0, |p| p.data.len())
    }

    /// Payload bytes of the unfinished message so far, including those not kept (a
    /// message over the limit is read to its end but not held): the caller bounds
    /// how long it reads one.
    pub fn seen(&self) -> usize {
        self.partial.as_ref().map_or(0, |p| p.seen)
    }
}

/// The answer to a text message that is not UTF-8, fragmented or not.
pub fn not_utf8() -> Incoming {
    refused(ErrorCode::InvalidJson, "message is not UTF-8")
}

fn refused(code: ErrorCode, message: impl Into<String>) -> Incoming {
    Incoming::Refused {
        code,
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_answered_alike_whole_or_fragmented() {
        let mut r = Reassembler::new(100);
        let bad = [b'{', 0xff, 0xfe, b'}'];
        let whole = r.text(&bad);
        assert_eq!(
            r.fragment(Fragment::FirstText, &bad[..2]),
            Incoming::Pending
        );
        let pieces = r.fragment(Fragment::Last, &bad[2..]);
        assert_eq!(whole, pieces);
        assert_eq!(whole, not_utf8());
    }

    #[test]
    fn fragments_join_and_are_bounded() {
        let mut r = Reassembler::new(8);
        assert_eq!(
            r.fragment(Fragment::FirstText, b"{\"a\""),
            Incoming::Pending
        );
        assert_eq!(r.fragment(Fragment::Continue, b":1"), Incoming::Pending);
        assert_eq!(
            r.fragment(Fragment::Last, b"}"),
            Incoming::Text("{\"a\":1}".into())
        );
        r.fragment(Fragment::FirstText, b"12345");
        r.fragment(Fragment::Continue, b"6789");
        assert_eq!(r.held(), 0);
        assert_eq!(r.seen(), 9, "bytes read but not kept still count");
        assert!(matches!(
            r.fragment(Fragment::Last, b""),
            Incoming::Refused {
                code: ErrorCode::FrameTooLarge,
                ..
            }
        ));
        assert!(matches!(
            r.fragment(Fragment::Last, b"x"),
            Incoming::Refused {
                code: ErrorCode::InvalidJson,
                ..
            }
        ));
    }
}
