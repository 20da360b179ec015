//! What a WebSocket request does: turns a parsed [`ClientFrame`] into runtime calls and
//! the frames that answer it. Knows nothing of the socket; the connection
//! (`ws.rs`) sends what [`dispatch`] returns.

use futures_util::future::LocalBoxFuture;
use serde::Serialize;
use serde_json::Value;
use tandem_actors::session::SendOutcome;
use tandem_actors::{Principal, Runtime, RuntimeError};
use tandem_protocol::client::ListParams;
use tandem_protocol::results::{
    ChatAbortResult, ChatEditSendResult, ChatSendResult, ChatStopTaskResult, ChatSubscribeResult,
    ChatUnsubscribeResult, PairCloseResult, PairCreateResult, PermissionResponseResult, PingResult,
    QueueChangeResult, ScheduleCancelResult, ScheduleResult, SessionConfigureResult,
    SessionCreateResult, SessionsListResult, ToolCallResult,
};
use tandem_protocol::{ClientFrame, ClientRequest, ErrorCode, ServerFrame};

/// What a request is answered with.
pub enum Dispatched {
    /// Frames to send at once, in order.
    Now(Vec<ServerFrame>),
    /// One frame to send when the request is done. Requests run concurrently;
    /// `requestId` ties each answer to its request.
    Later(LocalBoxFuture<'static, ServerFrame>),
    /// The answer of another cluster node, already serialized, passed on unchanged.
    Forwarded(LocalBoxFuture<'static, String>),
}

/// Who is asking, on which connection.
pub struct Requester<'a> {
    /// The runtime the request runs against.
    pub runtime: &'a Runtime,
    /// The authenticated caller.
    pub principal: &'a Principal,
    /// The connection's gateway client id (subscriptions and watches are per client).
    pub client_id: u64,
    /// This node's cluster membership: requests for another node's session go there.
    pub cluster: Option<&'a tandem_actors::cluster::Cluster>,
    /// The frame as received, forwarded as is to the node that owns its session.
    pub raw: Option<&'a str>,
}

/// An error frame; counts it in `protocol_errors`.
pub fn error_frame(
    runtime: &Runtime,
    code: ErrorCode,
    error: String,
    request_id: Option<String>,
    session_id: Option<String>,
) -> ServerFrame {
    tandem_actors::metrics::Metrics::inc(&runtime.metrics().protocol_errors);
    ServerFrame::ProtocolError {
        code,
        error,
        session_id,
        request_id,
        paths: None,
    }
}

fn fail(
    runtime: &Runtime,
    e: RuntimeError,
    request_id: Option<String>,
    session_id: Option<String>,
) -> ServerFrame {
    let mut frame = error_frame(runtime, e.code(), e.to_string(), request_id, session_id);
    if let ServerFrame::ProtocolError { paths, .. } = &mut frame {
        *paths = e.paths();
    }
    frame
}

/// Runs one request.
pub fn dispatch(who: Requester<'_>, frame: ClientFrame) -> Dispatched {
    let ClientFrame {
        request_id,
        request,
    } = frame;
    if let (Some(cluster), Some(raw)) = (who.cluster, who.raw) {
        use crate::cluster_route::{route, Routed};
        match route(
            cluster,
            who.runtime,
            who.principal,
            &request_id,
            &request,
            raw,
        ) {
            Some(Routed::Forwarded(answer)) => return Dispatched::Forwarded(answer),
            Some(Routed::Refused(frame)) => {
                tandem_actors::metrics::Metrics::inc(&who.runtime.metrics().protocol_errors);
                return Dispatched::Now(vec![frame]);
            }
            None => {}
        }
    }
    let cluster = who.cluster.cloned();
    let base = who.runtime;
    let rt = base.clone();
    let client_id = who.client_id;
    let who = who.principal.clone();
    match request {
        ClientRequest::Ping => Dispatched::Now(vec![ServerFrame::reply_with(
            request_id,
            &PingResult { pong: true },
        )]),
        ClientRequest::SessionCreate(params) => later(base, request_id, None, async move {
            if let Some(node) = params.node.as_deref() {
                if Some(node) != rt.config().node.as_deref() {
                    return Err(RuntimeError::InvalidArgument(format!(
                        "no node `{node:.64}` in the cluster"
                    )));
                }
            }
            let session = rt.create_session(&who, params).await?;
            Ok(SessionCreateResult { session })
        }),
        ClientRequest::SessionsWatch(p) => {
            list_page(&rt, cluster.as_ref(), &who, client_id, request_id, p, true)
        }
        ClientRequest::SessionsList(p) => {
            list_page(&rt, cluster.as_ref(), &who, client_id, request_id, p, false)
        }
        ClientRequest::ChatSubscribe(params) => {
            let mut frames = Vec::new();
            let mut subscribed = Vec::new();
            for entry in params.sessions {
                let last_seq = entry.last_seq.unwrap_or(0);
                let subscribed_here = match &cluster {
                    Some(c) => crate::cluster_route::subscribe(
                        c,
                        &rt,
                        &who,
                        client_id,
                        &entry.session_id,
                        last_seq,
                    ),
                    None => rt.subscribe(&who, client_id, &entry.session_id, last_seq),
                };
                match subscribed_here {
                    Ok(()) => subscribed.push(entry.session_id),
                    Err(e) => frames.push(fail(&rt, e, request_id.clone(), Some(entry.session_id))),
                }
            }
            if request_id.is_some() {
                frames.push(ServerFrame::reply_with(
                    request_id,
                    &ChatSubscribeResult { subscribed },
                ));
            }
            Dispatched::Now(frames)
        }
        ClientRequest::ChatUnsubscribe(params) => {
            rt.unsubscribe(client_id, params.session_ids);
            let mut frames = Vec::new();
            if request_id.is_some() {
                frames.push(ServerFrame::reply_with(
                    request_id,
                    &ChatUnsubscribeResult {},
                ));
            }
            Dispatched::Now(frames)
        }
        ClientRequest::ChatSend(p) => {
            let session_id = p.session_id.clone();
            later(base, request_id, Some(session_id.clone()), async move {
                Ok(
                    match rt
                        .send(&who, &p.session_id, p.content, p.options, p.queue)
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
            })
        }
        ClientRequest::ChatEditSend(p) => {
            let session_id = p.session_id.clone();
            later(base, request_id, Some(session_id.clone()), async move {
                let outcome = rt
                    .edit_send(&who, &p.session_id, p.anchor_seq, p.content, p.options)
                    .await?;
                Ok(ChatEditSendResult {
                    session_id,
                    turn_id: outcome.turn_id,
                    superseded: outcome.superseded,
                })
            })
        }
        ClientRequest::ChatAbort(p) => {
            let session_id = p.session_id.clone();
            later(base, request_id, Some(session_id.clone()), async move {
                rt.abort(&who, &p.session_id).await?;
                Ok(ChatAbortResult { session_id })
            })
        }
        ClientRequest::ChatStopTask(p) => {
            let session_id = p.session_id.clone();
            let task_id = p.task_id.unwrap_or_default();
            later(base, request_id, Some(session_id.clone()), async move {
                rt.stop_task(&who, &p.session_id, task_id.clone()).await?;
                Ok(ChatStopTaskResult {
                    session_id,
                    task_id,
                })
            })
        }
        ClientRequest::ChatPermissionResponse(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, sid, async move {
                let permission_id = p.request_id.clone();
                rt.respond_permission(&who, p).await?;
                Ok(PermissionResponseResult { permission_id })
            })
        }
        ClientRequest::ToolCall(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                Ok(
                    match rt
                        .call_tool(&who, &p.session_id, &p.name, p.arguments)
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
            })
        }
        ClientRequest::ProposalRespond(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                rt.respond_proposal(&who, p).await
            })
        }
        ClientRequest::PairCreate(p) => {
            let sid = p.driver_id.clone();
            later(base, request_id, Some(sid), async move {
                let pair = rt
                    .create_pair(
                        &who,
                        &p.driver_id,
                        p.worker,
                        p.worker_workspace,
                        p.worker_node,
                    )
                    .await?;
                Ok(PairCreateResult { pair })
            })
        }
        ClientRequest::SessionHandoff(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                rt.handoff(&who, p).await
            })
        }
        ClientRequest::SessionMerge(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                rt.merge_session(&who, &p.session_id, p.strategy, p.message)
                    .await
            })
        }
        ClientRequest::SessionDiscard(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                rt.discard_session(&who, &p.session_id).await
            })
        }
        ClientRequest::SessionSchedule(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                let s = rt.schedule(&who, &p.session_id, p.content, &p.at).await?;
                Ok(ScheduleResult {
                    schedule_id: s.schedule_id,
                    at: s.at,
                    status: s.status,
                })
            })
        }
        ClientRequest::SessionScheduleCancel(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                let s = rt
                    .cancel_schedule(&who, &p.session_id, p.schedule_id)
                    .await?;
                Ok(ScheduleCancelResult {
                    schedule_id: s.schedule_id,
                    status: s.status,
                })
            })
        }
        ClientRequest::ChatQueueCancel(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                let queued = rt
                    .cancel_queued(&who, &p.session_id, p.queue_id.clone())
                    .await?;
                Ok(QueueChangeResult {
                    session_id: p.session_id,
                    queue_id: p.queue_id,
                    queued,
                })
            })
        }
        ClientRequest::ChatQueueEdit(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                let queued = rt
                    .edit_queued(&who, &p.session_id, p.queue_id.clone(), p.content)
                    .await?;
                Ok(QueueChangeResult {
                    session_id: p.session_id,
                    queue_id: p.queue_id,
                    queued,
                })
            })
        }
        ClientRequest::PairClose(p) => later(base, request_id, None, async move {
            let interrupted = rt.close_pair(&who, &p.pair_id).await?;
            Ok(PairCloseResult {
                pair_id: p.pair_id,
                interrupted,
            })
        }),
        ClientRequest::SessionConfigure(p) => {
            let sid = p.session_id.clone();
            later(base, request_id, Some(sid), async move {
                let session = rt.configure(&who, p).await?;
                Ok(SessionConfigureResult { session })
            })
        }
    }
}

/// Answers `sessions.watch` / `sessions.list` with one page; a watch also
/// starts `session_upserted` delivery. A page at a time: a snapshot of every
/// session could be megabytes.
fn list_page(
    rt: &Runtime,
    cluster: Option<&tandem_actors::cluster::Cluster>,
    who: &Principal,
    client_id: u64,
    request_id: Option<String>,
    params: ListParams,
    watch: bool,
) -> Dispatched {
    let limit = params.limit.unwrap_or(ListParams::DEFAULT_LIMIT);
    // In a cluster the other nodes' sessions are listed too, in the same order.
    let others = cluster.map(|c| c.remote_sessions()).unwrap_or_default();
    let frame = match rt.session_page_with(who, limit, params.cursor.as_deref(), &others) {
        Ok(page) => {
            if watch {
                rt.watch(client_id);
            }
            ServerFrame::reply_with(
                request_id,
                &SessionsListResult {
                    sessions: page.sessions,
                    next_cursor: page.next_cursor,
                },
            )
        }
        Err(e) => fail(rt, e, request_id, None),
    };
    Dispatched::Now(vec![frame])
}

/// A request that waits on an actor, answered when it is done. A success is
/// answered only once what the request wrote is committed: an acknowledged
/// message, schedule or session survives a crash.
fn later<T: Serialize>(
    rt: &Runtime,
    request_id: Option<String>,
    session_id: Option<String>,
    fut: impl std::future::Future<Output = Result<T, RuntimeError>> + 'static,
) -> Dispatched {
    let rt = rt.clone();
    // Before the request's writes: a failure after this may have hit them.
    let epoch = rt.write_epoch();
    Dispatched::Later(Box::pin(async move {
        let mut res = fut.await;
        if res.is_ok() && !rt.synced_since(epoch).await {
            res = Err(RuntimeError::Internal("the store could not commit".into()));
        }
        match res {
            Ok(result) => ServerFrame::reply_with(request_id, &result),
            Err(e) => fail(&rt, e, request_id, session_id),
        }
    }))
}
