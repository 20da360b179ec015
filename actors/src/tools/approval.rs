//! `approve_worker`: a Driver answers a permission request of its Worker's agent
//! (pairs with `workerApprovals: driver`, see `crate::pair::approvals`). The request
//! is pending in the Worker's session; the answer is recorded there as decided by
//! the Driver. A request a person answered first, or whose turn ended, is
//! `NO_SUCH_PERMISSION`.

use tandem_protocol::tools::{ApproveWorkerParams, ApproveWorkerResult};
use tandem_protocol::{Decider, ErrorCode, RememberScope};

use super::partner::workers_to_try;
use super::question::first_that_knows;
use super::{optional, required};
use crate::cluster_link::ApprovalAnswer;
use crate::error::{PairError, ToolError};
use crate::ids::{PairId, RequestId};
use crate::runtime::Runtime;
use crate::session::{RespondPermission, SessionState};

pub(super) async fn approve_worker(
    rt: &Runtime,
    state: &SessionState,
    args: ApproveWorkerParams,
) -> Result<ApproveWorkerResult, ToolError> {
    let request_id = RequestId::new(required("requestId", args.request_id.into_string())?);
    let workers = workers_to_try(state, optional(args.worker).as_deref())?;
    let answer = ApprovalAnswer {
        request_id: request_id.clone(),
        allow: args.allow,
        remember: args.allow && args.remember.unwrap_or(false),
        message: optional(args.message).filter(|_| !args.allow),
    };
    let answered = first_that_knows(&workers, ErrorCode::NoSuchPermission, |worker| {
        approve_on(rt, worker.pair_id.clone(), answer.clone())
    })
    .await?;
    Ok(ApproveWorkerResult {
        request_id,
        partner_id: answered.worker_id.clone(),
        worker_name: answered.worker_name.clone(),
        allow: args.allow,
    })
}

/// Answers the request in the Worker of pair `pair_id`, here or on its node.
async fn approve_on(
    rt: &Runtime,
    pair_id: PairId,
    answer: ApprovalAnswer,
) -> Result<(), ToolError> {
    let (_, worker_id) = rt.pairs().parts(&pair_id).ok_or(PairError::Gone)?;
    match rt.pairs().remote_worker_node(&pair_id) {
        // A Worker on another node: its node answers the request there.
        Some(node) => {
            let cluster = rt.peers().link_to(&node, &worker_id)?;
            cluster.approve_on_worker(&node, &worker_id, answer).await?;
        }
        None => {
            let worker = rt
                .sessions()
                .session_handle(&worker_id)
                .ok_or(PairError::WorkerGone)?;
            worker
                .ask(RespondPermission {
                    request_id: answer.request_id,
                    allow: answer.allow,
                    updated_input: None,
                    message: answer.message,
                    remember: answer.remember.then_some(RememberScope::Session),
                    permission_mode: None,
                    decided_by: Decider::Driver,
                })
                .await??;
        }
    }
    Ok(())
}
