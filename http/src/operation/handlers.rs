//! What each request of the table does on the node it runs on: one arm per request,
//! each a runtime call and the `*Result` it answers with. Requests bound to a
//! WebSocket connection (subscriptions, watches) are the connection's own
//! (`crate::ws_requests`) and refused here.

use serde::Serialize;
use serde_json::Value;
use tandem_actors::session::SendOutcome;
use tandem_actors::{Principal, Runtime, RuntimeError};
use tandem_protocol::client::{SessionCreateParams, SessionsListParams};
use tandem_protocol::queries::*;
use tandem_protocol::rest::{
    ChatQueueResult, PairsListResult, SessionSchedulesResult, SessionsListResult,
    SessionsRunningResult, VendorsListResult,
};
use tandem_protocol::results::*;
use tandem_protocol::workspace::DEFAULT_DIFF_CAP;
use tandem_protocol::{ClientRequest, ErrorCode};

use super::{Answer, Context};
use crate::error::ApiError;

/// Runs one request here.
pub async fn run(
    ctx: &Context,
    who: &Principal,
    request: ClientRequest,
) -> Result<Answer, ApiError> {
    use ClientRequest as R;
    let rt = &ctx.runtime;
    match request {
        R::Ping(_) => json(PingResult { pong: true }),
        R::SessionCreate(p) => json(create(rt, who, p).await?),
        R::SessionGet(p) => json(SessionGetResult {
            session: rt.sessions().session(who, &p.session_id)?,
        }),
        R::SessionConfigure(p) => json(SessionConfigureResult {
            session: rt.sessions().configure(who, p).await?,
        }),
        R::SessionArchive(p) => {
            rt.archive(who, &p.session_id).await?;
            json(SessionArchiveResult {
                session_id: p.session_id,
                archived: true,
            })
        }
        R::SessionEvents(p) => events(rt, who, p).await,
        R::SessionMcpToken(p) => json(SessionMcpTokenResult {
            token: rt.mcp_token(who, &p.session_id)?,
            url: rt.mcp_url(),
        }),
        R::SessionUsage(p) => json(SessionUsageResult {
            usage: rt.sessions().usage(who, &p.session_id, p.since).await?,
        }),
        R::SessionsList(p) => json(list_page(ctx, who, p)?),
        R::ExternalList(p) => json(rt.external_sessions(who, p).await?),
        R::ExternalImport(p) => json(rt.import_external(who, p).await?),
        R::SessionsRunning(_) => json(SessionsRunningResult {
            sessions: rt.sessions().running_with(who, &others(ctx)),
        }),
        other => Box::pin(account(rt, who, other)).await,
    }
}

/// The requests about the server and the caller's own things: vendors, the fleet,
/// MCP servers, devices, push.
async fn account(
    rt: &Runtime,
    who: &Principal,
    request: ClientRequest,
) -> Result<Answer, ApiError> {
    use ClientRequest as R;
    match request {
        R::McpServersList(_) => json(rt.mcp_servers().list(who)),
        R::McpServerProbe(p) => json(rt.mcp_servers().probe(who, p).await?),
        R::McpServerAdd(p) => json(rt.mcp_servers().add(who, p).await?),
        R::McpServerRemove(p) => json(rt.mcp_servers().remove(who, p).await?),
        R::FleetGet(_) => json(rt.vendors().fleet(who)?),
        R::UserGet(_) => json(UserGetResult {
            user_id: who.user_id.clone(),
            admin: who.admin,
        }),
        R::VendorsList(_) => json(VendorsListResult {
            vendors: rt.vendors().list(),
        }),
        R::DevicePairCode(_) => {
            let code = rt.auth().pair_code(who).await?;
            let qr = crate::pairing::qr(&code.url)
                .map_err(|e| ApiError::new(ErrorCode::Internal, format!("no QR code: {e}")))?;
            json(tandem_protocol::devices::DevicePairCodeResult {
                code: code.code,
                url: code.url,
                expires_at: code.expires_at,
                reachable: code.reachable,
                qr,
            })
        }
        R::DevicesList(_) => json(tandem_protocol::devices::DevicesListResult {
            devices: rt.auth().devices(who).await?,
        }),
        R::DeviceRevoke(p) => {
            rt.auth().revoke_device(who, &p.device_id).await?;
            json(tandem_protocol::devices::DeviceRevokeResult {
                device_id: p.device_id,
                revoked: true,
            })
        }
        R::PushKey(_) => json(tandem_protocol::push::PushKeyResult {
            public_key: rt.push().public_key(),
        }),
        R::PushSubscribe(p) => json(tandem_protocol::push::PushSubscribeResult {
            subscription: rt.push().subscribe(who, p).await?,
        }),
        R::PushSubscriptions(_) => json(tandem_protocol::push::PushSubscriptionsResult {
            subscriptions: rt.push().subscriptions(who).await?,
        }),
        R::PushUnsubscribe(p) => {
            rt.push().unsubscribe(who, &p.subscription_id).await?;
            json(tandem_protocol::push::PushUnsubscribeResult {
                subscription_id: p.subscription_id,
                removed: true,
            })
        }
        other => Box::pin(chat(rt, who, other)).await,
    }
}

/// The requests on a session's conversation: messages, turns, approvals, queue.
async fn chat(rt: &Runtime, who: &Principal, request: ClientRequest) -> Result<Answer, ApiError> {
    use ClientRequest as R;
    match request {
        R::ChatSend(p) => json(send(rt, who, p).await?),
        R::ChatEditSend(p) => {
            let outcome = rt
                .edit_send(
                    who,
                    &p.session_id,
                    p.anchor_seq,
                    p.content,
                    p.options,
                    p.restore_files,
                )
                .await?;
            json(ChatEditSendResult {
                session_id: p.session_id,
                turn_id: outcome.turn_id,
                superseded: outcome.superseded,
                restored: outcome.restored,
            })
        }
        R::ChatReview(p) => json(rt.review(who, p).await?),
        R::SessionReviewBy(p) => json(rt.review_by(who, p).await?),
        R::ClientSeen(p) => json(tandem_protocol::session::ClientSeenResult {
            attention: rt.sessions().seen(who, &p.session_id, p.seq).await?,
            session_id: p.session_id,
        }),
        R::ChatAbort(p) => {
            rt.sessions().abort(who, &p.session_id).await?;
            json(ChatAbortResult {
                session_id: p.session_id,
            })
        }
        R::ChatStopTask(p) => {
            let task_id = p.task_id.unwrap_or_default();
            rt.sessions()
                .stop_task(who, &p.session_id, task_id.clone())
                .await?;
            json(ChatStopTaskResult {
                session_id: p.session_id,
                task_id,
            })
        }
        R::ChatPermissionResponse(p) => {
            let permission_id = p.request_id.clone();
            rt.sessions().respond_permission(who, p).await?;
            json(ChatPermissionResponseResult { permission_id })
        }
        R::ChatQueue(p) => json(ChatQueueResult {
            queued: rt.sessions().queued(who, &p.session_id)?,
            session_id: p.session_id,
        }),
        R::ChatQueueCancel(p) => json(ChatQueueChangeResult {
            queued: rt
                .sessions()
                .cancel_queued(who, &p.session_id, p.queue_id.clone())
                .await?,
            session_id: p.session_id,
            queue_id: p.queue_id,
        }),
        R::ChatQueueEdit(p) => json(ChatQueueChangeResult {
            queued: rt
                .sessions()
                .edit_queued(who, &p.session_id, p.queue_id.clone(), p.content)
                .await?,
            session_id: p.session_id,
            queue_id: p.queue_id,
        }),
        other => Box::pin(delegation(rt, who, other)).await,
    }
}

/// The requests between sessions and over time: tools, proposals, pairs, handoffs,
/// schedules.
async fn delegation(
    rt: &Runtime,
    who: &Principal,
    request: ClientRequest,
) -> Result<Answer, ApiError> {
    use ClientRequest as R;
    match request {
        R::ToolCall(p) => json(tool_call(rt, who, p).await?),
        R::ProposalRespond(p) => json(rt.respond_proposal(who, p).await?),
        R::QuestionAnswer(p) => json(rt.answer_question(who, p).await?),
        R::PairCreate(p) => json(PairCreateResult {
            pair: rt.create_pair(who, p).await?,
        }),
        R::PairClose(p) => json(PairCloseResult {
            interrupted: rt.pairs().close(who, &p.pair_id).await?,
            pair_id: p.pair_id,
        }),
        R::PairsList(_) => json(PairsListResult {
            pairs: rt.pairs().list(who),
        }),
        R::SessionHandoff(p) => json(rt.handoff(who, p).await?),
        R::SessionFork(p) => json(rt.fork(who, p).await?),
        R::SessionSchedule(p) => {
            let s = rt.schedules().add(who, p).await?;
            json(SessionScheduleResult {
                schedule_id: s.schedule_id,
                at: s.at,
                status: s.status,
            })
        }
        R::SessionScheduleCancel(p) => {
            let s = rt
                .schedules()
                .cancel(who, &p.session_id, p.schedule_id)
                .await?;
            json(SessionScheduleCancelResult {
                schedule_id: s.schedule_id,
                status: s.status,
            })
        }
        R::SessionSchedules(p) => json(SessionSchedulesResult {
            schedules: rt.schedules().list(who, &p.session_id).await?,
        }),
        R::LoopStart(p) => json(rt.schedules().start_loop(who, p).await?),
        R::SessionCommands(p) => json(rt.sessions().session_commands(who, &p.session_id).await?),
        R::LoopStop(p) => json(rt.schedules().stop_loop(who, p).await?),
        R::TerminalOpen(p) => json(rt.terminals().open(who, p)?),
        R::TerminalList(p) => json(rt.terminals().list(who, p)?),
        R::TerminalClose(p) => json(rt.terminals().close(who, p).await?),
        other => Box::pin(workspace(rt, who, other)).await,
    }
}

/// The requests on a session's working directory and worktree.
async fn workspace(
    rt: &Runtime,
    who: &Principal,
    request: ClientRequest,
) -> Result<Answer, ApiError> {
    use ClientRequest as R;
    match request {
        R::SessionChanges(p) => json(SessionChangesResult {
            changes: rt.files().changes(who, &p.session_id).await?,
        }),
        R::SessionCheckpoints(p) => json(SessionCheckpointsResult {
            checkpoints: rt.workspaces().checkpoints(who, &p.session_id).await?,
            session_id: p.session_id,
        }),
        R::SessionRestore(p) => json(
            rt.workspaces()
                .restore(who, &p.session_id, p.turn_id)
                .await?,
        ),
        R::SessionDiff(p) => json(SessionDiffResult {
            diff: rt
                .files()
                .diff(who, &p.session_id, p.path, DEFAULT_DIFF_CAP)
                .await?,
        }),
        R::SessionMerge(p) => json(
            rt.workspaces()
                .merge(who, &p.session_id, p.strategy, p.message, p.force)
                .await?,
        ),
        R::SessionDiscard(p) => json(rt.workspaces().discard(who, &p.session_id).await?),
        R::SessionRebase(p) => json(rt.workspaces().rebase(who, &p.session_id).await?),
        R::SessionCheck(p) => json(rt.workspaces().check(who, &p.session_id).await?),
        R::SessionRun(p) => json(rt.workspaces().start_run(who, &p.session_id).await?),
        R::SessionRunStop(p) => json(rt.workspaces().stop_run(who, &p.session_id).await?),
        R::SessionRunLog(p) => json(rt.workspaces().run_log(who, &p.session_id)?),
        R::SessionPush(p) => json(
            rt.workspaces()
                .push(who, &p.session_id, p.remote, p.branch)
                .await?,
        ),
        R::SessionFiles(p) => json(SessionFilesResult {
            listing: rt
                .files()
                .list(who, &p.session_id, p.path.unwrap_or_default())
                .await?,
        }),
        R::SessionFileRead(p) => json(SessionFileReadResult {
            file: rt.files().read(who, &p.session_id, p.path).await?,
        }),
        R::SessionFileWrite(p) => json(SessionFileWriteResult {
            saved: rt
                .files()
                .write(who, &p.session_id, p.path, p.content, p.if_match)
                .await?,
        }),
        other => Err(ApiError::new(
            ErrorCode::InvalidArgument,
            format!(
                "`{}` belongs to a WebSocket connection; send it on one",
                other.name()
            ),
        )),
    }
}

fn json<T: Serialize>(result: T) -> Result<Answer, ApiError> {
    serde_json::to_string(&result).map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))
}

/// The other cluster nodes' sessions, listed beside this node's.
fn others(ctx: &Context) -> Vec<tandem_protocol::SessionInfo> {
    ctx.cluster
        .as_ref()
        .map(|c| c.remote_sessions())
        .unwrap_or_default()
}

async fn create(
    rt: &Runtime,
    who: &Principal,
    params: SessionCreateParams,
) -> Result<SessionCreateResult, RuntimeError> {
    // A node other than this one reaches here only when the cluster does not know
    // it (or there is no cluster).
    if let Some(node) = params.node.as_deref() {
        if Some(node) != rt.config().node.as_deref() {
            return Err(RuntimeError::unusable(format!(
                "no node `{node:.64}` in the cluster"
            )));
        }
    }
    Ok(SessionCreateResult {
        session: rt.create_session(who, params).await?,
    })
}

/// One page of sessions, the cluster's other nodes' included, in one order.
pub fn list_page(
    ctx: &Context,
    who: &Principal,
    p: SessionsListParams,
) -> Result<SessionsListResult, RuntimeError> {
    let limit = p.limit.unwrap_or(SessionsListParams::DEFAULT_LIMIT);
    let page =
        ctx.runtime
            .sessions()
            .session_page_with(who, limit, p.cursor.as_deref(), &others(ctx))?;
    Ok(SessionsListResult {
        sessions: page.sessions,
        next_cursor: page.next_cursor,
    })
}

async fn send(
    rt: &Runtime,
    who: &Principal,
    p: tandem_protocol::client::ChatSendParams,
) -> Result<ChatSendResult, RuntimeError> {
    let session_id = p.session_id;
    Ok(
        match rt
            .send(who, &session_id, p.content, p.options, p.queue)
            .await?
        {
            SendOutcome::Started { turn_id } => ChatSendResult::Started {
                session_id,
                turn_id,
            },
            SendOutcome::Queued { position } => ChatSendResult::Queued {
                session_id,
                queued: true,
                position,
            },
        },
    )
}

async fn tool_call(
    rt: &Runtime,
    who: &Principal,
    p: tandem_protocol::client::ToolCallParams,
) -> Result<ToolCallResult, RuntimeError> {
    Ok(
        match rt
            .call_tool(who, &p.session_id, &p.name, p.arguments)
            .await?
        {
            Ok(result) => ToolCallResult {
                result,
                is_error: false,
                code: None,
            },
            Err(e) => ToolCallResult {
                result: Value::String(e.to_string()),
                is_error: true,
                code: Some(e.code()),
            },
        },
    )
}

/// Stored frames are spliced in as they were sent, never re-encoded.
async fn events(rt: &Runtime, who: &Principal, p: SessionEventsParams) -> Result<Answer, ApiError> {
    let (frames, last_seq, has_more) = rt
        .clients()
        .events(who, &p.session_id, p.after, p.limit)
        .await?;
    let size = frames.iter().map(|f| f.len() + 1).sum::<usize>() + 64;
    let mut out = String::with_capacity(size);
    out.push_str("{\"events\":[");
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(frame);
    }
    out.push_str(&format!(
        "],\"lastSeq\":{last_seq},\"hasMore\":{has_more}}}"
    ));
    Ok(out)
}
