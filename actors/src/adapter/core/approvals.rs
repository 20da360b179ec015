//! [`Approvals`]: tool approvals an adapter's vendor waits for, and the rules that
//! answer them without asking.

use std::collections::BTreeSet;

use tandem_protocol::PermissionMode;

use crate::clock::random_id;
use crate::ids::RequestId;

/// What [`Approvals::ask`] decided.
#[derive(Debug, PartialEq)]
pub enum Asked<H> {
    /// Allowed without asking (permissions are bypassed, or a remembered rule covers
    /// the tool): answer the vendor now with this handle.
    Allowed(H),
    /// Waiting for a person: raise a `permission_request` with this id.
    Pending(RequestId),
}

/// One request waiting for an answer.
#[derive(Debug)]
struct Pending<H> {
    /// Our id (`perm_…`), unique across the server; clients answer by it.
    request_id: RequestId,
    /// The tool it is for (what "always allow" remembers).
    tool: String,
    /// What the adapter needs to answer the vendor (its request id, the input, ...).
    handle: H,
}

/// The approvals one session's vendor waits for. `H` is the adapter's own handle for
/// answering one (a JSON-RPC id, a control request id, a channel).
#[derive(Debug)]
pub struct Approvals<H> {
    pending: Vec<Pending<H>>,
    /// Tools a person allowed for the rest of the session ("always allow").
    remembered: BTreeSet<String>,
}

impl<H> Approvals<H> {
    /// No request pending; `remembered` are the tools already allowed for the session
    /// (kept in the session's record across adapters and restarts).
    pub fn new(remembered: impl IntoIterator<Item = String>) -> Self {
        Approvals {
            pending: Vec::new(),
            remembered: remembered.into_iter().collect(),
        }
    }

    /// The vendor asks to use `tool`: allowed at once when the session bypasses
    /// permissions or a remembered rule covers it, else pending under a new id.
    pub fn ask(&mut self, mode: PermissionMode, tool: &str, handle: H) -> Asked<H> {
        if mode == PermissionMode::BypassPermissions || self.remembered.contains(tool) {
            return Asked::Allowed(handle);
        }
        Asked::Pending(self.hold(tool, handle))
    }

    /// Waits for a person whatever the mode and rules (approving a plan is always a
    /// person's call); the new request's id.
    pub fn hold(&mut self, tool: &str, handle: H) -> RequestId {
        let request_id = RequestId::new(random_id("perm_", 12));
        self.pending.push(Pending {
            request_id: request_id.clone(),
            tool: tool.to_string(),
            handle,
        });
        request_id
    }

    /// A person answered `request_id`: its handle, once (`None` when it is no longer
    /// pending). With `remember`, its tool is allowed without asking from now on.
    pub fn answer(&mut self, request_id: &str, remember: bool) -> Option<H> {
        let pos = self
            .pending
            .iter()
            .position(|p| p.request_id == request_id)?;
        let pending = self.pending.remove(pos);
        if remember {
            self.remembered.insert(pending.tool);
        }
        Some(pending.handle)
    }

    /// Removes the first pending request whose handle matches (the vendor withdrew it);
    /// returns its id and handle.
    pub fn withdraw(&mut self, matches: impl Fn(&H) -> bool) -> Option<(RequestId, H)> {
        let pos = self.pending.iter().position(|p| matches(&p.handle))?;
        let p = self.pending.remove(pos);
        Some((p.request_id, p.handle))
    }

    /// Removes every pending request (the turn or the process ended); their ids and
    /// handles, oldest first.
    pub fn drain(&mut self) -> Vec<(RequestId, H)> {
        self.pending
            .drain(..)
            .map(|p| (p.request_id, p.handle))
            .collect()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bypass_and_remembered_rules_answer_without_asking() {
        let mut approvals: Approvals<u32> = Approvals::new(["Read".to_string()]);
        assert_eq!(
            approvals.ask(PermissionMode::BypassPermissions, "Bash", 1),
            Asked::Allowed(1)
        );
        assert_eq!(
            approvals.ask(PermissionMode::Default, "Read", 2),
            Asked::Allowed(2)
        );
        let Asked::Pending(id) = approvals.ask(PermissionMode::Default, "Bash", 3) else {
            panic!("Bash was not asked");
        };
        assert!(id.starts_with("perm_"), "{id}");
        let Asked::Pending(second) = approvals.ask(PermissionMode::Default, "Bash", 4) else {
            panic!("Bash was not asked again");
        };
        // Answered once; "always allow" covers the tool from then on.
        assert_eq!(approvals.answer(&id, true), Some(3));
        assert_eq!(approvals.answer(&id, true), None);
        assert_eq!(
            approvals.ask(PermissionMode::Default, "Bash", 5),
            Asked::Allowed(5)
        );
        // A request raised before the rule stays pending until answered.
        assert_eq!(approvals.answer(&second, false), Some(4));
        assert!(approvals.is_empty());
    }

    #[test]
    fn withdraw_and_drain() {
        let mut approvals: Approvals<u32> = Approvals::new([]);
        for n in 1..=3 {
            let _ = approvals.ask(PermissionMode::Plan, "Edit", n);
        }
        assert_eq!(approvals.withdraw(|h| *h == 2).map(|(_, h)| h), Some(2));
        assert_eq!(
            approvals
                .drain()
                .into_iter()
                .map(|(_, h)| h)
                .collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert!(approvals.is_empty());
    }
}
