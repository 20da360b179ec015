//! The session actor through the runtime, without HTTP: a real store and gateway, the
//! scripted agent, and a stand-in client recording what is delivered.

use serde_json::{json, Value};

use super::SendOutcome;
use crate::error::RuntimeError;
use crate::testkit::{seqs, turns_done, RuntimeFixture};

/// `(turnId, kind)` of each event, for checking how turns follow one another.
fn turn_kinds(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["kind"] == "turn_started" || e["kind"] == "turn_completed")
        .map(|e| {
            (
                e["turnId"].as_str().unwrap_or("?").to_string(),
                e["kind"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect()
}

/// One turn at a time: a second message is refused while a turn runs, queued ones run
/// in order after it, and `seq` is gap-free and monotonic across all of them, live and
/// as stored.
#[actix_rt::test]
async fn one_turn_at_a_time_queue_in_order_and_seq_without_gaps() {
    let fx = RuntimeFixture::start();
    let sid = fx.session().await;
    let sink = fx.watch(&sid);
    assert_eq!(
        fx.send(&sid, "/stream 200\n/sleep 50\nfirst", false).await,
        SendOutcome::Started {
            turn_id: "turn_1".into()
        }
    );
    let busy = fx
        .runtime
        .send(&fx.who, &sid, "now".into(), None, false)
        .await;
    assert!(
        matches!(busy, Err(RuntimeError::RunInProgress(_))),
        "{busy:?}"
    );
    assert_eq!(
        fx.send(&sid, "queued one", true).await,
        SendOutcome::Queued { position: 1 }
    );
    assert_eq!(
        fx.send(&sid, "/stream 50\nqueued two", true).await,
        SendOutcome::Queued { position: 2 }
    );
    let frames = turns_done(&sink, &sid, 3).await;
    let events: Vec<Value> = frames
        .iter()
        .filter(|f| f["sessionId"] == sid.as_str() && f.get("seq").is_some())
        .cloned()
        .collect();
    let live = seqs(&frames, &sid);
    assert_eq!(live, (1..=live.len() as u64).collect::<Vec<_>>());
    assert_eq!(events, fx.history(&sid).await, "live and stored differ");
    // Turns never overlap, and the queue ran in order.
    let expected: Vec<(String, String)> = ["turn_1", "turn_2", "turn_3"]
        .iter()
        .flat_map(|t| {
            [
                (t.to_string(), "turn_started".to_string()),
                (t.to_string(), "turn_completed".to_string()),
            ]
        })
        .collect();
    assert_eq!(turn_kinds(&events), expected);
    let users: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "user_message")
        .map(|e| &e["text"])
        .collect();
    assert_eq!(
        users,
        vec![
            &json!("/stream 200\n/sleep 50\nfirst"),
            &json!("queued one"),
            &json!("/stream 50\nqueued two")
        ]
    );
    let statuses: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "turn_completed")
        .map(|e| &e["status"])
        .collect();
    assert!(statuses.iter().all(|s| **s == "completed"), "{statuses:?}");
    let info = fx
        .runtime
        .sessions()
        .session(&fx.who, &sid)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(info.turn_count, 3);
    assert_eq!(info.last_seq, live.len() as u64);
}

/// `/stream N` hands its deltas to the session a pacing window at a time: every delta
/// arrives once and in order (N not a multiple of the window, so the last window is
/// short), the final message is their concatenation, and what is stored is what was
/// delivered.
#[actix_rt::test]
async fn a_stream_in_windows_keeps_every_delta_in_order() {
    let fx = RuntimeFixture::start();
    let sid = fx.session().await;
    let sink = fx.watch(&sid);
    fx.send(&sid, "/stream 70", false).await;
    let frames = turns_done(&sink, &sid, 1).await;
    let events: Vec<Value> = frames
        .iter()
        .filter(|f| f["sessionId"] == sid.as_str() && f.get("seq").is_some())
        .cloned()
        .collect();
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "text_delta")
        .map(|e| e["text"].as_str().expect("delta text"))
        .collect();
    let expected: Vec<String> = (0..70).map(|i| format!("chunk {i} ")).collect();
    assert_eq!(deltas, expected);
    let message: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "assistant_message")
        .map(|e| &e["text"])
        .collect();
    assert_eq!(message, vec![&json!(expected.concat())]);
    let live = seqs(&frames, &sid);
    assert_eq!(live, (1..=live.len() as u64).collect::<Vec<_>>());
    assert_eq!(events, fx.history(&sid).await, "live and stored differ");
}

/// An interrupt the agent never confirms is closed by the session after its grace
/// period; what the agent says later for that turn is dropped, and a queued message
/// then runs.
#[actix_rt::test]
async fn an_unconfirmed_interrupt_is_closed_by_the_session() {
    let fx = RuntimeFixture::start();
    let sid = fx.session().await;
    let sink = fx.watch(&sid);
    fx.send(&sid, "running\n/stubborn 60000\nlate", false).await;
    fx.send(&sid, "after", true).await;
    // Interrupt only once the script is inside its stubborn step (an earlier interrupt
    // is confirmed by the agent at once).
    crate::testkit::wait_for("the stubborn step", || async {
        let (frames, _) = sink
            .send(crate::testkit::Recorded)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        frames
            .iter()
            .any(|f| f["kind"] == "assistant_message" && f["text"] == "running")
            .then_some(())
    })
    .await;
    fx.runtime
        .sessions()
        .abort(&fx.who, &sid)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let frames = turns_done(&sink, &sid, 2).await;
    let ends: Vec<&Value> = frames
        .iter()
        .filter(|f| f["kind"] == "turn_completed")
        .collect();
    assert_eq!(ends[0]["turnId"], "turn_1");
    assert_eq!(ends[0]["status"], "interrupted");
    assert_eq!(ends[0]["error"], "the agent did not stop in time");
    assert_eq!(ends[1]["turnId"], "turn_2");
    assert_eq!(ends[1]["status"], "completed");
    let history = fx.history(&sid).await;
    let live = seqs(&history, &sid);
    assert_eq!(live, (1..=live.len() as u64).collect::<Vec<_>>());
    assert!(
        !history.iter().any(|e| e["text"] == "late"),
        "the stubborn turn's later output was kept"
    );
    // Interrupting an idle session is refused.
    let idle = fx.runtime.sessions().abort(&fx.who, &sid).await;
    assert!(
        matches!(idle, Err(RuntimeError::NoActiveRun(_))),
        "{idle:?}"
    );
}
