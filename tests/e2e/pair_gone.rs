//! Restoring a pair whose other session is gone (its rows deleted while the server was
//! stopped): start-up closes the pair, tells the survivor, and leaves it usable.

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions};

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind).count()
}

#[actix_rt::test]
async fn a_pair_whose_worker_is_gone_is_closed_at_start_and_the_driver_told() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let d = ws.create_session().await;
    let created = ws
        .ok(json!({"type": "pair.create", "driverId": d, "worker": {"vendor": "scripted"}}))
        .await;
    let pair_id = created["pair"]["pairId"].as_str().unwrap().to_string();
    let w = created["pair"]["workerId"].as_str().unwrap().to_string();
    assert!(
        pair_id.starts_with("pair_") && w.starts_with("ses_"),
        "{created}"
    );
    ws.close().await;
    let dir = server.terminate();

    // The Worker's session disappears from the store (as if lost or deleted by hand).
    let db = dir.path().join("data").join("tandem.db");
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    conn.execute("DELETE FROM events WHERE session_id = ?1", [&w])
        .unwrap_or_else(|e| panic!("{e}"));
    let deleted = conn
        .execute("DELETE FROM sessions WHERE id = ?1", [&w])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deleted, 1, "no session row {w}");
    drop(conn);

    let server = Server::start_in(dir, ServerOptions::default());
    // The pair is gone for REST...
    let (_, pairs) = server.get("/api/v1/pairs").await;
    assert_eq!(pairs["pairs"], json!([]), "{pairs}");
    let (status, info) = server.get(&format!("/api/v1/sessions/{d}")).await;
    assert_eq!(status, 200, "{info}");
    assert!(info.get("pairId").is_none(), "{info}");
    assert!(info.get("role").is_none(), "{info}");
    let (status, _) = server.get(&format!("/api/v1/sessions/{w}")).await;
    assert_eq!(status, 404);
    // ...the Driver was told once, with the reason...
    let hist = server.all_events(&d).await;
    let closed: Vec<&Value> = hist.iter().filter(|e| e["kind"] == "pair_closed").collect();
    assert_eq!(closed.len(), 1, "{hist:?}");
    assert_eq!(closed[0]["pairId"], pair_id.as_str());
    assert!(
        hist.iter()
            .any(|e| e["kind"] == "info"
                && e["text"].as_str().is_some_and(|t| t.contains("is gone"))),
        "{hist:?}"
    );
    assert_eq!(count(&hist, "pair_created"), 1, "{hist:?}");

    // ...and for the Driver's tools: it has no partner to read...
    let (_, last) = server.get(&format!("/api/v1/sessions/{d}")).await;
    let mut ws = server.ws().await;
    ws.subscribe(&d, last["lastSeq"].as_u64().unwrap_or(0))
        .await;
    let (out, err) = ws.scripted_tool(&d, "read_partner", json!({})).await;
    assert!(err, "read_partner still sees a partner: {out}");
    assert!(
        out.as_str().is_some_and(|t| t.contains("needs a Worker")),
        "{out}"
    );
    // ...and it is usable: it pairs again and delegates.
    let (out, err) = ws
        .scripted_tool(&d, "send_to_partner", json!({"message": "after restore"}))
        .await;
    assert!(!err, "{out}");
    assert_eq!(out["status"], "complete", "{out}");
    assert_eq!(out["response"], "after restore");
    // Restarting again reports nothing twice.
    drop(ws);
    let dir = server.terminate();
    let server = Server::start_in(dir, ServerOptions::default());
    let hist = server.all_events(&d).await;
    let closed_old = hist
        .iter()
        .filter(|e| e["kind"] == "pair_closed" && e["pairId"] == pair_id.as_str())
        .count();
    assert_eq!(closed_old, 1, "{hist:?}");
}
