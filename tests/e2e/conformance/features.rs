//! Features a turn carries: images in a message, and a Driver delegating to a
//! Worker through tandem's tools.

use serde_json::{json, Value};
use tandem_tests::events::{of_kind, status, texts};
use tandem_tests::images::{base64, GIF, PNG};

use super::conformance;
use super::vendors::acp::{all_text, turn, turn_end};
use super::vendors::{Rig, Vendor};
use super::{assert_not_listed, support, Behaviour, Support};

/// Every `image_url` anywhere in the request bodies (Codex's image inputs).
fn image_urls(bodies: &[String]) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some(url) = map.get("image_url").and_then(Value::as_str) {
                    out.push(url.to_string());
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for body in bodies {
        if let Ok(body) = serde_json::from_str::<Value>(body) {
            walk(&body, &mut out);
        }
    }
    out
}

/// A message's images, inline and uploaded, reach the model as the vendor's image
/// inputs. A vendor that takes none does not list `images` and refuses them with
/// `ATTACHMENT_NOT_SUPPORTED`; files still reach it, as text.
async fn images(v: Vendor) {
    let rig = Rig::start(v, "conf-images");
    let mut ws = rig.server().ws().await;
    let id = rig.session(v, &mut ws, "default").await;
    if let Some(code) = assert_not_listed(&rig, v, Behaviour::Images).await {
        let answer = ws
            .request(json!({"type": "chat.send", "sessionId": id, "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "mimeType": "image/png", "data": base64(PNG)},
            ]}))
            .await;
        assert_eq!(answer["code"], code, "{answer}");
        let (status_code, notes) = rig
            .server()
            .post_bytes(
                "/api/v1/uploads?name=n.txt",
                "text/plain",
                b"noted".to_vec(),
            )
            .await;
        assert_eq!(status_code, 201, "{notes}");
        ws.ok(json!({"type": "chat.send", "sessionId": id, "content": [
            {"type": "text", "text": "read this"},
            {"type": "file", "uploadId": notes["uploadId"]},
        ]}))
        .await;
        let events = turn_end(&mut ws, &id).await;
        assert_eq!(status(&events), "completed", "{events:?}");
        return;
    }
    let caps = rig.capabilities(v).await;
    assert!(caps.iter().any(|c| c == "images"), "{caps:?}");
    let (code, gif) = rig
        .server()
        .post_bytes("/api/v1/uploads?name=g.gif", "image/gif", GIF)
        .await;
    assert_eq!(code, 201, "{gif}");
    ws.ok(json!({"type": "chat.send", "sessionId": id, "content": [
        {"type": "text", "text": v.say("hello from the mock model")},
        {"type": "image", "mimeType": "image/png", "data": base64(PNG)},
        {"type": "image", "uploadId": gif["uploadId"]},
    ]}))
    .await;
    let events = turn_end(&mut ws, &id).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let bodies = rig.bodies();
    match v {
        Vendor::Scripted => {
            let said = texts(&events, "assistant_message");
            assert!(
                said.iter()
                    .any(|t| t.contains(&format!("(image/png, {} bytes)", PNG.len()))),
                "{said:?}"
            );
            assert!(
                said.iter().any(|t| t.contains(&format!(
                    "received image {} (image/gif, {} bytes)",
                    gif["uploadId"].as_str().unwrap(),
                    GIF.len()
                ))),
                "{said:?}"
            );
        }
        Vendor::Codex => {
            let urls = image_urls(&bodies);
            assert!(
                urls.contains(&format!("data:image/png;base64,{}", base64(PNG))),
                "the PNG's bytes reached the model: {urls:?}"
            );
            // Codex re-encodes a GIF as PNG: the 1×1 GIF arrives as a 1×1 PNG.
            let one_by_one = urls.iter().any(|u| {
                u.strip_prefix("data:image/png;base64,")
                    .and_then(|b| {
                        use base64::Engine as _;
                        base64::engine::general_purpose::STANDARD.decode(b).ok()
                    })
                    .is_some_and(|png| png.len() > 24 && png[16..24] == [0, 0, 0, 1, 0, 0, 0, 1])
            });
            assert!(one_by_one, "the uploaded GIF reached the model: {urls:?}");
        }
        Vendor::Claude => {
            // The user messages' `image` blocks, by media type and bytes.
            let sources: Vec<(String, String)> = bodies
                .iter()
                .filter_map(|b| serde_json::from_str::<Value>(b).ok())
                .flat_map(|b| b["messages"].as_array().cloned().unwrap_or_default())
                .filter(|m| m["role"] == "user")
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .filter(|b| b["type"] == "image")
                .map(|b| {
                    (
                        b["source"]["media_type"].as_str().unwrap_or("").to_string(),
                        b["source"]["data"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect();
            assert!(
                sources.contains(&("image/png".into(), base64(PNG))),
                "{sources:?}"
            );
            assert!(
                sources.contains(&("image/gif".into(), base64(GIF))),
                "{sources:?}"
            );
        }
        _ => assert!(
            bodies.iter().any(|b| b.contains(&base64(PNG))),
            "the image's bytes reached the model"
        ),
    }
}
conformance!(images: scripted, codex, claude, codex_acp, claude_acp, fake_acp);

/// The agent calls `send_to_partner`: a scripted Worker is created and answers, the
/// result comes back to the Driver's model, and the session is a Driver. An agent
/// that cannot call tandem's tools does not list `tools` and says why in `/vendors`.
async fn driver_delegates_through_the_tools(v: Vendor) {
    let rig = Rig::start(v, "conf-driver");
    if let Support::Lacks { .. } = support(Behaviour::DriverDelegatesThroughTheTools, v) {
        assert_not_listed(&rig, v, Behaviour::DriverDelegatesThroughTheTools).await;
        let entry = rig.vendor_entry(v).await;
        assert!(
            entry["notes"][0]
                .as_str()
                .is_some_and(|n| n.contains("cannot call tandem's agent tools")),
            "an agent without HTTP MCP says so: {entry}"
        );
        return;
    }
    let mut ws = rig.server().ws().await;
    // Tandem's own tools are not asked about in bypass mode.
    let id = rig.session(v, &mut ws, "bypassPermissions").await;
    let call =
        json!({"message": "from the scripted worker", "workerVendor": "scripted", "wait": true});
    let events = turn(&mut ws, &id, &v.send_to_partner(&call)).await;
    assert_eq!(status(&events), "completed", "{events:?}");
    let results = of_kind(&events, "tool_result");
    let result = results
        .iter()
        .find(|r| r["output"].to_string().contains("from the scripted worker"))
        .unwrap_or_else(|| panic!("no result of the Worker in {events:?}"));
    assert_eq!(result["isError"], false, "{result}");
    let tool = of_kind(&events, "tool_call")[0];
    match v {
        Vendor::Codex | Vendor::Claude => {
            assert_eq!(tool["name"], "mcp__tandem__send_to_partner", "{tool}")
        }
        Vendor::Scripted => assert_eq!(tool["name"], "send_to_partner", "{tool}"),
        _ => {}
    }
    if matches!(v, Vendor::Codex | Vendor::Claude | Vendor::Scripted) {
        assert_eq!(
            tool["input"]["message"], "from the scripted worker",
            "{tool}"
        );
    }
    if matches!(v, Vendor::Codex | Vendor::Claude | Vendor::Scripted) {
        // The output, as an object or as its JSON text.
        let output = match &result["output"] {
            Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
            other => other.clone(),
        };
        assert_eq!(output["status"], "complete", "{result}");
        assert_eq!(output["response"], "from the scripted worker", "{result}");
        assert_eq!(output["workerCreated"], true, "{result}");
        let worker = output["partnerId"].as_str().unwrap().to_string();
        let worker_info = rig.info(&worker).await;
        assert_eq!(worker_info["vendor"], "scripted", "{worker_info}");
        assert_eq!(worker_info["role"], "worker", "{worker_info}");
        let worker_events = rig.server().all_events(&worker).await;
        assert_eq!(
            texts(&worker_events, "assistant_message"),
            ["from the scripted worker"]
        );
    }
    if v.has_model() {
        assert!(
            all_text(&events).contains("from the scripted worker"),
            "the Driver's model saw the Worker's answer: {events:?}"
        );
    }
    let info = rig.info(&id).await;
    assert_eq!(info["role"], "driver", "{info}");
    assert!(info["pairId"].is_string(), "{info}");
    if v == Vendor::Claude {
        // Now a Driver, the session's next turn runs with the Driver's instruction;
        // the turn that made it one ran without.
        let system = |body: &str| {
            let body: Value = serde_json::from_str(body).unwrap();
            body["system"].to_string()
        };
        let before = rig.bodies();
        assert!(
            before
                .iter()
                .all(|b| !system(b).contains("You direct a Worker")),
            "{before:?}"
        );
        let events = turn(&mut ws, &id, "say next").await;
        assert_eq!(status(&events), "completed", "{events:?}");
        assert!(system(&rig.request_with("say next")).contains("You direct a Worker"));
    }
}
conformance!(
    driver_delegates_through_the_tools: scripted,
    codex,
    claude,
    codex_acp,
    claude_acp,
    fake_acp
);
