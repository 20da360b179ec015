//! The two byte streams of a WebSocket connection, owned here rather than by a
//! framework, so that what the server holds for a client is counted until it really
//! leaves.
//!
//! - [`Outbox`] holds the frames waiting for the client: the gateway's deliveries and
//!   the connection's own replies, errors, pings, pongs and close. Every frame's bytes
//!   are charged to the client's [`ClientQueue`] (the gateway charges its deliveries;
//!   [`Outbox::push`] charges the rest).
//! - [`OutboxBody`] is the HTTP response body. actix-http polls it only while its
//!   write buffer has room (`h1_write_buffer_size`, 32 KiB), so frames leave the
//!   outbox, and their bytes leave the client's budget, only as fast as the socket
//!   takes them. What the accounting cannot see is that write buffer plus one
//!   [`CHUNK`].
//! - [`Reader`] decodes the client's frames, and reads only while the client's queue is
//!   within its budget: a client that does not read its replies cannot make the server
//!   hold more than its budget plus one reply for it, however much it asks.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use actix::Recipient;
use actix_codec::Decoder;
use actix_http::ws::{CloseReason, Codec, Frame, OpCode, Parser, ProtocolError};
use actix_web::error::PayloadError;
use actix_web::web::{Bytes, BytesMut};
use bytestring::ByteString;
use futures_util::Stream;
use tandem_actors::gateway::{Drained, Framed};
use tandem_actors::ClientQueue;

/// Frames encoded per poll of the body, at most (a larger single frame goes alone).
pub const CHUNK: usize = 16 << 10;
/// What a control frame (ping, pong, close) is charged on top of its payload: its
/// place in the outbox costs memory even when its payload is empty, so a client that
/// sends pings and reads no pongs still reaches its budget.
const CONTROL_CHARGE: usize = 64;

/// One frame waiting for the client.
#[derive(Debug)]
pub enum Out {
    /// A text frame (every protocol frame is one).
    Text(ByteString),
    /// Whole text frames the gateway framed once for every client (live events):
    /// handed to the HTTP layer as they are.
    Framed(Bytes),
    /// A ping (the heartbeat).
    Ping,
    /// The answer to the client's ping.
    Pong(Bytes),
    /// The close frame; nothing is written after it.
    Close(Option<CloseReason>),
}

impl Out {
    fn charge(&self) -> usize {
        match self {
            Out::Text(text) => text.len(),
            // Charged by the gateway, never through this.
            Out::Framed(_) => 0,
            Out::Ping => CONTROL_CHARGE,
            Out::Pong(payload) => CONTROL_CHARGE + payload.len(),
            Out::Close(reason) => {
                CONTROL_CHARGE
                    + reason
                        .as_ref()
                        .map_or(0, |r| r.description.as_ref().map_or(0, String::len))
            }
        }
    }

    fn encode(self, dst: &mut BytesMut) {
        match self {
            Out::Text(text) => {
                Parser::write_message(dst, text.as_bytes(), OpCode::Text, true, false)
            }
            Out::Framed(bytes) => dst.extend_from_slice(&bytes),
            Out::Ping => Parser::write_message(dst, b"", OpCode::Ping, true, false),
            Out::Pong(payload) => Parser::write_message(dst, payload, OpCode::Pong, true, false),
            Out::Close(reason) => Parser::write_close(dst, reason, false),
        }
    }
}

#[derive(Default)]
struct State {
    /// Frames in order, each with the bytes it was charged.
    frames: VecDeque<(Out, usize)>,
    /// No frame is taken any more (a close was queued, or the connection is done);
    /// the body ends once what is queued is written.
    closing: bool,
    /// The body has ended (or must end at once: the client was given up on).
    ended: bool,
    /// The body, waiting for frames.
    body: Option<Waker>,
    /// The reader, waiting for the queue to drain.
    reader: Option<Waker>,
    /// Answers of reads being made: no further frame is read until they are queued,
    /// so a client that asks for page after page and reads none is held to its budget
    /// plus one answer, as when every answer was made before the next frame was read.
    reads: usize,
}

/// The frames waiting for one client, shared by its connection actor (which pushes),
/// the gateway's eviction (which abandons) and the response body (which takes).
pub struct Outbox {
    state: Mutex<State>,
    queue: Arc<ClientQueue>,
}

impl Outbox {
    /// An empty outbox charging `queue`.
    pub fn new(queue: Arc<ClientQueue>) -> Arc<Outbox> {
        Arc::new(Outbox {
            state: Mutex::new(State::default()),
            queue,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues frames the gateway already charged (a delivery): `frames`, then the
    /// pieces it framed itself.
    pub fn push_charged(&self, frames: Vec<ByteString>, framed: Vec<Framed>) {
        let mut st = self.lock();
        if st.closing {
            // Never to be written: give their bytes back.
            let charged = frames.iter().map(|f| f.len()).sum::<usize>()
                + framed.iter().map(|f| f.charged).sum::<usize>();
            self.queue.release(charged);
            return;
        }
        st.frames.extend(frames.into_iter().map(|f| {
            let n = f.len();
            (Out::Text(f), n)
        }));
        st.frames.extend(
            framed
                .into_iter()
                .map(|f| (Out::Framed(f.bytes), f.charged)),
        );
        if let Some(w) = st.body.take() {
            w.wake();
        }
    }

    /// Queues one of the connection's own frames, charging it to the client's budget.
    /// A close frame is the last one taken.
    pub fn push(&self, out: Out) {
        let mut st = self.lock();
        if st.closing || self.queue.evicted() {
            return;
        }
        let n = out.charge();
        st.closing = matches!(out, Out::Close(_));
        self.queue.add(n);
        st.frames.push_back((out, n));
        if let Some(w) = st.body.take() {
            w.wake();
        }
    }

    /// Takes no more frames; the body ends once what is queued is written.
    pub fn finish(&self) {
        let mut st = self.lock();
        st.closing = true;
        if let Some(w) = st.body.take() {
            w.wake();
        }
    }

    /// True once the body has ended.
    pub fn ended(&self) -> bool {
        self.lock().ended
    }

    /// Drops everything queued and ends both streams at once (the client was given
    /// up on; its socket is being shut).
    pub fn abandon(&self) {
        let (body, reader) = {
            let mut st = self.lock();
            self.queue
                .release(st.frames.drain(..).map(|(_, charged)| charged).sum());
            st.closing = true;
            st.ended = true;
            (st.body.take(), st.reader.take())
        };
        for w in [body, reader].into_iter().flatten() {
            w.wake();
        }
    }

    /// A read's answer is being made: the reader waits for it ([`Outbox::read_answered`]).
    pub fn read_started(&self) {
        self.lock().reads += 1;
    }

    /// A read's answer was queued (or will never be).
    pub fn read_answered(&self) {
        let mut st = self.lock();
        st.reads = st.reads.saturating_sub(1);
        if st.reads == 0 {
            if let Some(w) = st.reader.take() {
                w.wake();
            }
        }
    }

    /// Ready(true) while the client's queue is within its budget and no read's answer
    /// is being made, Ready(false) once the connection is ending; otherwise waits for
    /// the body to take frames (or the answer to be queued).
    fn poll_room(&self, cx: &mut Context<'_>) -> Poll<bool> {
        let mut st = self.lock();
        if st.ended || self.queue.evicted() {
            return Poll::Ready(false);
        }
        // The waker first, then the check: the body takes it after it released bytes.
        st.reader = Some(cx.waker().clone());
        if st.reads == 0 && self.queue.queued() <= self.queue.limit() {
            st.reader = None;
            return Poll::Ready(true);
        }
        Poll::Pending
    }
}

/// The response body: encodes the outbox's frames when actix-http asks for more.
pub struct OutboxBody {
    outbox: Arc<Outbox>,
    gateway: Recipient<Drained>,
    client_id: u64,
}

impl OutboxBody {
    /// The body of client `client_id`; tells `gateway` when its queue has drained.
    pub fn new(outbox: Arc<Outbox>, gateway: Recipient<Drained>, client_id: u64) -> Self {
        OutboxBody {
            outbox,
            gateway,
            client_id,
        }
    }
}

impl Stream for OutboxBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let outbox = &this.outbox;
        let mut buf = BytesMut::new();
        let mut ready: Option<Bytes> = None;
        let mut taken = 0;
        {
            let mut st = outbox.lock();
            if st.ended || outbox.queue.evicted() {
                st.frames.clear();
                st.ended = true;
                return Poll::Ready(None);
            }
            while let Some((out, charged)) = st.frames.pop_front() {
                if let Out::Framed(bytes) = out {
                    // Already framed and shared: handed over as it is, alone, so it is
                    // never copied here (actix-http copies it once, into its buffer).
                    if buf.is_empty() {
                        taken = charged;
                        ready = Some(bytes);
                    } else {
                        st.frames.push_front((Out::Framed(bytes), charged));
                    }
                    break;
                }
                taken += charged;
                let close = matches!(out, Out::Close(_));
                out.encode(&mut buf);
                if close {
                    st.frames.clear();
                    st.closing = true;
                    break;
                }
                if buf.len() >= CHUNK {
                    break;
                }
            }
            if buf.is_empty() && ready.is_none() {
                if st.closing {
                    st.ended = true;
                    return Poll::Ready(None);
                }
                st.body = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        // Handed to actix-http, which polls only while its write buffer has room:
        // these bytes leave the client's budget now.
        if outbox.queue.delivered(taken) {
            this.gateway.do_send(Drained {
                client_id: this.client_id,
            });
        }
        // The reader's waker is taken only after the bytes left the budget: a reader
        // that registers before this sees it woken, one that registers after sees the
        // room (`poll_room` registers, then looks). Taken before the release, a reader
        // registering in between would wait for the next frame written.
        let reader = outbox.lock().reader.take();
        if let Some(w) = reader {
            w.wake();
        }
        Poll::Ready(Some(Ok(ready.unwrap_or_else(|| buf.freeze()))))
    }
}

impl Drop for OutboxBody {
    fn drop(&mut self) {
        // The connection is gone (or the body ended): nothing queued can be written.
        self.outbox.abandon();
    }
}

/// Why the client's byte stream failed.
#[derive(Debug)]
pub enum ReadError {
    /// Not valid WebSocket framing (or a frame over the codec's limit).
    Protocol(ProtocolError),
    /// The byte stream itself failed (or [`crate::ws_limit::FrameLimit`] cut it).
    Payload(PayloadError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Protocol(e) => write!(f, "{e}"),
            ReadError::Payload(e) => write!(f, "{e}"),
        }
    }
}

/// The client's frames, decoded from its byte stream; reads only while the client's
/// queue is within its budget (see the module doc).
pub struct Reader<S> {
    payload: S,
    buf: BytesMut,
    codec: Codec,
    /// The byte stream ended (or failed): decode what is buffered, then end.
    done: bool,
    outbox: Arc<Outbox>,
}

impl<S> Reader<S> {
    /// Decodes `payload` with frames up to `max_frame` bytes.
    pub fn new(payload: S, max_frame: usize, outbox: Arc<Outbox>) -> Self {
        Reader {
            payload,
            buf: BytesMut::new(),
            codec: Codec::new().max_size(max_frame),
            done: false,
            outbox,
        }
    }
}

impl<S> Stream for Reader<S>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    type Item = Result<Frame, ReadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.outbox.poll_room(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(false) => return Poll::Ready(None),
            Poll::Ready(true) => {}
        }
        loop {
            match this.codec.decode(&mut this.buf) {
                Ok(Some(frame)) => return Poll::Ready(Some(Ok(frame))),
                Ok(None) if this.done => return Poll::Ready(None),
                Ok(None) => {}
                Err(e) => {
                    this.done = true;
                    this.buf.clear();
                    return Poll::Ready(Some(Err(ReadError::Protocol(e))));
                }
            }
            match Pin::new(&mut this.payload).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.buf.extend_from_slice(&chunk),
                Poll::Ready(None) => this.done = true,
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    this.buf.clear();
                    return Poll::Ready(Some(Err(ReadError::Payload(e))));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use actix::{Actor, Handler};
    use futures_util::task::noop_waker_ref;
    use tandem_actors::metrics::Metrics;

    use super::*;

    /// Stands in for the gateway.
    struct Gateway;
    impl Actor for Gateway {
        type Context = actix::Context<Self>;
    }
    impl Handler<Drained> for Gateway {
        type Result = ();
        fn handle(&mut self, _: Drained, _: &mut actix::Context<Self>) {}
    }

    fn poll<S: Stream + Unpin>(s: &mut S) -> Poll<Option<S::Item>> {
        Pin::new(s).poll_next(&mut Context::from_waker(noop_waker_ref()))
    }

    /// Bytes leave the client's budget only when the response body is polled (which
    /// actix-http does only while its write buffer has room), a chunk at a time.
    #[actix_rt::test]
    async fn bytes_count_until_the_body_takes_them() {
        let metrics = Arc::new(Metrics::default());
        let queue = Arc::new(ClientQueue::new(64 << 10, metrics.clone()));
        let outbox = Outbox::new(queue.clone());
        let mut body = OutboxBody::new(outbox.clone(), Gateway.start().recipient(), 1);
        // A delivery the gateway charged, then a reply the connection charges.
        let frames: Vec<ByteString> = (0..100).map(|i| format!("{i:01000}").into()).collect();
        queue.add(100 * 1000);
        outbox.push_charged(frames, Vec::new());
        outbox.push(Out::Text("r".repeat(500).into()));
        assert_eq!(queue.queued(), 100_500);
        assert_eq!(metrics.client_queued_bytes.load(Ordering::Relaxed), 100_500);
        let mut written = 0;
        let mut chunks = 0;
        while let Poll::Ready(Some(Ok(chunk))) = poll(&mut body) {
            chunks += 1;
            written += chunk.len();
            // Never more than a chunk and one frame at a time.
            assert!(chunk.len() <= CHUNK + 1000 + 14, "{}", chunk.len());
            // What is not yet taken still counts, to the byte. Chunks end at frame
            // ends; each frame here has a 4-byte header.
            let whole = (written / 1004).min(100);
            let reply = if written > whole * 1004 { 500 } else { 0 };
            let taken = whole * 1000 + reply;
            assert_eq!(queue.queued(), 100_500 - taken, "after {chunks} chunks");
            if queue.queued() == 0 {
                break;
            }
        }
        assert!(chunks >= 6, "{chunks} chunks");
        assert_eq!(queue.queued(), 0);
        assert_eq!(metrics.client_queued_bytes.load(Ordering::Relaxed), 0);
        assert!(poll(&mut body).is_pending());
        // A close is the last frame; the body then ends.
        outbox.push(Out::Close(None));
        outbox.push(Out::Text("after the close".into()));
        assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
        assert!(matches!(poll(&mut body), Poll::Ready(None)));
        assert_eq!(queue.queued(), 0);
    }

    /// Records that it was woken.
    #[derive(Default)]
    struct Woken(std::sync::atomic::AtomicBool);
    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A reader paused while the client is over its budget is woken once the body
    /// has taken frames and their bytes have left the budget, and then finds room.
    #[actix_rt::test]
    async fn a_paused_reader_is_woken_when_the_body_makes_room() {
        let queue = Arc::new(ClientQueue::new(1000, Arc::new(Metrics::default())));
        let outbox = Outbox::new(queue.clone());
        let mut body = OutboxBody::new(outbox.clone(), Gateway.start().recipient(), 1);
        queue.add(1500);
        outbox.push_charged(vec!["x".repeat(1500).into()], Vec::new());
        let woken = Arc::new(Woken::default());
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(outbox.poll_room(&mut cx).is_pending(), "over the budget");
        assert!(matches!(poll(&mut body), Poll::Ready(Some(Ok(_)))));
        assert!(woken.0.load(Ordering::SeqCst), "the reader was not woken");
        assert!(matches!(outbox.poll_room(&mut cx), Poll::Ready(true)));
    }

    /// Pieces the gateway framed go to the HTTP layer as they are (the same shared
    /// buffer, not a copy), after the frames queued before them, and release exactly
    /// the charge the gateway put on them.
    #[actix_rt::test]
    async fn framed_pieces_are_handed_over_uncopied() {
        let metrics = Arc::new(Metrics::default());
        let queue = Arc::new(ClientQueue::new(64 << 10, metrics));
        let outbox = Outbox::new(queue.clone());
        let mut body = OutboxBody::new(outbox.clone(), Gateway.start().recipient(), 1);
        let mut piece = BytesMut::new();
        for text in ["{\"seq\":1}", "{\"seq\":2}"] {
            tandem_actors::gateway::framed::text_header(text.len(), &mut piece);
            piece.extend_from_slice(text.as_bytes());
        }
        let piece = piece.freeze();
        let framed = Framed {
            bytes: piece.clone(),
            charged: 18,
        };
        queue.add(3 + 18);
        outbox.push_charged(vec!["ack".into()], vec![framed]);
        assert_eq!(queue.queued(), 21);
        let Poll::Ready(Some(Ok(first))) = poll(&mut body) else {
            panic!("the ack first");
        };
        assert_eq!(&first[..], b"\x81\x03ack");
        assert_eq!(queue.queued(), 18);
        let Poll::Ready(Some(Ok(second))) = poll(&mut body) else {
            panic!("then the piece");
        };
        assert_eq!(second, piece);
        assert_eq!(second.as_ptr(), piece.as_ptr(), "the shared buffer itself");
        assert_eq!(queue.queued(), 0);
        assert!(poll(&mut body).is_pending());
    }

    /// The reader takes the client's next frame only while its queue is within its
    /// budget.
    #[actix_rt::test]
    async fn the_reader_waits_while_the_queue_is_over_budget() {
        let metrics = Arc::new(Metrics::default());
        let queue = Arc::new(ClientQueue::new(1000, metrics));
        let outbox = Outbox::new(queue.clone());
        let mut body = OutboxBody::new(outbox.clone(), Gateway.start().recipient(), 1);
        // Two masked text frames from the client.
        let mut bytes = Vec::new();
        for text in ["one", "two"] {
            bytes.extend([0x81, 0x80 | text.len() as u8, 0, 0, 0, 0]);
            bytes.extend(text.as_bytes());
        }
        let payload = futures_util::stream::iter(vec![Ok::<_, PayloadError>(Bytes::from(bytes))]);
        let mut reader = Reader::new(payload, 1 << 20, outbox.clone());
        assert!(
            matches!(poll(&mut reader), Poll::Ready(Some(Ok(Frame::Text(t)))) if &t[..] == b"one")
        );
        // Its reply is larger than the whole budget: nothing more is read...
        outbox.push(Out::Text("x".repeat(1500).into()));
        assert!(poll(&mut reader).is_pending());
        // ...until the socket has taken it.
        let mut taken = false;
        while let Poll::Ready(Some(Ok(_))) = poll(&mut body) {
            taken = true;
        }
        assert!(taken);
        assert!(
            matches!(poll(&mut reader), Poll::Ready(Some(Ok(Frame::Text(t)))) if &t[..] == b"two")
        );
    }
}
