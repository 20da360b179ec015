//! [`PendingPermissions`]: the tool approvals a session's agent asked for that no one
//! has answered yet, in the order asked. A plain value the actor owns; what is
//! published, answered and withdrawn is decided in `permissions.rs`.

use tandem_protocol::server::PendingPermission;

use crate::ids::RequestId;

/// Pending approval requests, oldest first.
#[derive(Debug, Default)]
pub(crate) struct PendingPermissions(Vec<PendingPermission>);

impl PendingPermissions {
    /// Adds a request the agent asked.
    pub(crate) fn add(&mut self, request: PendingPermission) {
        self.0.push(request);
    }

    /// The pending request `id`.
    pub(crate) fn get(&self, id: &RequestId) -> Option<&PendingPermission> {
        self.0.iter().find(|p| p.request_id == *id)
    }

    /// Takes request `id` out (answered or resolved elsewhere); `None` when it is
    /// not pending.
    pub(crate) fn take(&mut self, id: &RequestId) -> Option<PendingPermission> {
        let at = self.0.iter().position(|p| p.request_id == *id)?;
        Some(self.0.remove(at))
    }

    /// Takes every request out (their turn is over, or the session reloaded).
    pub(crate) fn take_all(&mut self) -> Vec<PendingPermission> {
        std::mem::take(&mut self.0)
    }

    /// The oldest request, the one the owner is asked about first.
    pub(crate) fn first(&self) -> Option<&PendingPermission> {
        self.0.first()
    }

    /// True when nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A copy of the list, for what the session publishes.
    pub(crate) fn to_vec(&self) -> Vec<PendingPermission> {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use tandem_protocol::PermissionKind;

    use super::*;

    fn request(id: &str) -> PendingPermission {
        PendingPermission {
            request_id: id.into(),
            tool_name: "Bash".into(),
            input: serde_json::Value::Null,
            changes: Vec::new(),
            permission_kind: PermissionKind::Tool,
            choices: Vec::new(),
        }
    }

    fn ids(pending: &PendingPermissions) -> Vec<String> {
        pending
            .to_vec()
            .into_iter()
            .map(|p| p.request_id.to_string())
            .collect()
    }

    #[test]
    fn taking_one_keeps_the_others_in_order() {
        let mut pending = PendingPermissions::default();
        for id in ["r1", "r2", "r3"] {
            pending.add(request(id));
        }
        let taken = pending.take(&RequestId::from("r2"));
        assert_eq!(taken.map(|p| p.request_id.to_string()), Some("r2".into()));
        assert_eq!(ids(&pending), ["r1", "r3"]);
        assert_eq!(
            pending.first().map(|p| p.request_id.to_string()),
            Some("r1".into())
        );
    }

    #[test]
    fn an_unknown_or_answered_id_is_not_pending() {
        let mut pending = PendingPermissions::default();
        pending.add(request("r1"));
        assert!(pending.take(&RequestId::from("nope")).is_none());
        assert!(pending.take(&RequestId::from("r1")).is_some());
        assert!(
            pending.take(&RequestId::from("r1")).is_none(),
            "answered once"
        );
        assert!(pending.get(&RequestId::from("r1")).is_none());
        assert!(pending.is_empty());
    }

    #[test]
    fn taking_all_empties_the_list() {
        let mut pending = PendingPermissions::default();
        pending.add(request("r1"));
        pending.add(request("r2"));
        assert_eq!(pending.take_all().len(), 2);
        assert!(pending.is_empty());
        assert!(pending.first().is_none());
    }
}
