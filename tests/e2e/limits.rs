//! What one user or one socket may ask of the server: paged session lists, a cap on
//! sessions per user, connections per user, and messages per second per socket.

use std::collections::HashSet;

use serde_json::{json, Value};
use tandem_tests::{Server, ServerOptions, WsClient};

fn ids(list: &Value) -> Vec<String> {
    list["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap()
}

#[actix_rt::test]
async fn session_lists_are_paged_over_rest_and_websocket() {
    let server = Server::start();
    let mut ws = server.ws().await;
    let mut made = HashSet::new();
    for _ in 0..25 {
        made.insert(ws.create_session().await);
    }
    // REST: pages of 10 cover every session once, most recently active first.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/sessions?limit=10&cursor={c}"),
            None => "/api/v1/sessions?limit=10".into(),
        };
        let (status, page) = server.get(&path).await;
        assert_eq!(status, 200, "{page}");
        pages += 1;
        let page_ids = ids(&page);
        assert!(page_ids.len() <= 10);
        seen.extend(page_ids);
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 25);
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), made);
    // The default page is 100; the whole list fits.
    let (_, all) = server.get("/api/v1/sessions").await;
    assert_eq!(ids(&all), seen);
    assert!(all.get("nextCursor").is_none());
    // Bad paging is a 400 with a JSON body.
    for bad in ["limit=0", "limit=1001", "cursor=garbage", "limit=x"] {
        let (status, body) = server.get(&format!("/api/v1/sessions?{bad}")).await;
        assert_eq!(status, 400, "{bad}");
        assert_eq!(body["error"]["code"], "INVALID_ARGUMENT", "{bad}");
    }
    // WebSocket: the watch snapshot is a page too, and sessions.list walks on.
    let mut watcher = server.ws().await;
    let first = watcher
        .ok(json!({"type": "sessions.watch", "limit": 20}))
        .await;
    let mut walked = ids(&first);
    assert_eq!(walked.len(), 20);
    let next = first["nextCursor"].as_str().unwrap().to_string();
    let second = watcher
        .ok(json!({"type": "sessions.list", "limit": 20, "cursor": next}))
        .await;
    walked.extend(ids(&second));
    assert!(second.get("nextCursor").is_none(), "{second}");
    assert_eq!(walked, seen);
    let bad = watcher
        .request(json!({"type": "sessions.list", "limit": 0}))
        .await;
    assert_eq!(bad["code"], "INVALID_ARGUMENT");
    // The watch is live after its first page.
    let sid = ws.create_session().await;
    let up = watcher
        .recv_until(|v| v["kind"] == "session_upserted" && v["session"]["id"] == sid.as_str())
        .await;
    assert!(!up.is_empty());
}

#[actix_rt::test]
async fn a_users_sessions_are_capped() {
    let server = Server::start_with(ServerOptions {
        args: vec!["--max-sessions-per-user".into(), "3".into()],
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    for _ in 0..3 {
        ws.create_session().await;
    }
    let refused = ws
        .request(json!({"type": "session.create", "title": "one too many"}))
        .await;
    assert_eq!(refused["code"], "LIMIT_EXCEEDED", "{refused}");
    assert!(refused["error"]
        .as_str()
        .is_some_and(|e| e.contains("--max-sessions-per-user")));
    let (status, body) = server.post("/api/v1/sessions", &json!({})).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "LIMIT_EXCEEDED");
    let (_, list) = server.get("/api/v1/sessions").await;
    assert_eq!(ids(&list).len(), 3);
    // Archiving one frees a slot.
    let victim = ids(&list)[0].clone();
    let client = awc::Client::default();
    let resp = client
        .delete(format!("{}/api/v1/sessions/{victim}", server.base))
        .send()
        .await;
    assert_eq!(resp.map(|r| r.status().as_u16()).unwrap_or(0), 200);
    ws.create_session().await;
}

#[actix_rt::test]
async fn connections_per_user_are_limited() {
    let server = Server::start_with(ServerOptions {
        token_auth: true,
        args: vec!["--max-connections-per-user".into(), "2".into()],
    });
    let a = server.ws().await;
    let mut b = server.ws().await;
    assert!(WsClient::try_connect(&server.ws_url()).await.is_err());
    // The refusal comes before the upgrade, so a plain GET shows its JSON body.
    let (status, body) = server.get("/ws").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "LIMIT_EXCEEDED");
    // Another user is not affected.
    let bob = server.add_user("bob");
    let mut bobs = bob.ws().await;
    assert_eq!(bobs.request(json!({"type": "ping"})).await["pong"], true);
    // Closing one frees a slot (the server notices the close shortly after).
    assert_eq!(b.request(json!({"type": "ping"})).await["pong"], true);
    a.close().await;
    let mut again = None;
    for _ in 0..100 {
        if let Ok(c) = WsClient::try_connect(&server.ws_url()).await {
            again = Some(c);
            break;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let Some(mut again) = again else {
        panic!("slot was not given back");
    };
    assert_eq!(again.request(json!({"type": "ping"})).await["pong"], true);
}

#[actix_rt::test]
async fn messages_per_second_are_limited_per_socket() {
    let server = Server::start_with(ServerOptions {
        args: vec!["--ws-messages-per-sec".into(), "5".into()],
        ..ServerOptions::default()
    });
    let mut ws = server.ws().await;
    // 40 pings sent at once: at most 5 per second are answered with a pong.
    for i in 0..40 {
        ws.send(&json!({"type": "ping", "requestId": format!("p{i}")}))
            .await;
    }
    let mut pongs = 0;
    let mut limited = 0;
    for _ in 0..40 {
        let v = ws.recv().await;
        if v["kind"] == "reply" {
            pongs += 1;
        } else {
            assert_eq!(v["code"], "RATE_LIMITED", "{v}");
            assert!(v["requestId"].as_str().is_some_and(|r| r.starts_with('p')));
            limited += 1;
        }
    }
    assert!(limited > 0, "nothing was rate limited ({pongs} pongs)");
    assert_eq!(pongs + limited, 40);
    // Limits are per socket: another one is answered at once.
    let mut other = server.ws().await;
    assert_eq!(other.request(json!({"type": "ping"})).await["pong"], true);
}
