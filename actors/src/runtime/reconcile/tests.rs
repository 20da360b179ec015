//! The start-up decisions, one half-done state at a time.

use serde_json::json;
use tandem_protocol::pair::{PairState, ProposalStatus, WorkerChoice};
use tandem_protocol::Role;

use super::{plan, ProposalFix, Unpair, CLOSED, NO_PAIR, PARTNER_GONE, ROLLED_BACK};
use crate::record::{DelegationRecord, Membership, PairRecord, ProposalRecord, SessionRecord};

fn session(id: &str) -> SessionRecord {
    match serde_json::from_value(json!({
        "id": id, "title": id, "vendor": "scripted", "model": "", "effort": "",
        "permissionMode": "default", "status": "idle", "turnCount": 0, "createdAt": 1,
        "lastActivity": 1, "ownerId": "admin", "visibility": "private", "cwd": "/"
    })) {
        Ok(record) => record,
        Err(e) => panic!("record: {e}"),
    }
}

fn member(id: &str, pair: &str, role: Role) -> SessionRecord {
    SessionRecord {
        pair: Some(Membership {
            pair_id: pair.into(),
            role,
            pair_node: None,
            driver_id: None,
            worker_id: None,
            worker_name: None,
        }),
        ..session(id)
    }
}

/// Stored records keep membership as the top-level `pairId` and `role` fields, as
/// before they became one `Option`: both present is a membership, both absent none.
#[test]
fn membership_is_stored_as_pair_id_and_role() {
    let paired = member("s", "pair_1", Role::Worker);
    let stored = serde_json::to_value(&paired).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored["pairId"], "pair_1");
    assert_eq!(stored["role"], "worker");
    let back: SessionRecord = serde_json::from_value(stored).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.pair, paired.pair);
    let alone = serde_json::to_value(session("t")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        alone.get("pairId").is_none() && alone.get("role").is_none(),
        "{alone}"
    );
    assert_eq!(session("t").pair, None);
}

fn pair(id: &str, state: PairState) -> PairRecord {
    PairRecord {
        pair_id: id.into(),
        driver_id: "d".into(),
        worker_id: "w".into(),
        created_at: 1,
        delegation: None,
        worker_node: None,
        state,
        worker_approvals: Default::default(),
        worker_name: "worker".into(),
    }
}

fn delegation(proposal: Option<&str>) -> DelegationRecord {
    DelegationRecord {
        delegation_id: "dlg_1".into(),
        message: "task".into(),
        started_at: 1,
        detached: true,
        proposal_id: proposal.map(String::from),
    }
}

fn proposal(status: ProposalStatus) -> ProposalRecord {
    ProposalRecord {
        proposal_id: "prop_1".into(),
        summary: "s".into(),
        plan: "p".into(),
        message: "the task".into(),
        recommended: WorkerChoice {
            vendor: "scripted".into(),
            model: String::new(),
            effort: String::new(),
        },
        status,
        auto_approved: false,
    }
}

fn unpair(session: &str, reason: &str) -> Unpair {
    Unpair {
        session_id: session.into(),
        pair_id: "p".into(),
        reason: reason.into(),
    }
}

#[test]
fn an_active_pair_with_both_members_just_starts() {
    let (d, w) = (
        member("d", "p", Role::Driver),
        member("w", "p", Role::Worker),
    );
    let out = plan(&[pair("p", PairState::Active)], &[&d, &w]);
    assert_eq!(out.start, vec![pair("p", PairState::Active)]);
    assert!(out.activated.is_empty() && out.removed.is_empty() && out.unpair.is_empty());
}

/// A pair whose Worker is on another node starts with its Driver alone (the Worker
/// is that node's), delegation and all; and that node leaves its Worker's
/// membership alone, as the pair runs elsewhere.
#[test]
fn a_pair_with_a_worker_on_another_node_starts_on_the_drivers_node() {
    let d = member("d", "p", Role::Driver);
    let remote = PairRecord {
        worker_node: Some("b".into()),
        delegation: Some(delegation(None)),
        ..pair("p", PairState::Active)
    };
    let out = plan(std::slice::from_ref(&remote), &[&d]);
    assert_eq!(out.start, vec![remote]);
    assert!(out.removed.is_empty() && out.unpair.is_empty() && out.cut_off.is_empty());

    let mut w = member("w", "p", Role::Worker);
    if let Some(m) = w.pair.as_mut() {
        m.pair_node = Some("a".into());
    }
    let out = plan(&[], &[&w]);
    assert!(out.unpair.is_empty(), "{:?}", out.unpair);
    // Without the pair's node it is a stray membership, as before.
    let out = plan(&[], &[&member("w", "p", Role::Worker)]);
    assert_eq!(out.unpair, vec![unpair("w", NO_PAIR)]);
}

/// A Driver with two Workers (two pairs) starts both; a second Worker membership
/// naming a pair that is gone is cleared alone, and the Driver keeps the other.
#[test]
fn a_driver_with_two_workers_starts_both_pairs() {
    let membership = |pair: &str, worker: &str| Membership {
        pair_id: pair.into(),
        role: Role::Driver,
        pair_node: None,
        driver_id: Some("d".into()),
        worker_id: Some(worker.into()),
        worker_name: Some(worker.into()),
    };
    let mut d = member("d", "p", Role::Driver);
    d.more_workers = vec![membership("q", "w2"), membership("gone", "w3")];
    let (w, w2) = (
        member("w", "p", Role::Worker),
        member("w2", "q", Role::Worker),
    );
    let q = PairRecord {
        worker_id: "w2".into(),
        ..pair("q", PairState::Active)
    };
    let out = plan(&[pair("p", PairState::Active), q.clone()], &[&d, &w, &w2]);
    assert_eq!(out.start, vec![pair("p", PairState::Active), q.clone()]);
    assert_eq!(
        out.unpair,
        vec![Unpair {
            session_id: "d".into(),
            pair_id: "gone".into(),
            reason: NO_PAIR.into(),
        }]
    );
    // A Worker that is also a Driver's (a corrupt store) starts in neither of two
    // pairs naming it as Worker after the first.
    let twice = PairRecord {
        pair_id: "r".into(),
        ..q.clone()
    };
    let mut w2_twice = member("w2", "q", Role::Worker);
    w2_twice.more_workers = vec![Membership {
        role: Role::Worker,
        ..membership("r", "w2")
    }];
    let out = plan(&[q, twice], &[&d, &w2_twice]);
    assert_eq!(out.start.len(), 1, "{:?}", out.start);
}

/// A Driver's memberships: the first in `pair` (stored as before), the others in
/// `moreWorkers`; leaving the first makes the next one first.
#[test]
fn a_drivers_further_workers_are_stored_beside_its_first() {
    let mut d = session("d");
    for pair in ["p", "q", "r"] {
        d.join(Membership {
            pair_id: pair.into(),
            role: Role::Driver,
            pair_node: None,
            driver_id: Some("d".into()),
            worker_id: Some(format!("w_{pair}").into()),
            worker_name: Some(pair.into()),
        });
    }
    let stored = serde_json::to_value(&d).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored["pairId"], "p");
    assert_eq!(stored["moreWorkers"][1]["pairId"], "r");
    let back: SessionRecord = serde_json::from_value(stored).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, d);
    let info = d.to_info(0, &[]);
    let names: Vec<&str> = info
        .workers
        .iter()
        .map(|w| w.worker_name.as_str())
        .collect();
    assert_eq!(names, ["p", "q", "r"]);
    assert!(d.leave(&"p".into()));
    assert_eq!(d.pair.as_ref().map(|m| m.pair_id.as_str()), Some("q"));
    assert!(d.leave(&"r".into()) && !d.leave(&"r".into()));
    assert!(d.in_pair(&"q".into(), Some(Role::Driver)) && d.more_workers.is_empty());
    assert!(d.leave(&"q".into()));
    assert_eq!(d.memberships().count(), 0);
}

#[test]
fn a_creating_pair_with_both_members_rolls_forward() {
    let (d, w) = (
        member("d", "p", Role::Driver),
        member("w", "p", Role::Worker),
    );
    let out = plan(&[pair("p", PairState::Creating)], &[&d, &w]);
    assert_eq!(out.start, vec![pair("p", PairState::Active)]);
    assert_eq!(out.activated, vec!["p".to_string()]);
    assert!(out.removed.is_empty() && out.unpair.is_empty());
}

#[test]
fn a_creating_pair_cut_before_the_driver_joined_is_removed_silently() {
    let d = session("d");
    let out = plan(&[pair("p", PairState::Creating)], &[&d]);
    assert!(out.start.is_empty());
    assert_eq!(out.removed, vec!["p".to_string()]);
    assert!(out.unpair.is_empty(), "nobody joined, nobody to tell");
}

#[test]
fn a_creating_pair_cut_after_the_driver_joined_rolls_back_and_tells_it() {
    let d = member("d", "p", Role::Driver);
    let out = plan(&[pair("p", PairState::Creating)], &[&d]);
    assert!(out.start.is_empty());
    assert_eq!(out.removed, vec!["p".to_string()]);
    assert_eq!(out.unpair, vec![unpair("d", ROLLED_BACK)]);
    // The Worker was created but had not joined yet: it stays, unpaired.
    let w = session("w");
    let out = plan(&[pair("p", PairState::Creating)], &[&d, &w]);
    assert_eq!(out.unpair, vec![unpair("d", ROLLED_BACK)]);
}

#[test]
fn an_active_pair_whose_worker_is_gone_is_closed_telling_the_driver_once() {
    let d = member("d", "p", Role::Driver);
    let mut p = pair("p", PairState::Active);
    p.delegation = Some(delegation(None));
    let out = plan(std::slice::from_ref(&p), &[&d]);
    assert!(out.start.is_empty());
    assert_eq!(out.removed, vec!["p".to_string()]);
    assert_eq!(out.unpair, vec![unpair("d", PARTNER_GONE)]);
    assert_eq!(out.cut_off, vec![(p, delegation(None))]);
}

#[test]
fn an_active_pair_whose_driver_is_archived_frees_the_worker() {
    let mut d = member("d", "p", Role::Driver);
    d.archived_at = Some(5);
    let w = member("w", "p", Role::Worker);
    let mut p = pair("p", PairState::Active);
    p.delegation = Some(delegation(None));
    let out = plan(&[p], &[&d, &w]);
    assert_eq!(out.unpair, vec![unpair("w", PARTNER_GONE)]);
    assert!(out.cut_off.is_empty(), "no Driver to tell");
}

#[test]
fn a_closed_pair_finishes_closing() {
    let (d, w) = (
        member("d", "p", Role::Driver),
        member("w", "p", Role::Worker),
    );
    let out = plan(&[pair("p", PairState::Closed)], &[&d, &w]);
    assert!(out.start.is_empty());
    assert_eq!(out.removed, vec!["p".to_string()]);
    assert_eq!(out.unpair, vec![unpair("d", CLOSED), unpair("w", CLOSED)]);
}

#[test]
fn a_membership_naming_no_pair_is_cleared() {
    let d = member("d", "p", Role::Driver);
    let out = plan(&[], &[&d]);
    assert_eq!(out.unpair, vec![unpair("d", NO_PAIR)]);
    // A session naming a running pair it is not part of is cleared too.
    let (d, w, x) = (
        member("d", "p", Role::Driver),
        member("w", "p", Role::Worker),
        member("x", "p", Role::Worker),
    );
    let out = plan(&[pair("p", PairState::Active)], &[&d, &w, &x]);
    assert_eq!(out.start.len(), 1);
    assert_eq!(out.unpair, vec![unpair("x", NO_PAIR)]);
}

#[test]
fn a_starting_proposal_without_a_pair_fails() {
    let mut d = session("d");
    d.proposal = Some(proposal(ProposalStatus::Starting));
    let out = plan(&[], &[&d]);
    assert!(matches!(
        &out.proposals[..],
        [ProposalFix::Fail { driver_id, proposal_id, .. }] if driver_id == "d" && proposal_id == "prop_1"
    ));
    // A pending or finished proposal is left alone.
    for status in [
        ProposalStatus::Pending,
        ProposalStatus::Completed,
        ProposalStatus::Declined,
    ] {
        d.proposal = Some(proposal(status));
        assert!(plan(&[], &[&d]).proposals.is_empty());
    }
}

#[test]
fn a_starting_proposal_whose_pair_exists_is_delegated() {
    let mut d = member("d", "p", Role::Driver);
    let w = member("w", "p", Role::Worker);
    for status in [ProposalStatus::Starting, ProposalStatus::Running] {
        d.proposal = Some(proposal(status));
        let out = plan(&[pair("p", PairState::Creating)], &[&d, &w]);
        assert_eq!(
            out.proposals,
            vec![ProposalFix::Delegate {
                driver_id: "d".into(),
                proposal_id: "prop_1".into(),
                pair_id: "p".into(),
                message: "the task".into(),
            }]
        );
    }
}

#[test]
fn a_starting_proposal_whose_pair_holds_its_delegation_is_running() {
    let mut d = member("d", "p", Role::Driver);
    d.proposal = Some(proposal(ProposalStatus::Starting));
    let w = member("w", "p", Role::Worker);
    let mut p = pair("p", PairState::Active);
    p.delegation = Some(delegation(Some("prop_1")));
    let out = plan(std::slice::from_ref(&p), &[&d, &w]);
    assert_eq!(
        out.proposals,
        vec![ProposalFix::Running {
            driver_id: "d".into(),
            proposal_id: "prop_1".into(),
            pair_id: "p".into(),
            worker_id: "w".into(),
        }]
    );
    // Already running: nothing to do (the pair reports the cut-off delegation).
    d.proposal = Some(proposal(ProposalStatus::Running));
    assert!(plan(&[p], &[&d, &w]).proposals.is_empty());
}

#[test]
fn a_proposal_whose_removed_pair_held_its_delegation_is_reported_once() {
    let mut d = member("d", "p", Role::Driver);
    d.proposal = Some(proposal(ProposalStatus::Running));
    let mut p = pair("p", PairState::Closed);
    p.delegation = Some(delegation(Some("prop_1")));
    let out = plan(std::slice::from_ref(&p), &[&d]);
    assert_eq!(
        out.cut_off.len(),
        1,
        "the delegation's push-back ends the proposal"
    );
    assert!(out.proposals.is_empty(), "{:?}", out.proposals);
}
