//! Codex's approval requests (server→client JSON-RPC requests) as permission requests,
//! and our answers back.

use serde::Serialize;
use serde_json::Value;
use tandem_protocol::{PermissionChoice, PermissionKind, RememberScope};

use super::rpc::Connection;
use super::shown;
use super::thread::CodexThread;
use super::wire::{
    method, ApprovalDecision, ApprovalResponse, CommandApprovalParams, ElicitationAction,
    ElicitationParams, ElicitationResponse, FileChangeApprovalParams, PermissionsApprovalParams,
    PermissionsApprovalResponse, RequestId,
};
use crate::adapter::core::Asked;
use crate::adapter::messages::{AgentItem, PendingPermission};

/// What kind of answer an approval takes.
#[derive(Debug, Clone)]
pub(super) enum ApprovalKind {
    /// `{decision}` (commands and file changes), which can accept for the session.
    Decision,
    /// `{permissions}`: the requested profile when allowed.
    Permissions(Value),
    /// `{action}`.
    Elicitation,
}

/// Why an app-server request gets no approval prompt.
#[derive(Debug, PartialEq)]
pub(super) enum Refused {
    /// Its params do not parse (JSON-RPC -32602).
    Unreadable,
    /// A method tandem does not serve (-32601).
    Unsupported,
}

/// An approval app-server waits for: how to answer it, and on which process.
#[derive(Debug)]
pub(super) struct Approval {
    /// App-server's request id, echoed in the answer.
    pub rpc_id: RequestId,
    /// The process that asked; an answer to a process that has since exited is dropped.
    pub generation: u64,
    /// The shape of the answer.
    pub kind: ApprovalKind,
}

/// An approval request as we show it: how to answer it, the tool it is for, and the
/// `permission_request` input.
pub(super) fn approval_request(
    method_name: &str,
    params: Value,
) -> Result<(ApprovalKind, String, Value), Refused> {
    fn parse<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, Refused> {
        serde_json::from_value(params).map_err(|_| Refused::Unreadable)
    }
    Ok(match method_name {
        method::COMMAND_APPROVAL => {
            let p: CommandApprovalParams = parse(params)?;
            let input = shown::value(shown::Shell {
                command: p.command.as_deref(),
                cwd: p.cwd.as_deref(),
                reason: p.reason.as_deref(),
            });
            (ApprovalKind::Decision, "shell".to_string(), input)
        }
        method::FILE_CHANGE_APPROVAL => {
            let p: FileChangeApprovalParams = parse(params)?;
            let input = shown::value(shown::PatchApproval {
                item_id: &p.item_id,
                reason: p.reason.as_deref(),
                grant_root: p.grant_root.as_deref(),
            });
            (ApprovalKind::Decision, "apply_patch".to_string(), input)
        }
        method::PERMISSIONS_APPROVAL => {
            let p: PermissionsApprovalParams = parse(params)?;
            let input = shown::value(shown::Permissions {
                permissions: &p.permissions,
                reason: p.reason.as_deref(),
            });
            (
                ApprovalKind::Permissions(p.permissions),
                "permissions".to_string(),
                input,
            )
        }
        method::ELICITATION => {
            let p: ElicitationParams = parse(params)?;
            let meta = p.meta.unwrap_or(Value::Null);
            let name = match meta.get("tool_name").and_then(Value::as_str) {
                Some(tool) => format!("mcp__{}__{tool}", p.server_name),
                None => format!("mcp__{}", p.server_name),
            };
            let input = meta.get("tool_params").cloned().unwrap_or_else(|| {
                shown::value(shown::Elicitation {
                    message: p.message.as_deref(),
                })
            });
            (ApprovalKind::Elicitation, name, input)
        }
        _ => return Err(Refused::Unsupported),
    })
}

/// The answers Codex offers for `kind`: commands and file changes can be accepted for
/// the rest of the session (`acceptForSession`).
fn choices(kind: &ApprovalKind) -> Vec<PermissionChoice> {
    let choice = |label: &str, allow: bool, remember: Option<RememberScope>| PermissionChoice {
        label: label.into(),
        allow,
        remember,
        permission_mode: None,
    };
    match kind {
        ApprovalKind::Decision => vec![
            choice("Allow once", true, None),
            choice("Allow for this session", true, Some(RememberScope::Session)),
            choice("Deny", false, None),
        ],
        ApprovalKind::Permissions(_) | ApprovalKind::Elicitation => {
            vec![choice("Allow", true, None), choice("Deny", false, None)]
        }
    }
}

/// Answers an approval request; `remember` accepts a decision for the session.
pub(super) fn answer(
    conn: &Connection,
    id: &RequestId,
    kind: &ApprovalKind,
    allow: bool,
    remember: bool,
) {
    fn send<R: Serialize>(conn: &Connection, id: &RequestId, r: R) {
        conn.respond(id, &r);
    }
    match kind {
        ApprovalKind::Decision => send(
            conn,
            id,
            ApprovalResponse {
                decision: match (allow, remember) {
                    (true, true) => ApprovalDecision::AcceptForSession,
                    (true, false) => ApprovalDecision::Accept,
                    (false, _) => ApprovalDecision::Decline,
                },
            },
        ),
        ApprovalKind::Permissions(requested) => send(
            conn,
            id,
            PermissionsApprovalResponse {
                permissions: if allow {
                    requested.clone()
                } else {
                    shown::value(shown::Empty {})
                },
            },
        ),
        ApprovalKind::Elicitation => send(
            conn,
            id,
            ElicitationResponse {
                action: if allow {
                    ElicitationAction::Accept
                } else {
                    ElicitationAction::Decline
                },
                content: allow.then(|| shown::value(shown::Empty {})),
            },
        ),
    }
}

impl CodexThread {
    /// App-server asks something of the client: an approval becomes a permission
    /// request (or is answered at once: outside a turn, bypassed, or remembered);
    /// anything else is refused.
    pub(super) fn on_request(
        &mut self,
        generation: u64,
        id: RequestId,
        method_name: &str,
        params: Value,
    ) {
        let Some(conn) = self.live_conn().filter(|c| c.generation() == generation) else {
            return;
        };
        let (kind, tool_name, input) = match approval_request(method_name, params) {
            Ok(request) => request,
            Err(Refused::Unreadable) => {
                conn.respond_error(&id, -32602, "unreadable params");
                return;
            }
            Err(Refused::Unsupported) => {
                // Dynamic tools and user-input prompts are not offered to Codex.
                let message = format!("{method_name} is not supported by tandem");
                conn.respond_error(&id, -32601, &message);
                return;
            }
        };
        let Some(turn_id) = self.turn.turn_id() else {
            answer(&conn, &id, &kind, false, false);
            return;
        };
        // A patch is asked about by its item's id: the changes are that item's.
        let changes = match (
            tool_name.as_str(),
            input["itemId"].as_str(),
            self.turn.get(),
        ) {
            ("apply_patch", Some(item), Some(turn)) => turn.data.mapper.file_changes(item),
            _ => Vec::new(),
        };
        let choices = choices(&kind);
        let approval = Approval {
            rpc_id: id,
            generation,
            kind,
        };
        match self
            .approvals
            .ask(self.settings.permission_mode, &tool_name, approval)
        {
            Asked::Allowed(a) => answer(&conn, &a.rpc_id, &a.kind, true, false),
            Asked::Pending(request_id) => {
                self.emitter.send(
                    Some(turn_id),
                    AgentItem::PermissionRequest(PendingPermission {
                        request_id,
                        tool_name,
                        input,
                        changes,
                        permission_kind: PermissionKind::Tool,
                        choices,
                    }),
                );
                self.report_busy();
            }
        }
    }

    /// A person answered `request_id`.
    pub(super) fn on_answer(&mut self, request_id: &str, allow: bool, remember: bool) {
        let Some(approval) = self.approvals.answer(request_id, remember) else {
            return;
        };
        if let Some(conn) = self
            .live_conn()
            .filter(|c| c.generation() == approval.generation)
        {
            answer(&conn, &approval.rpc_id, &approval.kind, allow, remember);
        }
        self.report_busy();
    }

    /// App-server settled a request by itself (`serverRequest/resolved`).
    pub(super) fn on_resolved(&mut self, rpc_id: &RequestId) {
        if let Some((request_id, _)) = self.approvals.withdraw(|a| a.rpc_id == *rpc_id) {
            let turn_id = self.turn.turn_id();
            self.emitter
                .send(turn_id, AgentItem::PermissionResolved { request_id });
            self.report_busy();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn approval_requests_are_shown_or_refused() {
        let (kind, name, input) = approval_request(
            method::COMMAND_APPROVAL,
            json!({"threadId": "t", "turnId": "u", "itemId": "i", "command": "ls", "cwd": "/w"}),
        )
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(matches!(kind, ApprovalKind::Decision));
        assert_eq!(name, "shell");
        assert_eq!(input, json!({"command": "ls", "cwd": "/w"}));
        assert_eq!(
            choices(&kind)
                .iter()
                .map(|c| (c.allow, c.remember))
                .collect::<Vec<_>>(),
            vec![
                (true, None),
                (true, Some(RememberScope::Session)),
                (false, None)
            ]
        );
        assert_eq!(
            approval_request(method::COMMAND_APPROVAL, json!({"threadId": 1})).err(),
            Some(Refused::Unreadable)
        );
        assert_eq!(
            approval_request("item/tool/requestUserInput", json!({})).err(),
            Some(Refused::Unsupported)
        );
    }
}
