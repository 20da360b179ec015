//! A client that stops reading: the server keeps what it queues for it bounded, tells
//! it that it lagged, keeps serving everyone else in full, and lets it resume without
//! a gap.
//!
//! The slow client subscribes and then never reads while turns stream large events
//! through the session. Loopback sockets absorb several MB (the server's send buffer
//! and the client's receive buffer), so the test keeps producing until the server
//! reports a lag, then a few turns more. The server runs with a small per-client
//! budget so that this happens after a few MB.
//!
//! Until the slow client lags, turns carry only large events, so every delivery to it
//! is kilobytes and its byte budget fills long before its actor's mailbox (4,096
//! messages) could: the outcome is always a `lagged` notice, never the "cannot even be
//! told" close. Small `/stream` events come once it has lagged (and receives nothing
//! live). When a lagging client is closed instead (1008) is unit-tested in
//! `actors/src/gateway/tests.rs`: a reading client never is (`many_subscriptions.rs`),
//! and a client that does not read cannot even send a new subscription while its
//! queue is over its budget.

use std::time::Duration;

use serde_json::{json, Value};
use tandem_tests::bench::raw_ws::{Incoming, RawWs};
use tandem_tests::bench::scan;
use tandem_tests::bench::server::metric_value;
use tandem_tests::{Server, ServerOptions};

/// Per-client byte budget (`--client-queue-bytes`).
pub(crate) const QUEUE_LIMIT: usize = 512 << 10;
/// Each turn streams this many plain lines of this size: each becomes three
/// `text_delta`s and an `assistant_message`, so a line is twice its size in frames.
const LINES_PER_TURN: usize = 4;
const LINE_BYTES: usize = 16 << 10;
/// And this many small `text_delta`s (`/stream`), for the event count.
const STREAM_PER_TURN: u64 = 1000;
/// Turns after the server first reports a lag, each with a `/stream`: events the
/// slow client must catch up on (over 20,000 in all).
const TURNS_AFTER_LAG: usize = 20;
/// Upper bound on turns: ~325 KB each, so 200 turns is far more than any loopback
/// buffering; reaching it means the server never noticed the slow client.
const MAX_TURNS: usize = 200;
/// How long to wait for any one frame.
const FRAME_TIMEOUT: Duration = Duration::from_secs(30);

/// The script of turn `t`: big plain lines, then (when `stream`) a `/stream`.
pub(crate) fn turn_script(t: usize, stream: bool) -> String {
    let mut lines: Vec<String> = (0..LINES_PER_TURN)
        .map(|l| {
            let mut line = format!("turn {t} line {l} ");
            line.extend(std::iter::repeat_n('x', LINE_BYTES - line.len()));
            line
        })
        .collect();
    if stream {
        lines.push(format!("/stream {STREAM_PER_TURN}"));
    }
    lines.join("\n")
}

/// Reads `/metrics` into a lookup.
async fn metrics(server: &Server) -> impl Fn(&str) -> u64 {
    let (status, text) = server.get_text("/metrics").await;
    assert_eq!(status, 200, "metrics: {text}");
    move |name: &str| metric_value(&text, name).map_or(0, |v| v as u64)
}

/// Subscribes `ws` after `last_seq` and reads up to its `chat_subscribed`.
pub(crate) async fn subscribe(ws: &mut RawWs, sid: &str, last_seq: u64) {
    let frame =
        json!({"type": "chat.subscribe", "sessions": [{"sessionId": sid, "lastSeq": last_seq}]});
    ws.send_text(frame.to_string())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    match next(ws).await {
        Some(f) if scan::kind(&f) == Some(b"chat_subscribed") => {}
        Some(f) => panic!("unexpected frame before chat_subscribed: {}", text(&f)),
        None => panic!("socket closed while subscribing"),
    }
}

/// The next text frame; `None` when the socket closed (where the close code matters,
/// callers use [`next_or_close`]).
pub(crate) async fn next(ws: &mut RawWs) -> Option<Vec<u8>> {
    next_or_close(ws).await.ok()
}

/// The next text frame, or the close code.
async fn next_or_close(ws: &mut RawWs) -> Result<Vec<u8>, Option<u16>> {
    match ws.next_text(FRAME_TIMEOUT, <[u8]>::to_vec).await {
        Ok(Incoming::Text(f)) => Ok(f),
        Ok(Incoming::Closed(code)) => Err(code),
        Err(e) => panic!("{e}"),
    }
}

fn text(frame: &[u8]) -> String {
    String::from_utf8_lossy(&frame[..frame.len().min(300)]).into_owned()
}

pub(crate) fn parse(frame: &[u8]) -> Value {
    serde_json::from_slice(frame).unwrap_or_else(|e| panic!("bad frame {e}: {}", text(frame)))
}

/// Asserts that frames are events `from, from+1, ...` and returns the next seq.
pub(crate) fn assert_contiguous_from(frames: &[Vec<u8>], from: u64, who: &str) -> u64 {
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(
            scan::seq(f),
            Some(from + i as u64),
            "{who}: frame {i} out of sequence: {}",
            text(f)
        );
    }
    from + frames.len() as u64
}

/// Reads a client that stopped reading session `sid`: the events it was sent before
/// its lag, in order from seq 1, then the `lagged` notice; returns those events and
/// the notice's `resumeFrom`, checked to be right after them.
pub(crate) async fn read_to_the_lag(ws: &mut RawWs, sid: &str) -> (Vec<Vec<u8>>, u64) {
    let mut got: Vec<Vec<u8>> = Vec::new();
    let resume_from = loop {
        match next_or_close(ws).await {
            Ok(f) if scan::kind(&f) == Some(b"lagged") => {
                let notice = parse(&f);
                assert_eq!(notice["sessionId"], json!(sid));
                break notice["resumeFrom"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("lagged without resumeFrom: {notice}"));
            }
            Ok(f) if scan::seq(&f).is_some() => got.push(f),
            Ok(f) => panic!("unexpected frame: {}", text(&f)),
            Err(code) => panic!("slow client closed ({code:?}) instead of being told it lagged"),
        }
    };
    let next_seq = assert_contiguous_from(&got, 1, "slow client before its lag");
    assert_eq!(
        next_seq, resume_from,
        "resumeFrom is right after what it got"
    );
    (got, resume_from)
}

/// Subscribes a client that lagged again after `resume_from - 1` and reads until it
/// holds the whole `history` in `got`: exactly what it missed, no gap, no duplicate.
pub(crate) async fn resume_after_the_lag(
    ws: &mut RawWs,
    sid: &str,
    resume_from: u64,
    got: &mut Vec<Vec<u8>>,
    history: &[Value],
) {
    subscribe(ws, sid, resume_from - 1).await;
    while got.len() < history.len() {
        match next_or_close(ws).await {
            Ok(f) if scan::seq(&f).is_some() => got.push(f),
            Ok(f) => panic!("unexpected frame while resuming: {}", text(&f)),
            Err(code) => panic!("slow client closed while resuming ({code:?})"),
        }
    }
    assert_contiguous_from(got, 1, "slow client after resuming");
    for (f, stored) in got.iter().zip(history) {
        assert_eq!(&parse(f), stored);
    }
}

#[actix_rt::test]
async fn a_client_that_stops_reading_stays_bounded_is_told_and_resumes() {
    let server = Server::start_with(ServerOptions {
        args: vec!["--client-queue-bytes".into(), QUEUE_LIMIT.to_string()],
        ..ServerOptions::default()
    });
    let mut driver = server.ws().await;
    let sid = driver.create_session().await;
    let connect =
        |url: String| async move { RawWs::connect(&url).await.unwrap_or_else(|e| panic!("{e}")) };
    let mut normal = connect(server.ws_url()).await;
    let mut slow = connect(server.ws_url()).await;
    subscribe(&mut normal, &sid, 0).await;
    // The last read of the slow client until the end of the test. Its subscription
    // goes live at once: the session has no events yet.
    subscribe(&mut slow, &sid, 0).await;

    // Turn after turn until the server reports the slow client, then a few more.
    // The normal client reads each turn to its end before the next is sent, so at any
    // time the server holds at most one turn for it; one turn is kept well under the
    // budget (checked below), so the normal client can never lag.
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut lag_turn = None;
    for t in 0..MAX_TURNS {
        driver
            .ok(json!({"type": "chat.send", "sessionId": sid, "content": turn_script(t, lag_turn.is_some())}))
            .await;
        let mut turn_bytes = 0;
        loop {
            let Some(f) = next(&mut normal).await else {
                panic!("normal client closed in turn {t}");
            };
            assert_ne!(
                scan::kind(&f),
                Some(&b"lagged"[..]),
                "the normal client lagged in turn {t}"
            );
            if scan::seq(&f).is_none() {
                continue;
            }
            turn_bytes += f.len();
            let done = scan::kind(&f) == Some(b"turn_completed");
            seen.push(f);
            if done {
                break;
            }
        }
        assert!(
            turn_bytes < QUEUE_LIMIT,
            "a turn ({turn_bytes} bytes) must fit the budget for the normal client's sake"
        );
        if lag_turn.is_none() {
            let m = metrics(&server).await;
            if m("tandem_lagged_notices_total") + m("tandem_clients_closed_slow_total") > 0 {
                // Checked before any small event is sent: it lagged, it was not closed.
                assert_eq!(m("tandem_clients_closed_slow_total"), 0, "closed, not told");
                lag_turn = Some(t);
            }
        }
        if lag_turn.is_some_and(|l| t >= l + TURNS_AFTER_LAG) {
            break;
        }
    }
    assert!(
        lag_turn.is_some(),
        "{MAX_TURNS} turns and the slow client never lagged"
    );

    // (c) The normal client got every event, in order, exactly as stored.
    let last = assert_contiguous_from(&seen, 1, "normal client") - 1;
    assert!(last > 20_000, "only {last} events");
    let history = server.all_events(&sid).await;
    assert_eq!(history.len() as u64, last, "history length");
    for (f, stored) in seen.iter().zip(&history) {
        assert_eq!(&parse(f), stored);
    }

    // (b) The slow client finally reads: everything it was sent before the lag, in
    // order, then the lag notice.
    let (mut got, resume_from) = read_to_the_lag(&mut slow, &sid).await;
    assert!(
        resume_from <= last,
        "the lag happened before the last event"
    );
    let m = metrics(&server).await;
    assert!(
        m("tandem_events_dropped_lag_total") > 0,
        "no events dropped"
    );
    assert_eq!(m("tandem_lagged_notices_total"), 1, "one lag, one notice");
    assert_eq!(
        m("tandem_clients_closed_slow_total"),
        0,
        "a client that lagged once is not closed"
    );

    // (d) Subscribing again after resumeFrom - 1 delivers exactly what was missed.
    resume_after_the_lag(&mut slow, &sid, resume_from, &mut got, &history).await;

    // (a) The server never held more for one client than its budget, plus one frame:
    // live deliveries are checked against the budget before they are queued, and a
    // replay page (the resumed subscription) is read only while the queue is at most
    // half full and ends with the row that takes it past half the budget, so it can
    // overshoot by that one row, at most the largest event frame (a turn's
    // `user_message`). Control frames (acks, the lag notice) are not counted against
    // the budget; they are a few hundred bytes, and the one-frame allowance covers
    // them many times over.
    let largest = seen.iter().map(Vec::len).max().unwrap_or(0) as u64;
    let m = metrics(&server).await;
    let (limit, peak) = (
        m("tandem_client_queue_limit_bytes"),
        m("tandem_client_queued_bytes_peak"),
    );
    assert_eq!(limit, QUEUE_LIMIT as u64);
    assert!(
        peak <= limit + largest,
        "peak {peak} bytes queued for one client exceeds the budget {limit} + one frame {largest}"
    );
    slow.close().await;
    normal.close().await;
}
