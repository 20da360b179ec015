//! A client of node B that stops reading a session of node A: B tells it that it
//! lagged, as it would for a local session, keeps serving a client that reads, and
//! the slow client resumes from B's copy without a gap or a duplicate.

use serde_json::json;
use tandem_tests::bench::raw_ws::RawWs;
use tandem_tests::bench::scan;
use tandem_tests::{eventually, NatsServer};

use crate::slow_client::{
    assert_contiguous_from, next, parse, read_to_the_lag, resume_after_the_lag, subscribe,
    turn_script, QUEUE_LIMIT,
};

/// Turns after B first reports a lag, each with a `/stream` of small events.
const TURNS_AFTER_LAG: usize = 5;
/// Upper bound on turns (~325 KB each); reaching it means B never noticed.
const MAX_TURNS: usize = 200;

#[actix_rt::test]
#[cfg_attr(not(has_nats), ignore = "nats-server is not installed")]
async fn a_client_of_another_node_that_stops_reading_is_told_it_lagged_and_resumes() {
    let nats = NatsServer::start();
    let a = nats.node("a");
    let b = nats.node_with(
        "b",
        &["--client-queue-bytes".into(), QUEUE_LIMIT.to_string()],
    );
    let mut driver = a.ws().await;
    let sid = driver.create_session().await;
    eventually("B to know A's session", async || {
        (b.get(&format!("/api/v1/sessions/{sid}")).await.0 == 200).then_some(())
    })
    .await;
    let connect =
        |url: String| async move { RawWs::connect(&url).await.unwrap_or_else(|e| panic!("{e}")) };
    let mut normal = connect(b.ws_url()).await;
    let mut slow = connect(b.ws_url()).await;
    subscribe(&mut normal, &sid, 0).await;
    // The slow client's last read until it catches up.
    subscribe(&mut slow, &sid, 0).await;

    // Turns on A until B reports the slow client, then a few more. The normal client
    // reads each turn to its end before the next is sent.
    let mut seen: Vec<Vec<u8>> = Vec::new();
    let mut lag_turn = None;
    for t in 0..MAX_TURNS {
        driver
            .ok(json!({"type": "chat.send", "sessionId": sid, "content": turn_script(t, lag_turn.is_some())}))
            .await;
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
            let done = scan::kind(&f) == Some(b"turn_completed");
            seen.push(f);
            if done {
                break;
            }
        }
        if lag_turn.is_none() && b.metric("tandem_lagged_notices_total").await > 0 {
            lag_turn = Some(t);
        }
        if lag_turn.is_some_and(|l| t >= l + TURNS_AFTER_LAG) {
            break;
        }
    }
    assert!(
        lag_turn.is_some(),
        "{MAX_TURNS} turns and B never reported the slow client"
    );
    assert_eq!(b.metric("tandem_clients_closed_slow_total").await, 0);

    // The normal client got every event, in order, exactly as A stored it.
    let last = assert_contiguous_from(&seen, 1, "normal client") - 1;
    let history = a.all_events(&sid).await;
    assert_eq!(history.len() as u64, last, "history length");
    for (f, stored) in seen.iter().zip(&history) {
        assert_eq!(&parse(f), stored);
    }

    // The slow client reads: what it was sent before the lag, in order, then the
    // notice.
    let (mut got, resume_from) = read_to_the_lag(&mut slow, &sid).await;
    assert_eq!(
        b.metric("tandem_lagged_notices_total").await,
        1,
        "one lag, one notice"
    );

    // Subscribing again after resumeFrom - 1 delivers exactly what it missed.
    resume_after_the_lag(&mut slow, &sid, resume_from, &mut got, &history).await;
    assert_eq!(b.metric("tandem_clients_closed_slow_total").await, 0);
}
