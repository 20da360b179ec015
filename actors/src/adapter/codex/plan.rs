//! Planning a Codex turn: which approval policy and sandbox a permission mode means,
//! loading (starting or resuming) the thread into a process, and `turn/start` with only
//! the settings that changed.

use serde_json::Value;
use tandem_protocol::PermissionMode;

use super::rpc::{Connection, RpcError, ThreadInbound};
use super::server::{AppServer, Connect};
use super::wire::{
    method, ApprovalPolicy, SandboxMode, ThreadResponse, ThreadResumeParams, ThreadStartParams,
    TurnStartParams, TurnStartResponse, UserInput,
};
use actix::{Addr, Recipient};

use crate::ids::SessionId;

/// Approval policy and sandbox for a permission mode. `confined`: the app-server runs
/// under tandem's Landlock ruleset (`adapter::confine`), in which Codex's own sandbox
/// (bubblewrap, which needs `mount`) cannot start, so a sandboxed command would fail.
/// There, tandem's ruleset is the sandbox (writes only in the working directory, the
/// Codex home and a private temporary directory) and Codex runs its commands
/// unsandboxed inside it; approvals keep what they can: default and plan run Codex's
/// `untrusted` policy (it asks before any command not known to be harmless). Plan is
/// then not read-only in the working directory, and Codex's network block does not
/// apply.
pub fn policy(mode: PermissionMode, confined: bool) -> (ApprovalPolicy, SandboxMode) {
    if confined {
        return match mode {
            PermissionMode::Default | PermissionMode::Plan => {
                (ApprovalPolicy::Untrusted, SandboxMode::DangerFullAccess)
            }
            PermissionMode::AcceptEdits => {
                (ApprovalPolicy::OnRequest, SandboxMode::DangerFullAccess)
            }
            PermissionMode::BypassPermissions => {
                (ApprovalPolicy::Never, SandboxMode::DangerFullAccess)
            }
        };
    }
    match mode {
        // Ask before anything that is not known to be harmless.
        PermissionMode::Default => (ApprovalPolicy::Untrusted, SandboxMode::WorkspaceWrite),
        // Edits in the workspace go ahead; leaving the sandbox is asked.
        PermissionMode::AcceptEdits => (ApprovalPolicy::OnRequest, SandboxMode::WorkspaceWrite),
        // Read-only; anything more is asked.
        PermissionMode::Plan => (ApprovalPolicy::OnRequest, SandboxMode::ReadOnly),
        PermissionMode::BypassPermissions => (ApprovalPolicy::Never, SandboxMode::DangerFullAccess),
    }
}

/// The settings a loaded thread runs with. `turn/start` overrides are sticky ("this
/// turn and subsequent turns"), and app-server takes several milliseconds longer to
/// start a turn that carries any (measured with `bench codex`: ~4 ms even when the
/// values equal the thread's), so a turn sends only the ones that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Applied {
    /// The process the thread is loaded in (a new process resumes it afresh).
    pub generation: u64,
    pub approval_policy: ApprovalPolicy,
    pub sandbox: SandboxMode,
    /// `None`: the thread's default (never overridden).
    pub model: Option<String>,
    /// `None`: not known (the thread's default, or whatever a resumed thread had).
    pub effort: Option<String>,
}

/// Everything needed to start a turn, detached from the actor (it may run twice).
pub(super) struct TurnPlan {
    /// The session the turn is for (a process started for it is shown under it).
    pub session_id: SessionId,
    pub server: Addr<AppServer>,
    pub me: Recipient<ThreadInbound>,
    pub timeout: std::time::Duration,
    /// The thread to use or resume; `None` starts one.
    pub thread_id: Option<String>,
    pub cwd: String,
    pub approval_policy: ApprovalPolicy,
    pub sandbox: SandboxMode,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub instructions: Option<String>,
    pub config: Option<Value>,
    pub input: Vec<UserInput>,
    /// The settings the thread runs with on the known connection, when known.
    pub applied: Option<Applied>,
}

/// A turn Codex accepted.
pub(super) struct Started {
    /// The connection it runs on.
    pub conn: Connection,
    /// Set when the thread was (re)loaded for it.
    pub loaded: Option<Loaded>,
    /// Codex's turn id.
    pub codex_id: String,
    /// The settings the thread runs with from this turn on.
    pub applied: Applied,
}

/// A thread loaded into a process.
pub(super) struct Loaded {
    pub thread_id: String,
    /// Something the person should know (the old thread could not be resumed).
    pub note: Option<String>,
}

impl TurnPlan {
    /// Connects (unless `known`, a connection the thread is loaded on), loads the
    /// thread if needed and routes it, then `turn/start`.
    pub async fn run(&self, known: Option<Connection>) -> Result<Started, RpcError> {
        let reuse = known.is_some() && self.thread_id.is_some();
        let conn = match known {
            Some(conn) => conn,
            None => self
                .server
                .send(Connect {
                    session_id: self.session_id.clone(),
                })
                .await
                .map_err(|e| RpcError::Closed(format!("app-server actor gone: {e}")))??,
        };
        let mut loaded = None;
        let thread = match (reuse, self.thread_id.clone()) {
            (true, Some(id)) => id,
            _ => {
                let outcome = load_thread(&conn, self).await?;
                let id = outcome.thread_id.clone();
                conn.route(&id, self.me.clone());
                loaded = Some(outcome);
                id
            }
        };
        // What the thread runs with before this turn: what loading it just set, or
        // what earlier turns on this connection left.
        let generation = conn.generation();
        let before = match &loaded {
            Some(_) => Some(Applied {
                generation,
                approval_policy: self.approval_policy,
                sandbox: self.sandbox,
                model: self.model.clone(),
                effort: None,
            }),
            None => self.applied.clone().filter(|a| a.generation == generation),
        };
        let wanted = Applied {
            generation,
            approval_policy: self.approval_policy,
            sandbox: self.sandbox,
            model: self
                .model
                .clone()
                .or_else(|| before.as_ref()?.model.clone()),
            effort: self
                .effort
                .clone()
                .or_else(|| before.as_ref()?.effort.clone()),
        };
        let params = overrides(before.as_ref(), &wanted, thread, self.input.clone());
        let started: TurnStartResponse = conn
            .request(method::TURN_START, &params, self.timeout)
            .await?;
        Ok(Started {
            conn,
            loaded,
            codex_id: started.turn.id,
            applied: wanted,
        })
    }
}

/// `turn/start` for `input`, carrying only the settings that differ from `before`
/// (all of them when it is not known).
fn overrides(
    before: Option<&Applied>,
    wanted: &Applied,
    thread_id: String,
    input: Vec<UserInput>,
) -> TurnStartParams {
    let changed = |same: fn(&Applied, &Applied) -> bool| before.is_none_or(|b| !same(b, wanted));
    TurnStartParams {
        thread_id,
        input,
        model: wanted
            .model
            .clone()
            .filter(|_| changed(|a, b| a.model == b.model)),
        effort: wanted
            .effort
            .clone()
            .filter(|_| changed(|a, b| a.effort == b.effort)),
        approval_policy: Some(wanted.approval_policy)
            .filter(|_| changed(|a, b| a.approval_policy == b.approval_policy)),
        sandbox_policy: Some(wanted.sandbox.into())
            .filter(|_| changed(|a, b| a.sandbox == b.sandbox)),
    }
}

/// Resumes the plan's thread or, when there is none (or it cannot be resumed), starts
/// a new thread.
async fn load_thread(conn: &Connection, plan: &TurnPlan) -> Result<Loaded, RpcError> {
    let mut note = None;
    if let Some(id) = plan.thread_id.clone() {
        let params = ThreadResumeParams {
            thread_id: id.clone(),
            cwd: plan.cwd.clone(),
            approval_policy: plan.approval_policy,
            sandbox: plan.sandbox,
            model: plan.model.clone(),
            developer_instructions: plan.instructions.clone(),
            config: plan.config.clone(),
            exclude_turns: true,
        };
        match conn
            .request::<_, ThreadResponse>(method::THREAD_RESUME, &params, plan.timeout)
            .await
        {
            Ok(r) => {
                return Ok(Loaded {
                    thread_id: r.thread.id,
                    note: None,
                })
            }
            Err(RpcError::Remote { message, .. }) => {
                note = Some(format!(
                    "Codex could not resume thread {id} ({message}); this turn starts a new Codex thread without the earlier conversation."
                ));
            }
            Err(e) => return Err(e),
        }
    }
    let params = ThreadStartParams {
        cwd: plan.cwd.clone(),
        approval_policy: plan.approval_policy,
        sandbox: plan.sandbox,
        model: plan.model.clone(),
        developer_instructions: plan.instructions.clone(),
        config: plan.config.clone(),
    };
    let r: ThreadResponse = conn
        .request(method::THREAD_START, &params, plan.timeout)
        .await?;
    Ok(Loaded {
        thread_id: r.thread.id,
        note,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn applied(effort: Option<&str>) -> Applied {
        Applied {
            generation: 1,
            approval_policy: ApprovalPolicy::Untrusted,
            sandbox: SandboxMode::WorkspaceWrite,
            model: None,
            effort: effort.map(str::to_string),
        }
    }

    fn sent(before: Option<&Applied>, wanted: &Applied) -> Value {
        serde_json::to_value(overrides(before, wanted, "t".into(), Vec::new()))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_turn_sends_only_the_settings_that_changed() {
        let same = applied(Some("high"));
        let params = sent(Some(&same), &same);
        assert_eq!(params, json!({"threadId": "t", "input": []}));

        let unknown = sent(None, &same);
        assert_eq!(unknown["approvalPolicy"], "untrusted", "{unknown}");
        assert_eq!(
            unknown["sandboxPolicy"]["type"], "workspaceWrite",
            "{unknown}"
        );
        assert_eq!(unknown["effort"], "high", "{unknown}");

        let mut bypass = same.clone();
        bypass.approval_policy = ApprovalPolicy::Never;
        bypass.sandbox = SandboxMode::DangerFullAccess;
        let changed = sent(Some(&same), &bypass);
        assert_eq!(changed["approvalPolicy"], "never", "{changed}");
        assert_eq!(
            changed["sandboxPolicy"]["type"], "dangerFullAccess",
            "{changed}"
        );
        assert!(changed.get("effort").is_none(), "{changed}");

        let low = sent(Some(&same), &applied(Some("low")));
        assert_eq!(low["effort"], "low", "{low}");
        assert!(low.get("approvalPolicy").is_none(), "{low}");
    }
}
