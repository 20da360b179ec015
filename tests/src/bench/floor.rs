//! `bench floor-serve`: the floor `bench fanout --floor` compares tandem with. A
//! minimal fan-out server that speaks just enough of tandem's protocol for the fanout
//! clients (`session.create`, `chat.subscribe`, `chat.send` of `/stream N`): it
//! serializes each event once (with the protocol crate's own types, as tandem does),
//! frames it once, hands the frames to every subscriber in shared batches of
//! [`BATCH`], and writes whatever is queued for a socket in one write. Nothing else: no store, no history, no replay,
//! no budgets (a producer simply waits for the slowest subscriber's bounded channel).
//!
//! With `--durable PATH` it is the durable floor (`bench fanout --floor durable`):
//! each batch is also committed to SQLite at PATH ([`super::floor_store`]) before it
//! is handed to the subscribers.
//!
//! It prints `tandem listening on http://127.0.0.1:PORT` like the real server, so
//! [`super::server::BenchServer`] starts it the same way, and runs its connections on
//! two threads (the real server's worker count on the benchmark machine).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use tandem_protocol::{Event, EventBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::floor_store::{FloorStore, Row};

/// Batches a subscriber's channel holds before its producer waits.
const CHANNEL: usize = 64;
/// Events a producer serializes before it hands them to the subscribers as one batch
/// (tandem's store commits in groups too; one wake-up and one write per batch).
const BATCH: usize = 128;
/// Runtime threads.
const THREADS: usize = 2;

/// One complete WebSocket frame.
type Frame = Arc<[u8]>;
/// Frames in order, shared by every socket they go to.
type Batch = Arc<Vec<Frame>>;

/// Subscribers (their channels) by session id; shared by every connection.
#[derive(Default)]
struct Hub {
    /// Each session's subscribers.
    sessions: Mutex<HashMap<String, Vec<mpsc::Sender<Batch>>>>,
    /// The next session's number (`ses_floorN`; N is its integer key in the store).
    next_id: AtomicU64,
    /// The durable floor's store; `None` for the plain floor.
    store: Option<FloorStore>,
}

/// Runs the floor server until the process is killed.
pub fn serve(args: &[String]) -> Result<(), String> {
    let store = match args {
        [] => None,
        [flag, path] if flag == "--durable" => Some(FloorStore::open(Path::new(path))?),
        _ => return Err(format!("floor-serve takes [--durable PATH], got {args:?}")),
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("{e}"))?;
    let hub = Arc::new(Hub {
        store,
        ..Hub::default()
    });
    let mut workers = Vec::new();
    for t in 0..THREADS {
        let (tx, mut rx) = mpsc::unbounded_channel::<std::net::TcpStream>();
        let hub = hub.clone();
        let thread = std::thread::Builder::new()
            .name(format!("floor-{t}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let Ok(rt) = rt else { return };
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async move {
                    while let Some(std_stream) = rx.recv().await {
                        let hub = hub.clone();
                        tokio::task::spawn_local(async move {
                            if let Err(e) = connection(std_stream, hub).await {
                                eprintln!("floor: connection: {e}");
                            }
                        });
                    }
                });
            })
            .map_err(|e| format!("spawn: {e}"))?;
        workers.push((tx, thread));
    }
    println!("tandem listening on http://{addr}");
    let _ = std::io::stdout().flush();
    for (i, stream) in listener.incoming().enumerate() {
        let stream = stream.map_err(|e| format!("accept: {e}"))?;
        let _ = stream.set_nodelay(true);
        stream
            .set_nonblocking(true)
            .map_err(|e| format!("nonblocking: {e}"))?;
        if workers[i % THREADS].0.send(stream).is_err() {
            return Err("a floor thread ended".into());
        }
    }
    Ok(())
}

/// One client: the upgrade, then requests in, frames out.
async fn connection(std_stream: std::net::TcpStream, hub: Arc<Hub>) -> Result<(), String> {
    let stream = TcpStream::from_std(std_stream).map_err(|e| format!("{e}"))?;
    let (mut read, mut write) = stream.into_split();
    let mut buf = Vec::with_capacity(8192);
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = read.read(&mut chunk).await.map_err(|e| format!("{e}"))?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let key = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| value.trim().to_string())
        })
        .ok_or("no Sec-WebSocket-Key")?;
    let accept = actix_http::ws::hash_key(key.as_bytes());
    let accept = String::from_utf8_lossy(&accept);
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    write
        .write_all(response.as_bytes())
        .await
        .map_err(|e| format!("{e}"))?;
    buf.drain(..head_end);

    let (tx, mut rx) = mpsc::channel::<Batch>(CHANNEL);
    // The writer: every frame queued at a wake-up goes out in one write.
    tokio::task::spawn_local(async move {
        let mut out = Vec::with_capacity(64 << 10);
        let mut batch = Vec::with_capacity(256);
        while rx.recv_many(&mut batch, 256).await > 0 {
            out.clear();
            for frames in batch.drain(..) {
                for frame in frames.iter() {
                    out.extend_from_slice(frame);
                }
            }
            if write.write_all(&out).await.is_err() {
                return;
            }
        }
    });
    requests(read, buf, tx, hub).await
}

/// Reads the client's (masked) frames and answers each request.
async fn requests(
    mut read: OwnedReadHalf,
    mut buf: Vec<u8>,
    tx: mpsc::Sender<Batch>,
    hub: Arc<Hub>,
) -> Result<(), String> {
    loop {
        while let Some((opcode, payload, used)) = parse_client_frame(&buf) {
            buf.drain(..used);
            match opcode {
                0x1 => {
                    let request: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                    handle(&request, &tx, &hub).await;
                }
                0x8 => return Ok(()),
                0x9 => {
                    let _ = tx.send(Arc::new(vec![frame_bytes(0xA, &payload)])).await;
                }
                _ => {}
            }
        }
        let mut chunk = [0u8; 8192];
        let n = read.read(&mut chunk).await.map_err(|e| format!("{e}"))?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Answers one request.
async fn handle(request: &Value, tx: &mpsc::Sender<Batch>, hub: &Arc<Hub>) {
    let request_id = request["requestId"].clone();
    match request["type"].as_str() {
        Some("session.create") => {
            let n = hub.next_id.fetch_add(1, Ordering::Relaxed);
            let reply = json!({"kind": "reply", "requestId": request_id,
                "session": {"id": format!("ses_floor{n}")}});
            let _ = tx
                .send(Arc::new(vec![text_frame(&reply.to_string())]))
                .await;
        }
        Some("chat.subscribe") => {
            let sessions = request["sessions"].as_array().cloned().unwrap_or_default();
            for s in sessions {
                let Some(sid) = s["sessionId"].as_str() else {
                    continue;
                };
                if let Ok(mut map) = hub.sessions.lock() {
                    map.entry(sid.to_string()).or_default().push(tx.clone());
                }
                let ack = json!({"kind": "chat_subscribed", "sessionId": sid, "lastSeq": 0});
                let _ = tx.send(Arc::new(vec![text_frame(&ack.to_string())])).await;
            }
        }
        Some("chat.send") => {
            let sid: tandem_protocol::SessionId =
                request["sessionId"].as_str().unwrap_or_default().into();
            let content = request["content"].as_str().unwrap_or_default().to_string();
            let reply = json!({"kind": "reply", "requestId": request_id});
            let _ = tx
                .send(Arc::new(vec![text_frame(&reply.to_string())]))
                .await;
            let subscribers = hub
                .sessions
                .lock()
                .map(|map| map.get(sid.as_str()).cloned().unwrap_or_default())
                .unwrap_or_default();
            tokio::task::spawn_local(produce(sid, content, subscribers, hub.clone()));
        }
        _ => {
            let reply = json!({"kind": "reply", "requestId": request_id});
            let _ = tx
                .send(Arc::new(vec![text_frame(&reply.to_string())]))
                .await;
        }
    }
}

/// Runs `/stream N` for a session: the turn's events, each serialized and framed once
/// and handed to every subscriber (the durable floor commits each batch first).
async fn produce(
    sid: tandem_protocol::SessionId,
    content: String,
    subscribers: Vec<mpsc::Sender<Batch>>,
    hub: Arc<Hub>,
) {
    let store = hub.store.as_ref();
    let key: i64 = sid
        .strip_prefix("ses_floor")
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1);
    let count: u64 = content
        .strip_prefix("/stream ")
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let turn = Some(tandem_protocol::TurnId::nth(1));
    let mut seq = 0;
    let mut whole = String::new();
    let mut bodies = vec![
        EventBody::TurnStarted {},
        EventBody::UserMessage {
            text: content.clone(),
            internal: false,
            delegated_by: None,
            content: Vec::new(),
        },
    ];
    let mut pending: Vec<Frame> = Vec::with_capacity(BATCH);
    // The durable floor's rows of the pending frames.
    let mut rows: Vec<Row> = Vec::with_capacity(if store.is_some() { BATCH } else { 0 });
    let durable = store.is_some();
    let mut frame_of = |body: EventBody, rows: &mut Vec<Row>| {
        seq += 1;
        let event = Event {
            session_id: sid.clone(),
            seq,
            ts: now_ms(),
            turn_id: turn.clone(),
            body,
        };
        let text = serde_json::to_string(&event).ok()?;
        let frame = text_frame(&text);
        if durable {
            rows.push(Row {
                session: key,
                seq,
                frame: text,
            });
        }
        Some(frame)
    };
    let flush = async |pending: &mut Vec<Frame>, rows: &mut Vec<Row>| {
        if let Some(store) = store {
            // Committed before it is sent.
            if let Err(e) = store.commit(std::mem::take(rows)).await {
                eprintln!("floor: {e}");
                return;
            }
        }
        let batch: Batch = Arc::new(std::mem::take(pending));
        for sub in &subscribers {
            let _ = sub.send(batch.clone()).await;
        }
        // Let the writers run, as a real producer is interleaved with them.
        tokio::task::yield_now().await;
    };
    for body in bodies.drain(..) {
        pending.extend(frame_of(body, &mut rows));
    }
    for i in 0..count {
        let text = format!("chunk {i} ");
        whole.push_str(&text);
        pending.extend(frame_of(EventBody::TextDelta { text }, &mut rows));
        if pending.len() >= BATCH {
            flush(&mut pending, &mut rows).await;
        }
    }
    pending.extend(frame_of(
        EventBody::AssistantMessage { text: whole },
        &mut rows,
    ));
    let completed: Result<EventBody, _> =
        serde_json::from_value(json!({"kind": "turn_completed", "status": "completed"}));
    if let Ok(body) = completed {
        pending.extend(frame_of(body, &mut rows));
    }
    flush(&mut pending, &mut rows).await;
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An unmasked text frame.
fn text_frame(text: &str) -> Frame {
    frame_bytes(0x1, text.as_bytes())
}

/// An unmasked final frame of `opcode` carrying `payload`.
fn frame_bytes(opcode: u8, payload: &[u8]) -> Frame {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xffff => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out.into()
}

/// One whole client frame at the start of `buf`: opcode, unmasked payload, bytes used.
fn parse_client_frame(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0f;
    let masked = buf[1] & 0x80 != 0;
    let (len, mut at) = match buf[1] & 0x7f {
        126 => (
            u64::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?])),
            4,
        ),
        127 => {
            let bytes: [u8; 8] = buf.get(2..10)?.try_into().ok()?;
            (u64::from_be_bytes(bytes), 10)
        }
        n => (u64::from(n), 2),
    };
    let mask: [u8; 4] = if masked {
        let m = buf.get(at..at + 4)?.try_into().ok()?;
        at += 4;
        m
    } else {
        [0; 4]
    };
    let end = at.checked_add(usize::try_from(len).ok()?)?;
    let payload = buf.get(at..end)?;
    let payload = payload
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ mask[i % 4])
        .collect();
    Some((opcode, payload, end))
}
