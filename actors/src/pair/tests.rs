//! The pair actor through the runtime, without HTTP: a delegation's outcome reaches
//! the Driver exactly once however its endings race (the Worker finishing, a person
//! interrupting it, the pair being closed).

use std::time::Duration;

use serde_json::{json, Value};
use tandem_protocol::client::{PairCreateParams, WorkerSpec};

use crate::ids::{PairId, SessionId};
use crate::testkit::{wait_for, Recorded, RuntimeFixture};

/// Pushed-back results (internal user messages) in a stored history.
fn pushbacks(history: &[Value]) -> Vec<String> {
    history
        .iter()
        .filter(|e| e["kind"] == "user_message" && e["internal"] == true)
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// Waits until the Driver `d` has at least `n` push-backs, then settles it: a message
/// queued behind anything already delivered runs to its end, so a push-back that was
/// on its way cannot be missed. Returns the push-backs.
async fn settled_pushbacks(fx: &RuntimeFixture, d: &SessionId, n: usize) -> Vec<String> {
    wait_for(&format!("{n} push-backs in {d}"), || async {
        (pushbacks(&fx.history(d).await).len() >= n).then_some(())
    })
    .await;
    wait_for("the pair's token to clear", || async {
        let busy = fx
            .runtime
            .pairs()
            .list(&fx.who)
            .iter()
            .any(|p| p.driver_id == d && p.delegation.is_some());
        (!busy).then_some(())
    })
    .await;
    let sink = fx.watch(d);
    fx.send(d, "(settle)", true).await;
    wait_for("the settle turn to end", || async {
        let (frames, _) = sink.send(Recorded).await.unwrap_or_else(|e| panic!("{e}"));
        let settle = frames
            .iter()
            .find(|f| f["kind"] == "user_message" && f["text"] == "(settle)")?;
        frames
            .iter()
            .any(|f| f["kind"] == "turn_completed" && f["turnId"] == settle["turnId"])
            .then_some(())
    })
    .await;
    pushbacks(&fx.history(d).await)
}

async fn pair(fx: &RuntimeFixture, d: &str) -> (PairId, SessionId) {
    let info = fx
        .runtime
        .create_pair(
            &fx.who,
            PairCreateParams {
                driver_id: d.into(),
                worker: WorkerSpec {
                    vendor: "scripted".into(),
                    model: None,
                    effort: None,
                },
                worker_workspace: None,
                worker_node: None,
                worker_approvals: None,
                worker_name: None,
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (info.pair_id, info.worker_id)
}

async fn delegate(fx: &RuntimeFixture, d: &SessionId, args: Value) -> Value {
    fx.runtime
        .call_tool(&fx.who, d, "send_to_partner", args)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("send_to_partner: {e}"))
}

/// Detached delegations whose Worker finishes just as a person interrupts it and the
/// pair is closed: each is pushed back exactly once.
#[actix_rt::test]
async fn racing_endings_resolve_a_detached_delegation_once() {
    let fx = RuntimeFixture::start();
    let rounds = 16u64;
    for round in 0..rounds {
        let d = fx.session().await;
        let (pair_id, w) = pair(&fx, &d).await;
        let ms = round % 4;
        let out = delegate(
            &fx,
            &d,
            json!({"message": format!("/sleep {ms}\nfinished"), "wait": false}),
        )
        .await;
        assert_eq!(out["status"], "running", "{out}");
        actix_rt::time::sleep(Duration::from_millis(round % 3)).await;
        let (abort, close) = tokio::join!(
            fx.runtime.sessions().abort(&fx.who, &w),
            fx.runtime.pairs().close(&fx.who, &pair_id)
        );
        // Either may find nothing left to stop; neither may fail otherwise.
        if let Err(e) = abort {
            assert!(
                matches!(e, crate::RuntimeError::NoActiveRun(_)),
                "abort: {e}"
            );
        }
        assert!(close.is_ok(), "close: {close:?}");
        let got = settled_pushbacks(&fx, &d, 1).await;
        assert_eq!(got.len(), 1, "round {round}: {got:?}");
    }
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(fx.runtime.metrics().pushbacks.load(Relaxed), rounds);
}

/// A waiting `send_to_partner` racing a person's interrupt: the outcome goes to the
/// waiting call or is pushed back, never both and never neither.
#[actix_rt::test]
async fn a_waiting_delegation_racing_an_interrupt_is_told_once() {
    let fx = RuntimeFixture::start();
    for round in 0..12u64 {
        let d = fx.session().await;
        let (_, w) = pair(&fx, &d).await;
        let ms = round % 4;
        let call = delegate(
            &fx,
            &d,
            json!({"message": format!("/sleep {ms}\nfinished")}),
        );
        let stop = async {
            actix_rt::time::sleep(Duration::from_millis(round % 3)).await;
            fx.runtime.sessions().abort(&fx.who, &w).await
        };
        let (out, _) = tokio::join!(call, stop);
        let status = out["status"].as_str().unwrap().to_string();
        assert!(
            status == "complete" || status == "interrupted",
            "round {round}: {out}"
        );
        let got = settled_pushbacks(&fx, &d, 0).await;
        assert!(
            got.is_empty(),
            "round {round}: told twice: {out} and {got:?}"
        );
    }
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(fx.runtime.metrics().pushbacks.load(Relaxed), 0);
}

/// `pair.close` frees a session that names a pair with no actor (a state only a bug or
/// a crash can leave): the Driver is unpaired, told, and can pair again.
#[actix_rt::test]
async fn closing_a_pair_with_no_actor_frees_its_driver() {
    use tandem_protocol::pair::{PairInfo, PairState};
    use tandem_protocol::Role;
    let fx = RuntimeFixture::start();
    let d = fx.session().await;
    let addr = fx
        .runtime
        .sessions()
        .session_addr(&d)
        .unwrap_or_else(|| panic!("no actor"));
    let stray = PairInfo {
        pair_id: "pair_stray".into(),
        driver_id: d.clone(),
        worker_id: "ses_gone".into(),
        worker_name: "worker".into(),
        created_at: 1,
        delegation: None,
        state: PairState::Creating,
        worker_approvals: Default::default(),
    };
    addr.send(crate::session::JoinPair {
        pair: stray,
        role: Role::Driver,
        pair_node: None,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        fx.runtime
            .sessions()
            .session_info(&d)
            .and_then(|i| i.pair_id),
        Some("pair_stray".into())
    );
    let closed = fx
        .runtime
        .pairs()
        .close(&fx.who, &"pair_stray".into())
        .await;
    assert_eq!(closed.ok(), Some(false));
    assert_eq!(
        fx.runtime
            .sessions()
            .session_info(&d)
            .and_then(|i| i.pair_id),
        None
    );
    // The event is stored (and so readable) once its commit lands.
    wait_for("pair_closed in the Driver's history", || async {
        fx.history(&d)
            .await
            .iter()
            .any(|e| e["kind"] == "pair_closed" && e["pairId"] == "pair_stray")
            .then_some(())
    })
    .await;
    // Nothing names it any more: a second close is refused.
    assert!(fx
        .runtime
        .pairs()
        .close(&fx.who, &"pair_stray".into())
        .await
        .is_err());
    let (pair_id, _) = pair(&fx, &d).await;
    assert!(pair_id.starts_with("pair_"));
}
