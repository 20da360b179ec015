//! The table of every client request, declared once.
//!
//! Each row of [`operations!`] names a request's wire name (the `type` of its
//! WebSocket frame), its `*Params` and `*Result` types, its scope (where in a cluster
//! it runs, and which id a frame must carry) and its [`Effect`] on state. From the
//! table come [`ClientRequest`], the frame decoder [`ClientRequest::decode`] (the
//! `sessionId` requirement derived from the scope), [`ClientRequest::scope`] (cluster
//! routing), [`ClientRequest::effect`] (whether the entry point waits for the commit
//! of a state change), the request schemas ([`crate::results::request_schemas`]) and, for
//! REST, [`Operation`]: a params type knows its request and its result type.
//!
//! Adding a request: a row here, its handler in `http/src/operation/`, its test.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::client::*;
use crate::error::ErrorCode;
use crate::ids::{PairId, RequestId, SessionId};
use crate::queries::*;
use crate::rest::{
    ChatQueueResult, PairsListResult, SessionSchedulesResult, SessionsListResult,
    SessionsRunningResult, VendorsListResult,
};
use crate::results::*;
use crate::workspace::{SessionDiscardResult, SessionMergeParams, SessionMergeResult};

// What the rows' REST routes are made of.
use crate::openapi::{
    of, route, Media, Route, SchemaFn, DIR_PATH, FILE, FILE_PATH, SAVE_PATH, TEXT,
};
use crate::rest::{
    EmptyBody, InterruptAccepted, McpToken, MessageAccepted, PostMessage, SessionPatch,
};
use crate::rest_control::{HandoffBody, PermissionAnswer, ScheduleBody};
use crate::session::SessionInfo;

/// Where a request runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// On the node that owns this session.
    Session(&'a SessionId),
    /// On the node this pair runs on (its Driver's).
    Pair(&'a PairId),
    /// On this node (`None`) or on the named node.
    Node(Option<&'a str>),
    /// On whichever node has this permission request pending
    /// (`chat.permission-response` without `sessionId`).
    Permission(&'a RequestId),
    /// On the node asked, from what it knows of the whole cluster.
    Local,
    /// On the node asked, for the asking WebSocket connection (subscriptions,
    /// watches): not a REST or MCP operation, never forwarded.
    Connection,
}

/// Why a request's fields were refused before it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The code to report.
    pub code: ErrorCode,
    /// What was wrong, for a person.
    pub message: String,
    /// The session the refusal is about, when it is not the frame's own `sessionId`
    /// (one entry of `chat.subscribe`).
    pub session_id: Option<SessionId>,
}

impl Refusal {
    /// An `INVALID_ARGUMENT` refusal.
    pub fn invalid(message: impl Into<String>) -> Refusal {
        Refusal {
            code: ErrorCode::InvalidArgument,
            message: message.into(),
            session_id: None,
        }
    }
}

/// Rules of a request's fields that their types do not state (ranges, required
/// choices); run on every transport before the request runs.
pub trait Validate {
    /// `Err` when the fields break a rule.
    fn validate(&self) -> Result<(), Refusal>;
}

/// A params type: which request it makes and what answers it. REST handlers build one
/// from a path and a body and run it as that request.
pub trait Operation: Serialize + DeserializeOwned + JsonSchema {
    /// The request's wire name.
    const NAME: &'static str;
    /// What a successful request answers.
    type Result: Serialize + DeserializeOwned + JsonSchema;
    /// The request these fields make.
    fn into_request(self) -> ClientRequest;
}

/// What the table says of one request, for documents and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationInfo {
    /// Wire name.
    pub name: &'static str,
    /// True when it changes state (answered only once committed).
    pub writes: bool,
    /// How the entry point makes its answer durable.
    pub effect: Effect,
    /// True when its frame must carry `sessionId`.
    pub needs_session: bool,
}

macro_rules! scope_of {
    ($p:ident, session, $f:ident) => {
        Scope::Session(&$p.$f)
    };
    ($p:ident, pair, $f:ident) => {
        Scope::Pair(&$p.$f)
    };
    ($p:ident, node, $f:ident) => {
        Scope::Node($p.$f.as_deref())
    };
    ($p:ident, permission) => {
        match $p.session_id.as_ref() {
            Some(id) if !id.is_empty() => Scope::Session(id),
            _ => Scope::Permission(&$p.request_id),
        }
    };
    ($p:ident, local) => {
        Scope::Local
    };
    ($p:ident, connection) => {
        Scope::Connection
    };
}

/// A frame must carry `sessionId` exactly when the request is scoped by it.
macro_rules! needs_session {
    (session, session_id) => {
        true
    };
    ($($other:tt)*) => {
        false
    };
}

/// What a request does to state, which decides whether the entry point waits for
/// the store before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Changes nothing: answered at once.
    Reads,
    /// Changes state: the entry point answers only once the store committed every
    /// write queued while the request ran.
    Writes,
    /// Changes state and its handler already answers only once its writes are
    /// committed (`session.create`: the session is on disk before it is listed or
    /// announced), so the entry point does not wait a second time.
    Commits,
}

macro_rules! effect {
    (reads) => {
        Effect::Reads
    };
    (writes) => {
        Effect::Writes
    };
    (commits) => {
        Effect::Commits
    };
}

macro_rules! validate {
    ($p:ident) => {
        Ok(())
    };
    ($p:ident, checked) => {
        Validate::validate($p)
    };
}

macro_rules! operations {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident $name:literal $params:ty => $result:ty
            [$kind:ident $(($field:ident))?, $effect:ident $(, $check:ident)?]
            $(rest $route:expr)?;
    )*) => {
        /// Every client request the server understands, keyed by its wire name.
        #[derive(Debug, Clone, PartialEq)]
        pub enum ClientRequest {
            $($(#[doc = $doc])* $variant($params),)*
        }

        /// Every request of the table, in its order.
        pub const OPERATIONS: &[OperationInfo] = &[$(OperationInfo {
            name: $name,
            writes: !matches!(effect!($effect), Effect::Reads),
            effect: effect!($effect),
            needs_session: needs_session!($kind $(, $field)?),
        },)*];

        impl ClientRequest {
            /// The wire name.
            pub fn name(&self) -> &'static str {
                match self { $(Self::$variant(_) => $name,)* }
            }

            /// Where it runs.
            pub fn scope(&self) -> Scope<'_> {
                match self { $(Self::$variant(_p) => scope_of!(_p, $kind $(, $field)?),)* }
            }

            /// True when it changes state: answered only once that is committed.
            pub fn writes(&self) -> bool {
                self.effect() != Effect::Reads
            }

            /// What it does to state (see [`Effect`]).
            pub fn effect(&self) -> Effect {
                match self { $(Self::$variant(_) => effect!($effect),)* }
            }

            /// Checks the rules its types do not state.
            pub fn validate(&self) -> Result<(), Refusal> {
                match self { $(Self::$variant(_p) => validate!(_p $(, $check)?),)* }
            }

            /// The request's fields as a frame's, with `type` (no `requestId`).
            pub fn to_frame(&self) -> Value {
                let fields = match self {
                    $(Self::$variant(p) => serde_json::to_value(p),)*
                };
                let mut frame = match fields {
                    Ok(Value::Object(map)) => map,
                    _ => Map::new(),
                };
                frame.insert("type".into(), Value::String(self.name().into()));
                Value::Object(frame)
            }

            /// The request named `kind` from a frame's fields (without `type` and
            /// `requestId`); `None` for a name the table does not have.
            pub fn decode(kind: &str, fields: Map<String, Value>) -> Option<Result<Self, Refusal>> {
                Some(match kind {
                    $($name => decode::<$params>(kind, fields).map(Self::$variant),)*
                    _ => return None,
                })
            }

            /// The REST route of each request that has one, as its row declares it
            /// (`crate::openapi` makes the OpenAPI document of them).
            pub fn rest_routes() -> Vec<(&'static str, Route)> {
                vec![$($(($name, $route),)?)*]
            }

            /// Each request's name and the schemas of its params and result.
            pub fn schemas(
                generator: &mut schemars::SchemaGenerator,
                mut add: impl FnMut(&'static str, schemars::Schema, schemars::Schema),
            ) {
                $(
                    let params = generator.subschema_for::<$params>();
                    let result = generator.subschema_for::<$result>();
                    add($name, params, result);
                )*
            }
        }

        $(impl Operation for $params {
            const NAME: &'static str = $name;
            type Result = $result;
            fn into_request(self) -> ClientRequest {
                ClientRequest::$variant(self)
            }
        })*
    };
}

/// A frame's fields read as `T`.
fn decode<T: DeserializeOwned>(kind: &str, fields: Map<String, Value>) -> Result<T, Refusal> {
    serde_json::from_value(Value::Object(fields))
        .map_err(|e| Refusal::invalid(format!("bad `{kind}` fields: {e}")))
}

operations! {
    /// `ping`: answered `{pong: true}`.
    Ping "ping" PingParams => PingResult [local, reads];
    /// `session.create`: a new session, here or on the named cluster node.
    SessionCreate "session.create" SessionCreateParams => SessionCreateResult [node(node), commits]
        rest route!("post" "/sessions", "Create a session.", Some(of::<SessionCreateParams>), 201, of::<SessionInfo>);
    /// `session.get`: one session.
    SessionGet "session.get" SessionGetParams => SessionGetResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}", "One session.", None, 200, of::<SessionInfo>);
    /// `session.configure`: model, effort, vendor, mode, title or owner.
    SessionConfigure "session.configure" SessionConfigureParams => SessionConfigureResult [session(session_id), writes]
        rest route!("patch" "/sessions/{id}", "Rename, configure or (admins, `ownerId`) reassign a session.", Some(of::<SessionPatch>), 200, of::<SessionInfo>);
    /// `session.archive`: archive a session.
    SessionArchive "session.archive" SessionArchiveParams => SessionArchiveResult [session(session_id), writes]
        rest route!("delete" "/sessions/{id}", "Archive a session.", None, 200, of::<crate::queries::SessionArchiveResult>);
    /// `session.events`: stored events after a position, a page at a time.
    SessionEvents "session.events" SessionEventsParams => SessionEventsResult [session(session_id), reads, checked]
        rest route!("get" "/sessions/{id}/events", "Stored events after `after`.", None, 200, of::<SessionEventsResult>,
            &[("after", "events with seq > after", r#"{"type": "integer", "minimum": 0, "maximum": 9223372036854775807, "default": 0}"#, false),
              ("limit", "events per page", r#"{"type": "integer", "minimum": 1, "maximum": 5000, "default": 1000}"#, false)], false);
    /// `session.mcp-token`: the session's MCP token.
    SessionMcpToken "session.mcp-token" SessionMcpTokenParams => SessionMcpTokenResult [session(session_id), reads]
        rest route!("post" "/sessions/{id}/mcp-token", "The session's MCP endpoint and token.", Some(of::<EmptyBody>), 200, of::<McpToken>);
    /// `session.usage`: tokens and cost per session and delegation.
    SessionUsage "session.usage" SessionUsageParams => SessionUsageResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/usage", "Tokens and cost per session and per delegation.", None, 200, of::<crate::rest::UsageSummary>,
            &[("since", "only turns that ended at or after this time, epoch ms", r#"{"type": "integer", "minimum": 0, "maximum": 18446744073709551615, "default": 0}"#, false)], false);
    /// `sessions.watch`: the first page of sessions, then `session_upserted`.
    SessionsWatch "sessions.watch" SessionsWatchParams => SessionsListResult [connection, reads];
    /// `sessions.list`: one page of sessions.
    SessionsList "sessions.list" SessionsListParams => SessionsListResult [local, reads]
        rest route!("get" "/sessions", "Sessions the caller may see, a page at a time.", None, 200, of::<SessionsListResult>,
            &[("limit", "sessions per page", r#"{"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}"#, false),
              ("cursor", "`nextCursor` of the previous page (`MS.ID`)", r#"{"type": "string", "pattern": "^[0-9]{1,19}\\.[^\\u0000]+$"}"#, false)], false);
    /// `external.list`: the Claude Code and Codex sessions already on this machine.
    ExternalList "external.list" crate::external::ExternalListParams => crate::external::ExternalListResult [local, reads]
        rest route!("get" "/external-sessions", "The Claude Code and Codex sessions already on this machine (their CLIs' own transcripts) whose working directory is under the caller's roots, most recently active first (as external.list).", None, 200, of::<crate::external::ExternalListResult>,
            &[("vendor", "only this vendor's (`claude`, `codex`)", r#"{"type": "string"}"#, false),
              ("cwd", "only sessions in this directory or under it", r#"{"type": "string", "pattern": "^[^\u0000]*$"}"#, false)], false);
    /// `external.import`: a session that continues a CLI session found on this machine.
    ExternalImport "external.import" crate::external::ExternalImportParams => SessionInfo [local, writes]
        rest route!("post" "/external-sessions/import", "A session of the caller's that continues a Claude Code or Codex session found on this machine: its history holds the transcript's conversation and its next turn resumes the CLI's session; the caller's session that already continues it, if any (as external.import).", Some(of::<crate::external::ExternalImportParams>), 201, of::<SessionInfo>);
    /// `mcp-servers.list`: the MCP servers the caller's sessions may get.
    McpServersList "mcp-servers.list" crate::mcp_servers::McpServersListParams => crate::mcp_servers::McpServersListResult [local, reads]
        rest route!("get" "/mcp-servers", "The MCP servers the caller's sessions may get beside tandem's own tools: the config's and the caller's own; values of env and headers are never shown (as mcp-servers.list).", None, 200, of::<crate::mcp_servers::McpServersListResult>);
    /// `mcp-servers.probe`: connect to one as an MCP client.
    McpServerProbe "mcp-servers.probe" crate::mcp_servers::McpServerProbeParams => crate::mcp_servers::McpServerProbeResult [local, reads]
        rest route!("post" "/mcp-servers/{name}/probe", "Connect to a listed MCP server as a client (initialize, tools/list): reachable or not, its name and its tools (as mcp-servers.probe).", Some(of::<EmptyBody>), 200, of::<crate::mcp_servers::McpServerProbeResult>);
    /// `mcp-servers.add`: an MCP server of the caller's own.
    McpServerAdd "mcp-servers.add" crate::mcp_servers::McpServerEntry => crate::mcp_servers::McpServerInfo [local, writes]
        rest route!("post" "/mcp-servers", "Add an MCP server of the caller's own, which the caller's sessions get (as mcp-servers.add): a name no listed server has (else 409), a stdio `command` or an HTTP `url`; values of env and headers are kept 0600 and never shown.", Some(of::<crate::mcp_servers::McpServerEntry>), 201, of::<crate::mcp_servers::McpServerInfo>);
    /// `mcp-servers.remove`: remove one the caller added.
    McpServerRemove "mcp-servers.remove" crate::mcp_servers::McpServerRemoveParams => crate::mcp_servers::McpServerRemoveResult [local, writes]
        rest route!("delete" "/mcp-servers/{name}", "Remove an MCP server the caller added (one the config declares: 409); sessions started after no longer get it (as mcp-servers.remove).", None, 200, of::<crate::mcp_servers::McpServerRemoveResult>);
    /// `sessions.running`: sessions with a turn running.
    SessionsRunning "sessions.running" SessionsRunningParams => SessionsRunningResult [local, reads]
        rest route!("get" "/sessions/running", "Sessions with a turn running, ours and Claude Code's outside tandem.", None, 200, of::<SessionsRunningResult>);
    /// `fleet.get`: the vendor processes serving one session each (admins only).
    FleetGet "fleet.get" crate::fleet::FleetGetParams => crate::fleet::FleetInfo [local, reads]
        rest route!("get" "/fleet", "The vendor CLI processes that serve one session each (Claude Code, ACP agents), with their session, vendor, memory and CPU, and the turns waiting for one under --max-live-processes; admins only (as fleet.get).", None, 200, of::<crate::fleet::FleetInfo>);
    /// `user.get`: who the caller is (for showing what an admin may do).
    UserGet "user.get" UserGetParams => UserGetResult [local, reads];
    /// `vendors.list`: vendors, their CLI's version, status and models.
    VendorsList "vendors.list" VendorsListParams => VendorsListResult [local, reads]
        rest route!("get" "/vendors", "Vendors, their CLI's version, status and models.", None, 200, of::<VendorsListResult>);
    /// `chat.send`: a message, which starts a turn or is queued.
    ChatSend "chat.send" ChatSendParams => ChatSendResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/messages", "Send a message (as chat.send).", Some(of::<PostMessage>), 202, of::<MessageAccepted>);
    /// `chat.review`: line comments on the session's diff, sent as one message.
    ChatReview "chat.review" crate::review::ChatReviewParams => crate::review::ChatReviewResult [session(session_id), writes, checked]
        rest route!("post" "/sessions/{id}/review", "Send line comments on the session's diff to its agent as one message (as chat.review).", Some(of::<crate::review::ReviewBody>), 202, of::<crate::rest::TurnAccepted>);
    /// `chat.edit-send`: rewind to before an earlier message and send a new one.
    ChatEditSend "chat.edit-send" ChatEditSendParams => ChatEditSendResult [session(session_id), writes, checked]
        rest route!("post" "/sessions/{id}/edit-send", "Rewind to just before an earlier user message and send a new one in its place (as chat.edit-send).", Some(of::<crate::rest::PostEditSend>), 202, of::<crate::rest::EditSendAccepted>);
    /// `chat.abort`: interrupt the running turn.
    ChatAbort "chat.abort" ChatAbortParams => ChatAbortResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/interrupt", "Interrupt the running turn (as chat.abort).", Some(of::<EmptyBody>), 202, of::<InterruptAccepted>);
    /// `chat.stop-task`: stop a background task.
    ChatStopTask "chat.stop-task" ChatStopTaskParams => ChatStopTaskResult [session(session_id), writes, checked]
        rest route!("post" "/sessions/{id}/tasks/{taskId}/stop", "Stop a background task (as chat.stop-task).", Some(of::<EmptyBody>), 202, of::<ChatStopTaskResult>);
    /// `chat.permission-response`: answer a pending tool approval.
    ChatPermissionResponse "chat.permission-response" ChatPermissionResponseParams => ChatPermissionResponseResult [permission, writes, checked]
        rest route!("post" "/sessions/{id}/permissions/{requestId}", "Answer a pending tool approval (as chat.permission-response).", Some(of::<PermissionAnswer>), 200, of::<ChatPermissionResponseResult>);
    /// `chat.subscribe`: live events of sessions, after a replay.
    ChatSubscribe "chat.subscribe" ChatSubscribeParams => ChatSubscribeResult [connection, reads, checked];
    /// `chat.unsubscribe`: stop receiving sessions' events.
    ChatUnsubscribe "chat.unsubscribe" ChatUnsubscribeParams => ChatUnsubscribeResult [connection, reads];
    /// `chat.queue`: the messages waiting in a session's queue.
    ChatQueue "chat.queue" ChatQueueParams => ChatQueueResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/queue", "Messages waiting in the session's queue.", None, 200, of::<crate::rest::ChatQueueResult>);
    /// `chat.queue-cancel`: take a message out of the queue.
    ChatQueueCancel "chat.queue-cancel" ChatQueueCancelParams => ChatQueueChangeResult [session(session_id), writes];
    /// `chat.queue-edit`: replace a queued message's text.
    ChatQueueEdit "chat.queue-edit" ChatQueueEditParams => ChatQueueChangeResult [session(session_id), writes];
    /// `tool.call`: call a session-bound tool as that session.
    ToolCall "tool.call" ToolCallParams => ToolCallResult [session(session_id), writes];
    /// `proposal.respond`: accept or decline a Driver's delegation proposal.
    ProposalRespond "proposal.respond" ProposalRespondParams => ProposalRespondResult [session(session_id), writes];
    /// `question.answer`: a person answers a Worker's question in its Driver's place.
    QuestionAnswer "question.answer" crate::question::QuestionAnswerParams => crate::question::QuestionAnswerResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/questions/{questionId}/answer", "Answer a Worker's waiting question in its Driver's place (as question.answer).", Some(of::<crate::question::AnswerBody>), 200, of::<crate::question::QuestionAnswerResult>);
    /// `pair.create`: a new Worker paired with a Driver.
    PairCreate "pair.create" PairCreateParams => PairCreateResult [session(driver_id), writes]
        rest route!("post" "/pairs", "Pair a new Worker with a Driver (as pair.create).", Some(of::<PairCreateParams>), 201, of::<PairCreateResult>);
    /// `pair.close`: dissolve a pair.
    PairClose "pair.close" PairCloseParams => PairCloseResult [pair(pair_id), writes]
        rest route!("delete" "/pairs/{pairId}", "Close a pair (as pair.close).", None, 200, of::<PairCloseResult>);
    /// `pairs.list`: Driver/Worker pairs.
    PairsList "pairs.list" PairsListParams => PairsListResult [local, reads]
        rest route!("get" "/pairs", "Driver/Worker pairs.", None, 200, of::<PairsListResult>);
    /// `session.handoff`: continue the conversation in a new session.
    SessionHandoff "session.handoff" SessionHandoffParams => SessionHandoffResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/handoff", "Continue the conversation in a new session (as session.handoff).", Some(of::<HandoffBody>), 201, of::<SessionHandoffResult>);
    /// `session.fork`: a new session with the conversation up to an earlier turn.
    SessionFork "session.fork" SessionForkParams => SessionForkResult [session(session_id), writes, checked]
        rest route!("post" "/sessions/{id}/fork", "Fork the session at one of its user messages: a new session whose conversation ends with that turn (as session.fork).", Some(of::<crate::rest_control::ForkBody>), 201, of::<SessionForkResult>);
    /// `session.schedule`: send a message later.
    SessionSchedule "session.schedule" SessionScheduleParams => SessionScheduleResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/schedules", "Schedule a message (as session.schedule).", Some(of::<ScheduleBody>), 201, of::<SessionScheduleResult>);
    /// `session.schedule-cancel`: cancel a pending schedule.
    SessionScheduleCancel "session.schedule-cancel" SessionScheduleCancelParams => SessionScheduleCancelResult [session(session_id), writes]
        rest route!("delete" "/sessions/{id}/schedules/{scheduleId}", "Cancel a scheduled message (as session.schedule-cancel).", None, 200, of::<SessionScheduleCancelResult>);
    /// `session.schedules`: a session's scheduled messages.
    SessionSchedules "session.schedules" SessionSchedulesParams => SessionSchedulesResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/schedules", "Scheduled messages.", None, 200, of::<SessionSchedulesResult>);
    /// `session.commands`: the slash commands the session's agent offers.
    SessionCommands "session.commands" crate::session::SessionCommandsParams => crate::session::SessionCommandsResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/commands", "The slash commands the session's agent offers, as its vendor last listed them (as session.commands).", None, 200, of::<crate::session::SessionCommandsResult>);
    /// `loop.start`: work toward a goal turn after turn until a check passes.
    LoopStart "loop.start" crate::loops::LoopStartParams => crate::loops::LoopStartResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/loop", "Start a loop: turns toward a goal, each checked by a command or a judge, until the check passes or maxIterations (as loop.start).", Some(of::<crate::loops::LoopBody>), 201, of::<crate::loops::LoopStartResult>);
    /// `loop.stop`: end a session's loop.
    LoopStop "loop.stop" crate::loops::LoopStopParams => crate::loops::LoopStopResult [session(session_id), writes]
        rest route!("delete" "/sessions/{id}/loop", "End the session's loop; a turn under way goes on (as loop.stop).", None, 200, of::<crate::loops::LoopStopResult>);
    /// `terminal.open`: a shell in a pseudo-terminal in the session's working directory.
    TerminalOpen "terminal.open" crate::terminals::TerminalOpenParams => crate::terminals::TerminalInfo [session(session_id), writes, checked]
        rest route!("post" "/sessions/{id}/terminals", "Open a terminal: the user's shell in a pseudo-terminal in the session's working directory; its bytes travel over /ws/terminals/{terminalId} (as terminal.open).", Some(of::<crate::terminals::TerminalBody>), 201, of::<crate::terminals::TerminalInfo>);
    /// `terminal.list`: a session's terminals.
    TerminalList "terminal.list" crate::terminals::TerminalListParams => crate::terminals::TerminalListResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/terminals", "The session's open terminals, oldest first (as terminal.list).", None, 200, of::<crate::terminals::TerminalListResult>);
    /// `terminal.close`: end a terminal and every process it started.
    TerminalClose "terminal.close" crate::terminals::TerminalCloseParams => crate::terminals::TerminalCloseResult [session(session_id), writes]
        rest route!("delete" "/sessions/{id}/terminals/{terminalId}", "End a terminal and every process it started (as terminal.close).", None, 200, of::<crate::terminals::TerminalCloseResult>);
    /// `session.changes`: what the working directory changed.
    SessionChanges "session.changes" SessionChangesParams => SessionChangesResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/changes", "What the session's working directory changed (as its latest git_state).", None, 200, of::<crate::workspace::GitState>);
    /// `session.checkpoints`: the files as each turn left them, oldest first.
    SessionCheckpoints "session.checkpoints" SessionCheckpointsParams => SessionCheckpointsResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/checkpoints", "The session's checkpoints: the files as each turn left them (as session.checkpoints).", None, 200, of::<SessionCheckpointsResult>);
    /// `session.restore`: put the files back to a checkpoint.
    SessionRestore "session.restore" SessionRestoreParams => SessionRestoreResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/restore", "Put the session's files back to a checkpoint (as session.restore).", Some(of::<crate::rest_control::RestoreBody>), 200, of::<SessionRestoreResult>);
    /// `session.diff`: the unified diff of the changes, capped.
    SessionDiff "session.diff" SessionDiffParams => SessionDiffResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/changes/diff", "Unified diff against the base (worktree) or HEAD (shared), capped.", None, 200, of::<crate::workspace::FileDiff>,
            &[("path", "one changed file; absent: all", TEXT, false)], false);
    /// `session.merge`: merge the worktree's branch into its base.
    SessionMerge "session.merge" SessionMergeParams => SessionMergeResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/merge", "Merge the worktree's branch into its base (as session.merge).", Some(of::<crate::workspace::MergeBody>), 200, of::<crate::workspace::SessionMergeResult>);
    /// `session.push`: push the worktree's branch to a remote of its base repository.
    SessionPush "session.push" crate::workspace::SessionPushParams => crate::workspace::SessionPushResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/push", "Push the worktree's branch to a remote of its base repository (as session.push).", Some(of::<crate::workspace::PushBody>), 200, of::<crate::workspace::SessionPushResult>);
    /// `session.check`: run the repository's checks in the working directory.
    SessionCheck "session.check" crate::workspace::SessionCheckParams => crate::workspace::SessionCheckResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/check", "Run the checks of the repository's .tandem/worktree.toml in the session's working directory (as session.check).", Some(of::<EmptyBody>), 200, of::<crate::workspace::SessionCheckResult>);
    /// `client.seen`: a client of the owner shows the session up to an event.
    ClientSeen "client.seen" crate::session::ClientSeenParams => crate::session::ClientSeenResult [session(session_id), writes, checked]
        rest route!("post" "/sessions/{id}/seen", "A client of the owner shows the session up to `seq`: a turn that ended by then no longer asks for attention (as client.seen).", Some(of::<crate::session::SeenBody>), 200, of::<crate::session::ClientSeenResult>);
    /// `client.visible`: the session this connection shows in a visible tab.
    ClientVisible "client.visible" crate::push::ClientVisibleParams => crate::push::ClientVisibleResult [connection, reads, checked];
    /// `push.key`: the server's Web Push (VAPID) public key.
    PushKey "push.key" crate::push::PushKeyParams => crate::push::PushKeyResult [local, reads]
        rest route!("get" "/push/key", "The server's Web Push (VAPID) public key, for pushManager.subscribe (as push.key).", None, 200, of::<crate::push::PushKeyResult>);
    /// `push.subscribe`: notify a device of the caller by Web Push.
    PushSubscribe "push.subscribe" crate::push::PushSubscribeParams => crate::push::PushSubscribeResult [local, writes, checked]
        rest route!("post" "/push/subscriptions", "Register a device of the caller for Web Push: its endpoint and keys as PushSubscription.toJSON() gives them (as push.subscribe).", Some(of::<crate::push::PushSubscribeParams>), 201, of::<crate::push::PushSubscribeResult>);
    /// `push.subscriptions`: the caller's devices.
    PushSubscriptions "push.subscriptions" crate::push::PushSubscriptionsParams => crate::push::PushSubscriptionsResult [local, reads]
        rest route!("get" "/push/subscriptions", "The caller's Web Push devices, oldest first (as push.subscriptions).", None, 200, of::<crate::push::PushSubscriptionsResult>);
    /// `push.unsubscribe`: stop notifying a device.
    PushUnsubscribe "push.unsubscribe" crate::push::PushUnsubscribeParams => crate::push::PushUnsubscribeResult [local, writes]
        rest route!("delete" "/push/subscriptions/{id}", "Remove a Web Push device of the caller (as push.unsubscribe).", None, 200, of::<crate::push::PushUnsubscribeResult>);
    /// `device.pair-code`: a one-time code (and its link and QR code) that pairs a phone.
    DevicePairCode "device.pair-code" crate::devices::DevicePairCodeParams => crate::devices::DevicePairCodeResult [local, writes]
        rest route!("post" "/devices/pair-code", "A one-time pairing code for the caller, valid 5 minutes, with the link a phone opens and its QR code (as device.pair-code).", Some(of::<EmptyBody>), 201, of::<crate::devices::DevicePairCodeResult>);
    /// `devices.list`: the caller's paired devices.
    DevicesList "devices.list" crate::devices::DevicesListParams => crate::devices::DevicesListResult [local, reads]
        rest route!("get" "/devices", "The caller's paired devices, oldest first (as devices.list).", None, 200, of::<crate::devices::DevicesListResult>);
    /// `device.revoke`: a paired device's token stops working.
    DeviceRevoke "device.revoke" crate::devices::DeviceRevokeParams => crate::devices::DeviceRevokeResult [local, writes]
        rest route!("delete" "/devices/{id}", "Revoke a paired device of the caller: its token stops working within a second (as device.revoke).", None, 200, of::<crate::devices::DeviceRevokeResult>);
    /// `session.review-by`: a review of the session's diff by another vendor's agent.
    SessionReviewBy "session.review-by" crate::review::SessionReviewByParams => crate::review::SessionReviewByResult [session(session_id), writes, checked]
        rest route!("post" "/sessions/{id}/review-by", "Start a read-only review of the session's diff by an agent of another vendor; its answer comes back to the session as a review (as session.review-by).", Some(of::<crate::review::ReviewByBody>), 200, of::<crate::review::SessionReviewByResult>);
    /// `session.run`: start the repository's `run` script in the working directory.
    SessionRun "session.run" crate::scripts::SessionRunParams => crate::scripts::SessionRunResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/run", "Start the run script of the repository's .tandem/worktree.toml (or conductor.json) in the session's working directory (as session.run).", Some(of::<EmptyBody>), 200, of::<crate::scripts::SessionRunResult>);
    /// `session.run-stop`: stop the run script.
    SessionRunStop "session.run-stop" crate::scripts::SessionRunStopParams => crate::scripts::SessionRunResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/run/stop", "Stop the session's run script and what it started (as session.run-stop).", Some(of::<EmptyBody>), 200, of::<crate::scripts::SessionRunResult>);
    /// `session.run-log`: the run script's output.
    SessionRunLog "session.run-log" crate::scripts::SessionRunLogParams => crate::scripts::SessionRunLogResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/run/log", "The output of the session's latest run script, its last 1 MiB (as session.run-log).", None, 200, of::<crate::scripts::SessionRunLogResult>);
    /// `session.rebase`: move the worktree's branch onto its base's head.
    SessionRebase "session.rebase" crate::workspace::SessionRebaseParams => crate::workspace::SessionRebaseResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/rebase", "Rebase the worktree's branch onto its base branch's head (as session.rebase).", Some(of::<EmptyBody>), 200, of::<crate::workspace::SessionRebaseResult>);
    /// `session.discard`: remove the worktree and its branch.
    SessionDiscard "session.discard" SessionDiscardParams => SessionDiscardResult [session(session_id), writes]
        rest route!("post" "/sessions/{id}/discard", "Remove the worktree and its branch (as session.discard).", Some(of::<EmptyBody>), 200, of::<crate::workspace::SessionDiscardResult>);
    /// `session.files`: a directory of the working directory.
    SessionFiles "session.files" SessionFilesParams => SessionFilesResult [session(session_id), reads]
        rest route!("get" "/sessions/{id}/files", "List a directory of the working directory.", None, 200, of::<crate::workspace::DirListing>,
            &[("path", DIR_PATH, TEXT, false)], false);
    /// `session.file-read`: a text file with its ETag.
    SessionFileRead "session.file-read" SessionFileReadParams => SessionFileReadResult [session(session_id), reads, checked]
        rest route!("get" "/sessions/{id}/files/content", "A text file (at most 2 MiB) with its ETag.", None, 200, of::<crate::workspace::FileContent>,
            &[("path", FILE_PATH, FILE, true)], false);
    /// `session.file-write`: save a text file, if it is still as read.
    SessionFileWrite "session.file-write" SessionFileWriteParams => SessionFileWriteResult [session(session_id), writes, checked]
        rest Route {
            headers: &[("If-Match", "the `ETag` of the file as last read (`*`: whatever it holds now); required to replace a file that exists, and must then name its current content, else 412 `PRECONDITION_FAILED`", r#"{"type": "string"}"#, false)],
            ..route!("put" "/sessions/{id}/files/content", "Save a text file; If-Match: its ETag.", Some(of::<crate::workspace::FileSave>), 200, of::<crate::workspace::FileSaved>,
                &[("path", SAVE_PATH, FILE, true)], false)
        };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are unique and every request that names a session by `sessionId`
    /// requires it in its frame.
    #[test]
    fn the_table_is_consistent() {
        let mut names: Vec<&str> = OPERATIONS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPERATIONS.len(), "a wire name is used twice");
        let needs: Vec<&str> = OPERATIONS
            .iter()
            .filter(|o| o.needs_session)
            .map(|o| o.name)
            .collect();
        assert!(needs.contains(&"chat.send") && needs.contains(&"session.discard"));
        assert!(!needs.contains(&"pair.create") && !needs.contains(&"chat.permission-response"));
    }

    #[test]
    fn frames_round_trip() {
        let request = ClientRequest::ChatAbort(ChatAbortParams {
            session_id: "s".into(),
        });
        let frame = request.to_frame();
        assert_eq!(frame["type"], "chat.abort");
        let Value::Object(mut fields) = frame else {
            panic!("not an object")
        };
        fields.remove("type");
        assert_eq!(
            ClientRequest::decode("chat.abort", fields),
            Some(Ok(request))
        );
        assert_eq!(ClientRequest::decode("warp.drive", Map::new()), None);
    }
}
