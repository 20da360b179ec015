//! How events travel in the events stream: a JetStream message carries a run of
//! consecutive events of one session.
//!
//! One message per event cost every event a JetStream store, an ack and a delivery
//! (about 20 µs of NATS CPU per event at ten clients), which kept cross-node
//! fan-out under half of one node's. A message now holds up to [`MAX_EVENTS`] events
//! or [`MAX_BYTES`] of frames, whichever comes first, so the per-message costs are
//! shared by the run.
//!
//! Layout: the payload is the frames joined by `\n` (a frame is compact JSON, which
//! never holds a raw newline; a frame that does travels alone, its payload the frame
//! itself). Headers:
//! - `Tandem-Seq`: the last seq of the run;
//! - `Tandem-First`: the first, when the run has more than one event;
//! - `Tandem-Msgs`: how many messages the subject holds once this one is stored, as
//!   the publisher counts them (see [`super::publish`]: a subject whose message count
//!   equals its newest message's `Tandem-Msgs` has lost nothing);
//! - `Tandem-High`: the highest seq the subject holds once this one is stored, when
//!   that is not this message's last (a hole filled after later events);
//! - `Nats-Msg-Id`: `<session>:<first>`, so JetStream drops a resend of the same run.
//!
//! A message with only `Tandem-Seq` (as the previous release published) is one event,
//! and its seq counts both the subject's messages and its highest seq.

use async_nats::HeaderMap;
use bytes::{Bytes, BytesMut};

use super::SEQ_HEADER;

/// Header carrying the first seq of a run of more than one event.
const FIRST_HEADER: &str = "Tandem-First";
/// Header carrying the subject's message count once this message is stored.
const MSGS_HEADER: &str = "Tandem-Msgs";
/// Header carrying the subject's highest seq once this message is stored.
const HIGH_HEADER: &str = "Tandem-High";

/// Events per message, at most.
pub(super) const MAX_EVENTS: usize = 512;
/// Frame bytes per message, at most (NATS refuses payloads over its `max_payload`,
/// 1 MiB by default); a single larger frame still travels, alone, as it did before.
pub(super) const MAX_BYTES: usize = 256 * 1024;

/// What a message's headers say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RunHeader {
    /// Its first event's seq.
    pub first: u64,
    /// Its last event's seq.
    pub last: u64,
    /// The subject's message count once it is stored.
    pub msgs: u64,
    /// The subject's highest seq once it is stored.
    pub high: u64,
}

impl RunHeader {
    /// The headers of a message carrying this run.
    pub fn encode(&self, session_id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            async_nats::header::NATS_MESSAGE_ID,
            format!("{session_id}:{}", self.first).as_str(),
        );
        headers.insert(SEQ_HEADER, self.last.to_string().as_str());
        if self.first != self.last {
            headers.insert(FIRST_HEADER, self.first.to_string().as_str());
        }
        headers.insert(MSGS_HEADER, self.msgs.to_string().as_str());
        if self.high != self.last {
            headers.insert(HIGH_HEADER, self.high.to_string().as_str());
        }
        headers
    }

    /// Reads a message's headers; `None` without a valid `Tandem-Seq` or with a run
    /// that ends before it starts.
    pub fn decode(headers: &HeaderMap) -> Option<RunHeader> {
        let number = |name: &str| -> Option<Option<u64>> {
            match headers.get(name) {
                None => Some(None),
                Some(v) => v.as_str().parse().ok().map(Some),
            }
        };
        let last = number(SEQ_HEADER)??;
        let first = number(FIRST_HEADER)?.unwrap_or(last);
        let msgs = number(MSGS_HEADER)?.unwrap_or(last);
        let high = number(HIGH_HEADER)?.unwrap_or(last);
        (first <= last && first > 0).then_some(RunHeader {
            first,
            last,
            msgs,
            high,
        })
    }
}

/// A run being gathered for one message.
#[derive(Debug, Default)]
pub(super) struct Run {
    /// The first seq gathered (0 while empty).
    pub first: u64,
    /// The last seq gathered.
    pub last: u64,
    /// The frames joined by `\n`.
    payload: BytesMut,
    /// Whether a frame with a newline was taken: it travels alone.
    alone: bool,
}

impl Run {
    /// Whether nothing was gathered yet.
    pub fn is_empty(&self) -> bool {
        self.first == 0
    }

    /// Takes event `seq` when it continues the run and fits; `false` means the run
    /// must go out first (the caller then starts a new run with it, which always
    /// takes it).
    pub fn push(&mut self, seq: u64, frame: &[u8]) -> bool {
        let newline = frame.contains(&b'\n');
        if !self.is_empty() {
            if self.alone || newline || seq != self.last + 1 {
                return false;
            }
            let fits = self.payload.len() + 1 + frame.len() <= MAX_BYTES
                && usize::try_from(seq - self.first).is_ok_and(|n| n < MAX_EVENTS);
            if !fits {
                return false;
            }
            self.payload.extend_from_slice(b"\n");
        } else {
            self.first = seq;
        }
        self.payload.extend_from_slice(frame);
        self.last = seq;
        self.alone = newline;
        true
    }

    /// The payload, leaving the run empty.
    pub fn take(&mut self) -> (u64, u64, Bytes) {
        let taken = (self.first, self.last, self.payload.split().freeze());
        *self = Run::default();
        taken
    }
}

/// A message whose payload does not hold one frame per seq of its run.
#[derive(Debug, thiserror::Error)]
#[error("a message for seqs {first}..={last} holds {frames} frames")]
pub(super) struct MisshapenRun {
    first: u64,
    last: u64,
    frames: usize,
}

/// The frames of a message, by seq; an error when the payload does not hold one frame
/// per seq of its run.
pub(super) fn frames(run: &RunHeader, payload: &Bytes) -> Result<Vec<(u64, Bytes)>, MisshapenRun> {
    if run.first == run.last {
        return Ok(vec![(run.first, payload.clone())]);
    }
    let mut out = Vec::new();
    let mut start = 0;
    for (seq, end) in (run.first..).zip(
        payload
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i)
            .chain(std::iter::once(payload.len())),
    ) {
        out.push((seq, payload.slice(start..end)));
        start = end + 1;
    }
    match out.last() {
        Some((seq, _)) if *seq == run.last => Ok(out),
        _ => Err(MisshapenRun {
            first: run.first,
            last: run.last,
            frames: out.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(frames: &[(u64, &str)]) -> (RunHeader, Bytes) {
        let mut run = Run::default();
        for (seq, frame) in frames {
            assert!(run.push(*seq, frame.as_bytes()));
        }
        let (first, last, payload) = run.take();
        let header = RunHeader {
            first,
            last,
            msgs: 1,
            high: last,
        };
        (header, payload)
    }

    #[test]
    fn a_run_round_trips_through_headers_and_payload() {
        let (header, payload) = run_of(&[(4, r#"{"seq":4}"#), (5, r#"{"seq":5}"#)]);
        let decoded = RunHeader::decode(&header.encode("s1")).unwrap();
        assert_eq!(decoded, header);
        let got = frames(&decoded, &payload).unwrap();
        assert_eq!(
            got,
            vec![
                (4, Bytes::from_static(br#"{"seq":4}"#)),
                (5, Bytes::from_static(br#"{"seq":5}"#))
            ]
        );
        let id = header.encode("s1");
        assert_eq!(
            id.get(async_nats::header::NATS_MESSAGE_ID)
                .unwrap()
                .as_str(),
            "s1:4"
        );
    }

    #[test]
    fn a_message_of_the_previous_release_is_one_event() {
        let mut old = HeaderMap::new();
        old.insert(SEQ_HEADER, "7");
        let header = RunHeader::decode(&old).unwrap();
        assert_eq!(
            header,
            RunHeader {
                first: 7,
                last: 7,
                msgs: 7,
                high: 7
            }
        );
        let frame = Bytes::from_static(b"{\"a\":\"x\ny\"}");
        assert_eq!(frames(&header, &frame).unwrap(), vec![(7, frame.clone())]);
    }

    #[test]
    fn a_run_stops_at_a_gap_a_newline_and_its_limits() {
        let mut run = Run::default();
        assert!(run.push(1, b"a"));
        assert!(!run.push(3, b"c"), "a gap ends the run");
        assert!(
            !run.push(2, b"b\nb"),
            "a frame with a newline travels alone"
        );
        let mut alone = Run::default();
        assert!(alone.push(2, b"b\nb"));
        assert!(!alone.push(3, b"c"), "nothing joins a frame with a newline");
        let mut full = Run::default();
        for seq in 1..=MAX_EVENTS as u64 {
            assert!(full.push(seq, b"x"));
        }
        assert!(!full.push(MAX_EVENTS as u64 + 1, b"x"));
        let mut big = Run::default();
        assert!(
            big.push(1, &vec![b'x'; MAX_BYTES]),
            "one large frame still goes"
        );
        assert!(!big.push(2, b"x"));
    }

    #[test]
    fn a_payload_with_the_wrong_number_of_frames_is_refused() {
        let header = RunHeader {
            first: 1,
            last: 3,
            msgs: 1,
            high: 3,
        };
        assert!(frames(&header, &Bytes::from_static(b"a\nb")).is_err());
        assert!(frames(&header, &Bytes::from_static(b"a\nb\nc\nd")).is_err());
        let mut bad = HeaderMap::new();
        bad.insert(SEQ_HEADER, "3");
        bad.insert(FIRST_HEADER, "5");
        assert_eq!(RunHeader::decode(&bad), None);
    }
}
