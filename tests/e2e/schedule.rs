//! Scheduled messages.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use tandem_tests::{Server, ServerOptions};

/// Epoch milliseconds as RFC 3339 UTC (what `tandem acp` writes, the same function).
pub(crate) fn rfc3339(ms: u64) -> String {
    tandem_http::acp_agent::mapping::iso8601(ms)
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[actix_rt::test]
async fn a_due_message_interrupts_the_running_turn_and_runs_next() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "/hold never").await;
    let reply = ws
        .ok(json!({"type": "session.schedule", "sessionId": sid, "content": "wake up", "at": rfc3339(now_ms() + 300)}))
        .await;
    assert_eq!(reply["status"], "pending");
    let schedule_id = reply["scheduleId"].as_str().unwrap().to_string();
    let first = ws.events_until_turn_end(&sid).await;
    assert_eq!(
        first.last().map(|e| e["status"].clone()),
        Some(json!("interrupted"))
    );
    assert!(first.iter().any(
        |e| e["kind"] == "info" && e["text"].as_str().is_some_and(|t| t.contains(&schedule_id))
    ));
    let second = ws.events_until_turn_end(&sid).await;
    assert_eq!(second[1]["text"], "wake up");
    assert_eq!(
        second.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
    let (_, list) = server
        .get(&format!("/api/v1/sessions/{sid}/schedules"))
        .await;
    assert_eq!(list["schedules"][0]["status"], "sent");
}

#[actix_rt::test]
async fn past_times_fire_at_once_and_pending_ones_can_be_cancelled() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    ws.ok(json!({"type": "session.schedule", "sessionId": sid, "content": "from the past", "at": "2000-01-01T00:00:00Z"}))
        .await;
    let turn = ws.events_until_turn_end(&sid).await;
    assert!(turn
        .iter()
        .any(|e| e["kind"] == "user_message" && e["text"] == "from the past"));
    let pending = ws
        .ok(json!({"type": "session.schedule", "sessionId": sid, "content": "never", "at": rfc3339(now_ms() + 600)}))
        .await;
    let id = pending["scheduleId"].clone();
    let cancelled = ws
        .ok(json!({"type": "session.schedule-cancel", "sessionId": sid, "scheduleId": id}))
        .await;
    assert_eq!(cancelled["status"], "cancelled");
    let again = ws
        .request(json!({"type": "session.schedule-cancel", "sessionId": sid, "scheduleId": id}))
        .await;
    assert_eq!(again["code"], "CONFLICT", "{again}");
    // A later message: by the time it runs, the cancelled one's timer has gone off.
    ws.ok(json!({"type": "session.schedule", "sessionId": sid, "content": "marker", "at": rfc3339(now_ms() + 900)}))
        .await;
    ws.recv_until(|e| e["kind"] == "user_message" && e["text"] == "marker")
        .await;
    let turn = ws.events_until_turn_end(&sid).await;
    assert_eq!(
        turn.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["turnCount"], 2, "a cancelled message never runs");
    assert!(
        !server
            .all_events(&sid)
            .await
            .iter()
            .any(|e| e["text"] == "never"),
        "the cancelled message ran"
    );
    for (body, code) in [
        (
            json!({"type": "session.schedule", "sessionId": sid, "content": "x", "at": "next tuesday"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.schedule", "sessionId": sid, "content": "x", "at": rfc3339(now_ms() + 366 * 86_400_000)}),
            "INVALID_ARGUMENT",
        ),
        // Days a month does not have are refused, not rolled over into the next one.
        (
            json!({"type": "session.schedule", "sessionId": sid, "content": "x", "at": "2026-02-31T00:00:00Z"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.schedule", "sessionId": sid, "content": "x", "at": "2027-02-29T12:00:00Z"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.schedule", "sessionId": sid, "content": "x", "at": "2026-11-29T24:00:00Z"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.schedule", "sessionId": sid, "content": " ", "at": "2000-01-01T00:00:00Z"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"type": "session.schedule", "sessionId": "ses_nope", "content": "x", "at": "2000-01-01T00:00:00Z"}),
            "SESSION_NOT_FOUND",
        ),
        (
            json!({"type": "session.schedule", "content": "x", "at": "2000-01-01T00:00:00Z"}),
            "SESSION_ID_REQUIRED",
        ),
    ] {
        let answer = ws.request(body.clone()).await;
        assert_eq!(answer["code"], code, "{body}: {answer}");
    }
}

/// A message scheduled before a crash fires after the restart, exactly once. The test
/// proves it fired in the restarted server (every event of its turn is stamped after
/// the kill), so it cannot pass by the message firing before the kill.
#[actix_rt::test]
async fn a_pending_schedule_survives_a_kill_and_fires_once() {
    let server = Server::start_process(Default::default());
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let at = now_ms() + 1500;
    let reply = ws
        .ok(json!({"type": "session.schedule", "sessionId": sid, "content": "after the crash", "at": rfc3339(at)}))
        .await;
    let schedule_id = reply["scheduleId"].as_str().unwrap().to_string();
    let dir = server.kill();
    let killed_at = now_ms();
    let server = Server::start_process_in(dir, Default::default());
    let mut ws = server.ws().await;
    ws.subscribe(&sid, 0).await;
    let turn = ws.events_until_turn_end(&sid).await;
    assert!(turn
        .iter()
        .any(|e| e["kind"] == "user_message" && e["text"] == "after the crash"));
    assert_eq!(
        turn.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
    let due = turn
        .iter()
        .find(|e| {
            e["kind"] == "info" && e["text"].as_str().is_some_and(|t| t.contains(&schedule_id))
        })
        .unwrap_or_else(|| panic!("no due notice in {turn:?}"));
    let fired = due["seq"].as_u64().unwrap_or(0);
    for e in turn.iter().filter(|e| e["seq"].as_u64() >= Some(fired)) {
        let ts = e["ts"].as_u64().unwrap_or(0);
        assert!(ts >= killed_at, "the message fired before the kill: {e}");
    }

    // Another restart fires nothing more. A message sent afterwards runs alone: a
    // second firing would be due at once and would have run (or interrupted it).
    let dir = server.kill();
    let server = Server::start_in(dir, ServerOptions::default());
    let mut ws = server.ws().await;
    ws.subscribe(&sid, 0).await;
    ws.chat(&sid, "after the second restart").await;
    ws.recv_until(|e| e["kind"] == "user_message" && e["text"] == "after the second restart")
        .await;
    let turn = ws.events_until_turn_end(&sid).await;
    assert_eq!(
        turn.last().map(|e| e["status"].clone()),
        Some(json!("completed"))
    );
    let history = server.all_events(&sid).await;
    let runs = history
        .iter()
        .filter(|e| e["kind"] == "user_message" && e["text"] == "after the crash")
        .count();
    assert_eq!(runs, 1, "the scheduled message ran {runs} times");
    let (_, info) = server.get(&format!("/api/v1/sessions/{sid}")).await;
    assert_eq!(info["turnCount"], 2);
    let (_, list) = server
        .get(&format!("/api/v1/sessions/{sid}/schedules"))
        .await;
    assert_eq!(list["schedules"][0]["status"], "sent");
}

/// The `schedule_occurrence` events of `sid` so far.
async fn occurrences(server: &Server, sid: &str) -> Vec<serde_json::Value> {
    server
        .all_events(sid)
        .await
        .into_iter()
        .filter(|e| e["kind"] == "schedule_occurrence")
        .collect()
}

/// A recurring schedule runs its first occurrence, lists the next ones (a minute
/// apart), stays pending with its count, and is cancelled like any other; one whose
/// occurrence finds a turn running skips it (`skip`) or queues its message behind the
/// turn (`queue`), never interrupting.
#[actix_rt::test]
async fn a_recurring_schedule_runs_lists_what_comes_and_skips_or_queues_while_busy() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    ws.subscribe(&sid, 0).await;
    let start = now_ms() + 1000;
    let (status, created) = server
        .post(
            &format!("/api/v1/sessions/{sid}/schedules"),
            &json!({"content": "tick", "at": rfc3339(start),
                    "rrule": "FREQ=MINUTELY;INTERVAL=1", "timeZone": "Europe/Berlin"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let schedule_id = created["scheduleId"].as_str().unwrap().to_string();
    assert_eq!(created["at"].as_u64(), Some(start));
    let turn = ws.events_until_turn_end(&sid).await;
    assert!(turn
        .iter()
        .any(|e| e["kind"] == "user_message" && e["text"] == "tick"));
    let fired = occurrences(&server, &sid).await;
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["scheduleId"], schedule_id.as_str());
    assert_eq!(fired[0]["number"], 1);
    assert_eq!(fired[0]["outcome"], "sent");
    assert_eq!(fired[0]["at"].as_u64(), Some(start));
    let (_, listed) = server
        .get(&format!("/api/v1/sessions/{sid}/schedules"))
        .await;
    let mine = listed["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scheduleId"] == schedule_id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(mine["status"], "pending", "{mine}");
    assert_eq!(mine["at"].as_u64(), Some(start + 60_000), "{mine}");
    assert_eq!(mine["rrule"]["occurrences"], 1, "{mine}");
    assert_eq!(mine["rrule"]["ifBusy"], "skip", "{mine}");
    let upcoming: Vec<u64> = mine["upcoming"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        upcoming,
        (2..=6).map(|k| start + k * 60_000).collect::<Vec<_>>()
    );
    let (status, _) = server
        .delete(&format!("/api/v1/sessions/{sid}/schedules/{schedule_id}"))
        .await;
    assert_eq!(status, 200);

    // While a turn runs: `skip` does nothing, `queue` waits behind it.
    ws.chat(&sid, "/hold recurring-busy").await;
    let soon = rfc3339(now_ms() + 500);
    for (content, if_busy) in [("skipped tick", "skip"), ("queued tick", "queue")] {
        ws.ok(
            json!({"type": "session.schedule", "sessionId": sid, "content": content,
                     "at": soon, "rrule": "FREQ=HOURLY", "ifBusy": if_busy}),
        )
        .await;
    }
    let outcomes = tandem_tests::eventually("both occurrences", async || {
        let all = occurrences(&server, &sid).await;
        (all.len() == 3).then_some(all)
    })
    .await;
    let mut said: Vec<&str> = outcomes[1..]
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    said.sort_unstable();
    assert_eq!(said, ["queued", "skipped"]);
    server.release("recurring-busy").await;
    let held = ws.events_until_turn_end(&sid).await;
    assert_eq!(held.last().unwrap()["status"], "completed", "{held:?}");
    let queued = ws.events_until_turn_end(&sid).await;
    assert!(queued
        .iter()
        .any(|e| e["kind"] == "user_message" && e["text"] == "queued tick"));
    let history = server.all_events(&sid).await;
    assert!(!history
        .iter()
        .any(|e| e["kind"] == "user_message" && e["text"] == "skipped tick"));
}

/// Occurrences missed while the server was down run once when it starts, not one per
/// missed occurrence, and the next one is in the future.
#[actix_rt::test]
async fn missed_occurrences_run_once_at_start() {
    let server = Server::start_process(Default::default());
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    // Every second would be every minute's worth of burst if missed ones all ran.
    let start = now_ms() + 500;
    ws.ok(
        json!({"type": "session.schedule", "sessionId": sid, "content": "tock",
                 "at": rfc3339(start), "rrule": "FREQ=MINUTELY"}),
    )
    .await;
    let dir = server.kill();
    let killed_at = now_ms();
    // Down across the first occurrence.
    tandem_tests::eventually("the first occurrence to pass", async || {
        (now_ms() > start + 200).then_some(())
    })
    .await;
    let server = Server::start_in(dir, ServerOptions::default());
    let fired = tandem_tests::eventually("the missed occurrence", async || {
        let all = occurrences(&server, &sid).await;
        (!all.is_empty()).then_some(all)
    })
    .await;
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["at"].as_u64(), Some(start));
    // It ran in the restarted server, not before the kill.
    assert!(fired[0]["ts"].as_u64().unwrap() >= killed_at, "{fired:?}");
    let (_, listed) = server
        .get(&format!("/api/v1/sessions/{sid}/schedules"))
        .await;
    let next = listed["schedules"][0]["at"].as_u64().unwrap();
    assert!(next > now_ms(), "{listed}");
    assert_eq!(next, start + 60_000);
}

/// A rule outside the subset, an unknown time zone and a rule with no occurrence are
/// refused with what is wrong, and nothing is scheduled.
#[actix_rt::test]
async fn rules_outside_the_subset_are_refused() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let sid = ws.create_session().await;
    let at = rfc3339(now_ms() + 60_000);
    for (rule, zone, says) in [
        ("FREQ=YEARLY", "UTC", "YEARLY"),
        ("FREQ=DAILY;BYSETPOS=1", "UTC", "BYSETPOS"),
        ("FREQ=DAILY", "Mars/Olympus", "time zone"),
        ("FREQ=DAILY;UNTIL=19990101T000000Z", "UTC", "no occurrence"),
    ] {
        let (status, body) = server
            .post(
                &format!("/api/v1/sessions/{sid}/schedules"),
                &json!({"content": "x", "at": at, "rrule": rule, "timeZone": zone}),
            )
            .await;
        assert_eq!(status, 422, "{rule}: {body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(says),
            "{rule}: {body}"
        );
    }
    let (_, listed) = server
        .get(&format!("/api/v1/sessions/{sid}/schedules"))
        .await;
    assert_eq!(listed["schedules"], json!([]));
}
