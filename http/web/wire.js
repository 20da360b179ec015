// Generated from protocol/schemas/requests.json by tests/web (`UPDATE_SNAPSHOTS=1
// cargo nextest run -p tandem-tests --test web`). Do not edit: change the Rust
// types in protocol/ and regenerate. JSDoc types only; the module exports nothing
// at run time.

/**
 * An ACP agent's `agentInfo`.
 * @typedef {object} AgentIdentity
 * @property {string} name Its machine name (`codex-acp`).
 * @property {string | null} [title] Its name for people (`Codex`).
 * @property {string | null} [version] Its version.
 */

/**
 * Who answered a Worker's question.
 * @typedef {('driver' | 'user' | 'timeout' | 'pairClosed')} Answerer
 */

/**
 * What a session asks of its owner, kept by the server so every client and node shows the same.
 * @typedef {('none' | 'needs_input' | 'failed' | 'done_unseen')} Attention
 */

/**
 * One piece of work still running after its turn ended.
 * @typedef {object} BackgroundTask
 * @property {string} description A short human description (the command, the sub-agent's goal).
 * @property {number | null} [startedAt] When it started, epoch milliseconds, if known.
 * @property {string} taskId The vendor's id for the task; `chat.stop-task` takes it.
 * @property {TaskType} taskType What kind of work it is.
 */

/**
 * A Worker's changes in short, for the Driver: on the `delegation` event that ends a delegation of a worktree Worker, and in the pushed-back result's text.
 * @typedef {object} ChangeSummary
 * @property {number} added Lines added.
 * @property {string} branch The Worker's branch.
 * @property {Array<CheckResult> | null} [checks] The checks run as the delegation ended (`checks_on_delegation` in the repository's `.tandem/worktree.toml`), if any.
 * @property {number} files Files changed against its base.
 * @property {number} removed Lines removed.
 * @property {(ReviewVerdict | null)} [review] The review by another vendor run as the delegation ended (`review_on_delegation`), if any.
 */

/**
 * One changed file of a `git_state`.
 * @typedef {object} ChangedFile
 * @property {number} added Lines added (0 for a binary file).
 * @property {boolean} [binary] True for a binary file: its diff is reported, never dumped.
 * @property {string} path Path relative to the working directory's top, `/`-separated.
 * @property {number} removed Lines removed (0 for a binary file).
 * @property {FileStatus} status How it changed.
 */

/**
 * Fields of `chat.abort`.
 * @typedef {object} ChatAbortParams
 * @property {string} sessionId The session whose turn to interrupt.
 */

/**
 * `chat.abort` reply.
 * @typedef {object} ChatAbortResult
 * @property {string} sessionId The session whose turn is being stopped.
 */

/**
 * Fields of `chat.edit-send`: rewind the conversation to just before an earlier user message and run `content` in its place.
 * @typedef {object} ChatEditSendParams
 * @property {number} anchorSeq The `seq` of the `user_message` to replace: one of an ended turn of this session that no earlier rewind superseded.
 * @property {MessageContent} content The new message: a string or content blocks, as `chat.send`'s `content`, and run the same way.
 * @property {(TurnOptions | null)} [options] Model/effort/permission changes applied before the turn (as on `chat.send`).
 * @property {boolean} [restoreFiles] Also put the files back as they were when the anchor's turn started (the newest `checkpoint` or `restored` before it), as `session.restore` does, before the conversation is rewound. `NO_SUCH_CHECKPOINT` when none was recorded.
 * @property {string} sessionId Target session.
 */

/**
 * `chat.edit-send` reply: the conversation was rewound and the new turn started.
 * @typedef {object} ChatEditSendResult
 * @property {(SessionRestoreResult | null)} [restored] With `restoreFiles`: the restore made first (as `session.restore` answers).
 * @property {string} sessionId The session.
 * @property {SupersededRange} superseded The branch the rewind superseded (as its `history_rewound` event says).
 * @property {string} turnId The turn that runs the new message.
 */

/**
 * Fields of `chat.permission-response`: a person's answer to a `permission_request`.
 * @typedef {object} ChatPermissionResponseParams
 * @property {boolean} allow Allow the tool call once (true) or deny it.
 * @property {string | null} [message] Why it was denied; passed on to the agent.
 * @property {(PermissionMode | null)} [permissionMode] With `allow`: the session's permission mode from now on (a plan approved with "accept edits" answers `acceptEdits`).
 * @property {(RememberScope | null)} [remember] With `allow`: also allow this tool without asking for the rest of the session (the vendor's "always allow").
 * @property {string} [requestId] The permission request answered. On the wire it is the frame's `requestId` (which the reply echoes as usual), so the parser fills it in.
 * @property {string | null} [sessionId] The session that asked; optional (request ids are unique server-wide), but it saves a lookup.
 * @property {any} [updatedInput] Input to run the tool with instead of the requested one.
 */

/**
 * `chat.permission-response` reply.
 * @typedef {object} ChatPermissionResponseResult
 * @property {string} permissionId The permission request answered.
 */

/**
 * Fields of `chat.queue-cancel`: take a message out of the session's queue.
 * @typedef {object} ChatQueueCancelParams
 * @property {string} queueId The queued message (`queueId` of `chat_subscribed.queued` or `GET .../queue`).
 * @property {string} sessionId The session.
 */

/**
 * `chat.queue-cancel` and `chat.queue-edit` reply: the queue as it is now.
 * @typedef {object} ChatQueueChangeResult
 * @property {string} queueId The message cancelled or edited.
 * @property {Array<QueuedEntry>} queued What the queue holds after the change, oldest first.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `chat.queue-edit`: replace a queued message's text; it keeps its place.
 * @typedef {object} ChatQueueEditParams
 * @property {string} content Its new text; not blank.
 * @property {string} queueId The queued message.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `chat.queue`.
 * @typedef {object} ChatQueueParams
 * @property {string} sessionId The session.
 */

/**
 * `GET /api/v1/sessions/{id}/queue`.
 * @typedef {object} ChatQueueResult
 * @property {Array<QueuedEntry>} queued Messages waiting to be sent, oldest first.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `chat.review`.
 * @typedef {object} ChatReviewParams
 * @property {Array<ReviewComment>} comments The comments, 1 to 50.
 * @property {string} sessionId The session whose diff is reviewed; its agent gets the review as a turn.
 * @property {string | null} [summary] A general remark, put before the comments.
 * @property {(ReviewTarget | null)} [to] `session` (default) or, for a Worker's diff, `driver`.
 */

/**
 * `chat.review` reply: the turn that carries the review.
 * @typedef {object} ChatReviewResult
 * @property {string} sessionId The session whose turn it is: the reviewed one, or its Driver.
 * @property {string} turnId The turn whose user message is the review.
 */

/**
 * Fields of `chat.send`.
 * @typedef {object} ChatSendParams
 * @property {MessageContent} content The user's message: a string, or a list of content blocks (text, images, files).
 * @property {(TurnOptions | null)} [options] Model/effort/permission changes applied before the turn.
 * @property {boolean} [queue] Queue the message instead of failing when a turn runs.
 * @property {string} sessionId Target session.
 */

/**
 * `chat.send` reply: the turn started, or the message was queued.
 * @typedef {({sessionId: string, turnId: string} | {position: number, queued: boolean, sessionId: string})} ChatSendResult
 */

/**
 * Fields of `chat.stop-task`.
 * @typedef {object} ChatStopTaskParams
 * @property {string} sessionId The session that owns the task.
 * @property {string | null} [taskId] The background task to stop.
 */

/**
 * `chat.stop-task` reply.
 * @typedef {object} ChatStopTaskResult
 * @property {string} sessionId The session.
 * @property {string} taskId The task being stopped.
 */

/**
 * Fields of `chat.subscribe`.
 * @typedef {object} ChatSubscribeParams
 * @property {Array<SubscribeEntry>} sessions Sessions to subscribe to.
 */

/**
 * `chat.subscribe` reply (only when a `requestId` was given).
 * @typedef {object} ChatSubscribeResult
 * @property {Array<string>} subscribed The sessions now subscribed; refused ones got a `protocol_error` each.
 */

/**
 * Fields of `chat.unsubscribe`.
 * @typedef {object} ChatUnsubscribeParams
 * @property {Array<string>} sessionIds Sessions to stop receiving.
 */

/**
 * `chat.unsubscribe` reply (only when a `requestId` was given): no fields.
 * @typedef {Record<string, any>} ChatUnsubscribeResult
 */

/**
 * One check's outcome, as its `check` event says.
 * @typedef {object} CheckResult
 * @property {number} durationMs How long it ran.
 * @property {number | null} [exitCode] Its exit code (absent when killed or not started).
 * @property {string} logTail The end of its output (stdout and stderr as they interleaved), at most 8 KiB.
 * @property {string} name The check's name in `.tandem/worktree.toml`.
 * @property {CheckStatus} status How it ended.
 */

/**
 * How a check ended.
 * @typedef {('passed' | 'failed' | 'timedOut')} CheckStatus
 */

/**
 * One turn's checkpoint, as its `checkpoint` event recorded it.
 * @typedef {object} CheckpointInfo
 * @property {string} commit The checkpoint commit (`refs/tandem/checkpoints/<sessionId>/<turnId>`).
 * @property {number} createdAt When it was recorded (ms since the epoch).
 * @property {Array<string>} files Paths that differ from the previous checkpoint, at most 500.
 * @property {number} [filesOmitted] How many more paths differ than `files` lists.
 * @property {number} seq The `seq` of its `checkpoint` event.
 * @property {string} turnId The turn whose end it records.
 */

/**
 * Fields of `client.seen`: a client of the owner shows the session up to `seq`.
 * @typedef {object} ClientSeenParams
 * @property {number} seq The newest event the client shows (a larger one counts as the session's last).
 * @property {string} sessionId The session.
 */

/**
 * `client.seen` reply: the session's attention now.
 * @typedef {object} ClientSeenResult
 * @property {Attention} attention What it asks of its owner now.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `client.visible`: the sessions this connection's page shows in a visible tab (none when hidden). Their owner's devices are not notified of them meanwhile.
 * @typedef {object} ClientVisibleParams
 * @property {Array<string>} [sessionIds] The sessions shown; each replaces what the connection said before.
 */

/**
 * `client.visible` reply.
 * @typedef {object} ClientVisibleResult
 * @property {Array<string>} sessionIds The sessions now counted as shown by this connection.
 */

/**
 * One block of a message's content, keyed by `type`.
 * @typedef {({text: string, type: 'text'} | {data?: string, mimeType?: string, type: 'image', uploadId?: string} | {type: 'file', uploadId: string})} ContentBlock
 */

/**
 * How full the model's context window is.
 * @typedef {object} ContextUsage
 * @property {number} size The window's size, tokens.
 * @property {number} used Tokens in use.
 */

/**
 * An amount of money.
 * @typedef {object} Cost
 * @property {number} amount The amount.
 * @property {string} currency ISO 4217 currency code (`USD`).
 */

/**
 * Who answered a permission request (on `permission_resolved`; left out for a request withdrawn because its turn ended or the vendor settled it).
 * @typedef {('user' | 'driver' | 'bypass')} Decider
 */

/**
 * A delegation in flight.
 * @typedef {object} DelegationInfo
 * @property {string} delegationId The delegation's id.
 * @property {boolean} detached True when nobody waits for the result: it will be pushed back to the Driver.
 * @property {string} from The delegating (Driver) session.
 * @property {string} message The task.
 * @property {number} startedAt When it started, epoch ms.
 * @property {string} to The Worker session.
 */

/**
 * What one delegated Worker turn used.
 * @typedef {object} DelegationUsage
 * @property {string} driverId The Driver that delegated it.
 * @property {number} startedAt When the turn started, epoch ms.
 * @property {string} turnId The Worker's turn.
 * @property {UsageTotals} usage Its usage (`turns` is 1 when the vendor reported any, else 0).
 * @property {string} workerId The Worker session that ran it.
 */

/**
 * A paired device, as listed (never its token).
 * @typedef {object} DeviceInfo
 * @property {number} createdAt When it was paired, epoch milliseconds.
 * @property {string} id Its id, for `device.revoke`.
 * @property {string | null} [label] What it was called when paired.
 */

/**
 * Fields of `device.pair-code` (none: the code is for the caller).
 * @typedef {Record<string, any>} DevicePairCodeParams
 */

/**
 * `device.pair-code` reply.
 * @typedef {object} DevicePairCodeResult
 * @property {string} code The one-time code (used once, for 5 minutes).
 * @property {number} expiresAt When the code stops working, epoch milliseconds.
 * @property {QrModules} qr `url` as a QR code.
 * @property {boolean} reachable False when the server listens on loopback only: another device cannot reach the link.
 * @property {string} url The link a phone opens: the page, with the code after `#/pair/`.
 */

/**
 * Fields of `device.revoke`.
 * @typedef {object} DeviceRevokeParams
 * @property {string} deviceId The device's id.
 */

/**
 * `device.revoke` reply.
 * @typedef {object} DeviceRevokeResult
 * @property {string} deviceId The device's id.
 * @property {boolean} revoked Always true (a device the caller does not have is `NOT_FOUND`).
 */

/**
 * Fields of `devices.list` (none).
 * @typedef {Record<string, any>} DevicesListParams
 */

/**
 * `devices.list` reply: the caller's devices, oldest first.
 * @typedef {object} DevicesListResult
 * @property {Array<DeviceInfo>} devices The devices.
 */

/**
 * One entry of `GET /sessions/{id}/files`.
 * @typedef {object} DirEntry
 * @property {EntryKind} kind What it is.
 * @property {number} mtime Last modification, epoch ms.
 * @property {string} name The entry's name.
 * @property {number} size Size in bytes (of the link itself for a symlink).
 */

/**
 * `GET /sessions/{id}/files?path=`: one directory, `.git` left out.
 * @typedef {object} DirListing
 * @property {Array<DirEntry>} entries Its entries, directories first, then by name.
 * @property {string} path The directory, relative (empty: the working directory).
 */

/**
 * What a directory entry is.
 * @typedef {('file' | 'dir' | 'symlink' | 'other')} EntryKind
 */

/**
 * The body of every REST error: `{"error": {"code", "message"}}`.
 * @typedef {object} ErrorBody
 * @property {ErrorDetail} error The error itself.
 */

/**
 * A machine-readable error code. Clients branch on these; the message is for humans.
 * @typedef {('INVALID_JSON' | 'UNKNOWN_MESSAGE_TYPE' | 'SESSION_ID_REQUIRED' | 'SESSION_NOT_FOUND' | 'RUN_IN_PROGRESS' | 'NO_ACTIVE_RUN' | 'TASK_ID_REQUIRED' | 'NO_SUCH_TASK' | 'NO_SUCH_PERMISSION' | 'ACCESS_DENIED' | 'INVALID_ARGUMENT' | 'VENDOR_NOT_INSTALLED' | 'FRAME_TOO_LARGE' | 'RATE_LIMITED' | 'UNAUTHORIZED' | 'NOT_FOUND' | 'INTERNAL' | 'ORIGIN_NOT_ALLOWED' | 'HOST_NOT_ALLOWED' | 'UNSUPPORTED_MEDIA_TYPE' | 'METHOD_NOT_ALLOWED' | 'LIMIT_EXCEEDED' | 'CONFLICT' | 'NOT_PAIRED' | 'NO_SUCH_PAIR' | 'NO_SUCH_PROPOSAL' | 'NO_SUCH_QUESTION' | 'NO_SUCH_SCHEDULE' | 'NO_SUCH_QUEUED_MESSAGE' | 'UNKNOWN_TOOL' | 'TOOL_NOT_AVAILABLE' | 'NODE_UNAVAILABLE' | 'REWIND_NOT_SUPPORTED' | 'INVALID_ANCHOR' | 'DELEGATION_IN_FLIGHT' | 'INVALID_ATTACHMENT' | 'NO_SUCH_UPLOAD' | 'ATTACHMENT_TOO_LARGE' | 'ATTACHMENT_NOT_SUPPORTED' | 'NOT_A_GIT_REPOSITORY' | 'NOT_A_WORKTREE' | 'SESSION_BUSY' | 'NO_SUCH_CHECKPOINT' | 'BASE_DIRTY' | 'MERGE_CONFLICT' | 'CHECKS_FAILED' | 'PUSH_REFUSED' | 'PATH_OUTSIDE_WORKSPACE' | 'NO_SUCH_FILE' | 'BINARY_FILE' | 'FILE_TOO_LARGE' | 'PRECONDITION_FAILED' | 'REQUEST_TIMEOUT')} ErrorCode
 */

/**
 * Code and human-readable message of an error.
 * @typedef {object} ErrorDetail
 * @property {ErrorCode} code Machine-readable code.
 * @property {string} message What went wrong, for a person.
 * @property {Array<string> | null} [paths] The files the error is about (`BASE_DIRTY`, `MERGE_CONFLICT`); absent otherwise.
 */

/**
 * One history event as it goes over the wire: `{kind, sessionId, seq, ts, turnId?, ...}`. `turn_started` and `turn_completed` carry their turn's id in the envelope's `turnId` (the protocol's `turn_started {turnId}`), so the body never repeats it.
 * @typedef {({seq: number, sessionId: string, ts: number, turnId?: string | null} & ({content?: Array<HistoryBlock>, delegatedBy?: string | null, internal?: boolean, kind: 'user_message', text: string} | {kind: 'text_delta', text: string} | {kind: 'assistant_message', text: string} | {kind: 'thinking', text: string} | {callId: string, changes?: Array<FileChange>, input: any, kind: 'tool_call', name: string} | {callId: string, isError: boolean, kind: 'tool_result', output: any} | {kind: 'turn_started'} | {error?: string | null, kind: 'turn_completed', resetsAt?: number | null, status: TurnStatus, usage?: (TurnUsage | null)} | {kind: 'error', message: string} | {kind: 'info', text: string} | {kind: 'background_tasks', tasks: Array<BackgroundTask>} | {changes?: Array<FileChange>, choices?: Array<PermissionChoice>, input: any, kind: 'permission_request', permissionKind?: PermissionKind, requestId: string, toolName: string} | {kind: 'permission_remembered', rule: PermissionRule} | {decidedBy?: (Decider | null), kind: 'permission_resolved', requestId: string} | {entries: Array<PlanEntry>, kind: 'plan'} | {active: boolean, changes?: (ChangeSummary | null), from: string, kind: 'delegation', pairId: string, to: string} | {choices?: Array<string>, from: string, kind: 'question', pairId: string, question: string, questionId: string, timeoutSeconds: number, to: string} | {answer: string, by: Answerer, kind: 'question_answered', pairId: string, questionId: string} | {ahead: number, base?: string | null, behind: number, branch?: string | null, dirty: boolean, files: Array<ChangedFile>, kind: 'git_state'} | {commit: string, files: Array<string>, filesOmitted?: number, kind: 'checkpoint'} | {commit: string, files: Array<string>, filesOmitted?: number, kind: 'restored', undo: string} | {branch: string, commit: string, kind: 'pushed', remote: string} | {commands: Array<VendorCommand>, kind: 'commands'} | {check: LoopCheck, goal: string, kind: 'loop_started', loopId: string, maxIterations: number} | {check: LoopCheckOutcome, kind: 'loop_iteration', loopId: string, n: number} | {iterations: number, kind: 'loop_ended', loopId: string, reason: LoopEndReason} | {at: number, kind: 'schedule_occurrence', number: number, outcome: OccurrenceOutcome, scheduleId: string} | {exitCode?: number | null, kind: 'script', logTail: string, name: ScriptName, status: ScriptStatus} | {durationMs: number, exitCode?: number | null, kind: 'check', logTail: string, name: string, status: CheckStatus} | {base: string, branch: string, head: string, kind: 'rebased', onto: string} | {base: string, branch: string, commit: string, kind: 'merged', strategy: MergeStrategy} | {branch: string, kind: 'discarded'} | {kind: 'pair_created', pair: PairInfo} | {kind: 'pair_closed', pairId: string} | {kind: 'handoff_created', targetSessionId: string, targetTitle: string, targetVendor: string} | {kind: 'handoff_context', request: string, sourceSessionId: string, sourceTitle: string, sourceVendor: string} | {comments: Array<ReviewComment>, failed?: string | null, kind: 'review', reviewer?: (Reviewer | null), summary?: string | null} | {kind: 'overlap', paths: Array<string>, withSessionId: string} | {kind: 'imported', messages: number, shown: number, skippedLines: number, vendor: string, vendorSessionId: string} | {anchorSeq: number, conversation: ForkConversation, kind: 'forked', sourceSessionId: string, sourceTitle: string, turns: number} | {autoApproved?: boolean, kind: 'worker_proposal', plan: string, proposalId: string, recommended: WorkerChoice, status: ProposalStatus, summary: string} | {autoApproved?: boolean, error?: string | null, kind: 'worker_proposal_update', pairId?: string | null, proposalId: string, selected?: (WorkerChoice | null), status: ProposalStatus, workerId?: string | null} | {anchorSeq: number, kind: 'history_rewound', supersededFrom: number, supersededTo: number, turns: number} | {effort: string, kind: 'config_changed', model: string, permissionMode: PermissionMode, vendor: string}))} Event
 */

/**
 * Fields of `external.import` (the body of `POST /external-sessions/import`).
 * @typedef {object} ExternalImportParams
 * @property {string} vendor The configured vendor whose CLI wrote it (`claude`, `codex`).
 * @property {string} vendorSessionId The CLI's session id, as `external.list` gives it.
 */

/**
 * Fields of `external.list` (the query of `GET /external-sessions`).
 * @typedef {object} ExternalListParams
 * @property {string | null} [cwd] Only sessions whose working directory is this one or lies under it.
 * @property {string | null} [vendor] Only sessions of this vendor (`claude`, `codex`).
 */

/**
 * `external.list` reply: most recently active first.
 * @typedef {object} ExternalListResult
 * @property {Array<ExternalSession>} sessions The sessions.
 */

/**
 * One CLI session found on the machine.
 * @typedef {object} ExternalSession
 * @property {string} cwd Where the CLI worked.
 * @property {number} lastActivity When it was last written to, epoch ms.
 * @property {number} messages Messages of the conversation: prompts, answers and tool calls.
 * @property {string | null} [sessionId] The caller's tandem session that continues it, if there is one.
 * @property {number} sizeBytes The transcript's size, bytes.
 * @property {number} skippedLines Lines of the transcript that could not be read (skipped).
 * @property {string} title Its title, when the CLI gave it one; else its first prompt.
 * @property {string} vendor The vendor whose CLI wrote it (`claude`, `codex`).
 * @property {string} vendorSessionId The CLI's own session id (what it resumes by).
 */

/**
 * A file a tool call changes (or asks to), as every vendor's edit is shown.
 * @typedef {object} FileChange
 * @property {string} diff The change as the lines of a unified diff: `@@` hunk headers where the vendor gave them, then lines starting with `' '` (kept), `'-'` or `'+'`; a new file's lines all `+`. Empty when the vendor did not say.
 * @property {FileChangeKind} kind What happens to it.
 * @property {string | null} [movePath] With `rename`: its new path.
 * @property {string} path The file, as the agent named it.
 */

/**
 * What a change does to its file.
 * @typedef {('add' | 'modify' | 'delete' | 'rename')} FileChangeKind
 */

/**
 * `GET /sessions/{id}/files/content?path=`: a UTF-8 text file of at most 2 MiB. The `ETag` header carries `etag` too.
 * @typedef {object} FileContent
 * @property {string} content Its text.
 * @property {string} etag A strong entity tag of the content (quoted, as in the header); give it as `If-Match` to save.
 * @property {number} mtime Last modification, epoch ms.
 * @property {string} path The file, relative.
 * @property {number} size Size in bytes.
 */

/**
 * `GET /sessions/{id}/changes/diff`: a unified diff.
 * @typedef {object} FileDiff
 * @property {string} against What it is against: the base branch, or `HEAD` for a shared session.
 * @property {Array<string>} binaryFiles Paths of the binary files in the diff, whose content is not shown.
 * @property {string} diff Unified diff text (git's `diff --git` format; a binary file appears as one "Binary files ... differ" line). Cut at the cap, then ends with [`FileDiff::TRUNCATION_MARKER`].
 * @property {string | null} [path] The path asked for, if any.
 * @property {boolean} truncated True when the diff was cut at the cap.
 */

/**
 * Answer of `PUT /sessions/{id}/files/content`.
 * @typedef {object} FileSaved
 * @property {string} etag Its new entity tag (also in the `ETag` header).
 * @property {string} path The file, relative.
 * @property {number} size Its size now.
 */

/**
 * How a changed file changed, against the base (worktree sessions) or HEAD (shared).
 * @typedef {('added' | 'modified' | 'deleted' | 'renamed')} FileStatus
 */

/**
 * Fields of `fleet.get`: none.
 * @typedef {Record<string, any>} FleetGetParams
 */

/**
 * The server's vendor processes.
 * @typedef {object} FleetInfo
 * @property {number | null} [limit] `--max-live-processes`: at most this many run at once; absent without a limit.
 * @property {Array<FleetProcess>} processes The processes, oldest first (one closing to make room still counts).
 * @property {number | null} [turnLimit] `--max-concurrent-turns`: at most this many turns run at once; absent without a limit.
 * @property {number} turnsRunning Turns running now (a Driver's delegations included, which never wait).
 * @property {Array<FleetWaiting>} waiting Turns waiting for a process to start, oldest first (they start in this order).
 * @property {Array<FleetWaitingTurn>} waitingTurns Turns waiting for one of those to end, in line order (place 1 first).
 */

/**
 * One vendor process.
 * @typedef {object} FleetProcess
 * @property {boolean} busy A turn or background work runs in it (never closed to make room).
 * @property {boolean} closing It was asked to close to make room and has not exited yet.
 * @property {number} cpuMs CPU time of the process and the processes it started that are still running, milliseconds.
 * @property {number | null} [pid] Its process id; absent while it starts.
 * @property {number} rssBytes Resident memory of the process and the processes it started, bytes.
 * @property {string} sessionId The session it serves.
 * @property {number} since When it took its place, epoch ms.
 * @property {string} vendor Its vendor.
 */

/**
 * A turn waiting for a process.
 * @typedef {object} FleetWaiting
 * @property {string} sessionId The session.
 * @property {number} since Since when, epoch ms.
 * @property {string} vendor Its vendor.
 */

/**
 * A turn waiting for a turn slot.
 * @typedef {object} FleetWaitingTurn
 * @property {number} place Its place in line, from 1.
 * @property {string} sessionId The session.
 * @property {number} since Since when, epoch ms.
 */

/**
 * How a fork's agent has the source's conversation.
 * @typedef {('vendor' | 'transcript')} ForkConversation
 */

/**
 * Where a fork branched off.
 * @typedef {object} ForkedFrom
 * @property {number} anchorSeq The `seq` of its `user_message` whose turn the fork's conversation ends with.
 * @property {string} sessionId The source session.
 */

/**
 * What a session's working directory changed: the `git_state` event's fields and `GET /sessions/{id}/changes`.
 * @typedef {object} GitState
 * @property {number} ahead Commits on `branch` that `base` lacks (0 without a base).
 * @property {string | null} [base] What the changes are counted against: the base branch for a worktree session; for a shared one, the upstream branch when there is one (absent otherwise).
 * @property {number} behind Commits on `base` that `branch` lacks (0 without a base).
 * @property {string | null} [branch] The branch checked out (absent on a detached HEAD).
 * @property {boolean} dirty True when the working directory has uncommitted changes (untracked files included).
 * @property {Array<ChangedFile>} files Changed files, sorted by path: for a worktree session everything that differs from where the branch left the base (commits and uncommitted changes); for a shared session the uncommitted changes against HEAD.
 */

/**
 * A block of a `user_message` as history keeps it: images and files by upload id, never their bytes, so the event log stays small.
 * @typedef {({text: string, type: 'text'} | StoredAttachment | StoredAttachment)} HistoryBlock
 */

/**
 * What an occurrence of a recurring schedule does while the session is busy.
 * @typedef {('skip' | 'queue')} IfBusy
 */

/**
 * A judge of a loop's iterations.
 * @typedef {object} JudgeCheck
 * @property {string} prompt What the judge looks for; it also gets the goal and the iteration's answer.
 * @property {string | null} [vendor] The judge's vendor (default: the session's); another vendor judges another's work with fresh eyes.
 */

/**
 * How an iteration is checked: exactly one of `command` and `judge`.
 * @typedef {object} LoopCheck
 * @property {string | null} [command] A shell command run in the session's working directory (confined as the agents are): exit status 0 passes.
 * @property {(JudgeCheck | null)} [judge] A judge: a turn in a separate, read-only session answers PASS or FAIL with its reasons.
 * @property {number | null} [timeoutSeconds] How long the command may run, 1 to 3600 seconds (default 600); killed after.
 */

/**
 * An iteration's check, as `loop_iteration` records it.
 * @typedef {object} LoopCheckOutcome
 * @property {number | null} [exitCode] The command's exit code, when it exited.
 * @property {string | null} [judgeSessionId] The judge's session, for a judge.
 * @property {string} output What it said: the command's output (its last lines), or the judge's reasons.
 * @property {boolean} passed Whether it passed.
 */

/**
 * Why a loop ended.
 * @typedef {('passed' | 'maxIterations' | 'stopped' | 'interrupted' | 'failed')} LoopEndReason
 */

/**
 * A running loop, on the session (`SessionInfo.loop`) and `loop.start`'s reply.
 * @typedef {object} LoopInfo
 * @property {string} goal Its goal.
 * @property {number} iteration The iteration under way, from 1.
 * @property {string} loopId Its id (`loop_…`).
 * @property {number} maxIterations Its last iteration.
 * @property {number | null} [nextAt] With phase `cooldown`: when the next iteration starts, epoch ms.
 * @property {LoopPhase} phase Where it is.
 */

/**
 * Where a running loop is.
 * @typedef {('turn' | 'check' | 'cooldown')} LoopPhase
 */

/**
 * Fields of `loop.start`.
 * @typedef {object} LoopStartParams
 * @property {LoopCheck} check How each iteration is checked.
 * @property {number | null} [cooldownSeconds] Pause after a failed check before the next iteration, 0 to 86400 seconds (default 0).
 * @property {string} goal What each iteration works toward: the first line of each iteration's message.
 * @property {number} maxIterations Most iterations, 1 to 100.
 * @property {string} sessionId The session that works toward the goal; idle, with no loop running.
 */

/**
 * `loop.start` reply: the loop, as the session shows it.
 * @typedef {object} LoopStartResult
 * @property {LoopInfo} loop The loop.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `loop.stop`.
 * @typedef {object} LoopStopParams
 * @property {string} sessionId The session whose loop ends (a turn under way goes on).
 */

/**
 * `loop.stop` reply.
 * @typedef {object} LoopStopResult
 * @property {number} iterations Iterations whose turn started.
 * @property {string} loopId The loop stopped.
 * @property {string} sessionId The session.
 */

/**
 * A listed server's name, or an entry for this session alone.
 * @typedef {(string | McpServerEntry)} McpServerChoice
 */

/**
 * One MCP server: `command` (stdio, with `args` and `env`) or `url` (streamable HTTP, with `headers`).
 * @typedef {({args?: Array<string>, command: string, env?: Record<string, string>, name: string} | {headers?: Record<string, string>, name: string, url: string})} McpServerEntry
 */

/**
 * One MCP server, as listed.
 * @typedef {object} McpServerInfo
 * @property {Array<string>} [args] Its arguments (stdio).
 * @property {string | null} [command] The program (stdio).
 * @property {Array<Secret>} [env] Its environment's variables (stdio).
 * @property {Array<Secret>} [headers] Its headers (http).
 * @property {string} name Its name.
 * @property {McpServerScope} scope Declared in the config or added by the caller.
 * @property {string} transport `stdio` or `http`.
 * @property {string | null} [url] Its endpoint (http).
 */

/**
 * Fields of `mcp-servers.probe`.
 * @typedef {object} McpServerProbeParams
 * @property {string} name The server.
 */

/**
 * `mcp-servers.probe` reply: whether an MCP client got through, and what it found.
 * @typedef {object} McpServerProbeResult
 * @property {string | null} [error] Why it is not reachable.
 * @property {string} name The server.
 * @property {boolean} reachable It answered `initialize` and `tools/list`.
 * @property {string | null} [serverName] Its own name (`serverInfo.name`).
 * @property {string | null} [serverVersion] Its version (`serverInfo.version`).
 * @property {Array<string>} tools Its tools' names.
 */

/**
 * `mcp-servers.remove` fields: a server the caller added.
 * @typedef {object} McpServerRemoveParams
 * @property {string} name The server.
 */

/**
 * `mcp-servers.remove` reply.
 * @typedef {object} McpServerRemoveResult
 * @property {string} name The server removed.
 */

/**
 * Where a server comes from.
 * @typedef {('config' | 'user')} McpServerScope
 */

/**
 * Fields of `mcp-servers.list`.
 * @typedef {Record<string, any>} McpServersListParams
 */

/**
 * `mcp-servers.list` reply, by name.
 * @typedef {object} McpServersListResult
 * @property {Array<McpServerInfo>} servers The servers.
 */

/**
 * How `session.merge` brings the branch into its base.
 * @typedef {('merge' | 'squash')} MergeStrategy
 */

/**
 * `content` of a message: a string (as before blocks existed), or a list of blocks. A plain JSON string stays valid and means one text block.
 * @typedef {(string | Array<ContentBlock>)} MessageContent
 */

/**
 * Which of a session's moments its owner's devices are told of.
 * @typedef {('all' | 'attention' | 'none')} Notify
 */

/**
 * How one occurrence of a recurring schedule went.
 * @typedef {('sent' | 'queued' | 'skipped' | 'failed')} OccurrenceOutcome
 */

/**
 * What a session does when its vendor's usage or rate limit ends a turn (status `limited`).
 * @typedef {('fail' | 'wait' | {handoff: string})} OnLimit
 */

/**
 * Fields of `pair.close`.
 * @typedef {object} PairCloseParams
 * @property {string} pairId The pair to dissolve.
 */

/**
 * `pair.close` reply.
 * @typedef {object} PairCloseResult
 * @property {boolean} interrupted True when its Worker was running and was stopped.
 * @property {string} pairId The dissolved pair.
 */

/**
 * Fields of `pair.create`: a new Worker session paired with an existing Driver.
 * @typedef {object} PairCreateParams
 * @property {string} driverId The Driver session.
 * @property {WorkerSpec} worker The Worker to create.
 * @property {(WorkerApprovals | null)} [workerApprovals] Who answers the permission requests of the Worker's delegated turns: `user` (default), `driver` (with `approve_worker`) or `bypass` (allowed at once).
 * @property {string | null} [workerName] The Worker's name among the Driver's Workers (1 to 32 letters, digits, `-`, `_`, `.`, not starting with `ses_`); default: its vendor, with `-2`, `-3`… when taken. A name the Driver already gave a Worker is `CONFLICT`.
 * @property {string | null} [workerNode] Cluster only: the node to create the Worker on (default: the Driver's node). The pair runs on the Driver's node and reaches its Worker over NATS; `INVALID_ARGUMENT` (REST 422) for a node the cluster does not know, `NODE_UNAVAILABLE` for one whose lease lapsed.
 * @property {(WorkspaceMode | null)} [workerWorkspace] Where the Worker works: in the Driver's directory (`shared`) or in a worktree of its own branched from the Driver's HEAD (`worktree`); default: the server's `worker_workspace` setting.
 */

/**
 * `pair.create` reply.
 * @typedef {object} PairCreateResult
 * @property {PairInfo} pair The new pair.
 */

/**
 * A Driver/Worker pair.
 * @typedef {object} PairInfo
 * @property {number} createdAt Creation time, epoch ms.
 * @property {(DelegationInfo | null)} [delegation] The delegation in flight, if any.
 * @property {string} driverId The session that directs.
 * @property {string} pairId The pair's id.
 * @property {PairState} [state] Where the pair's life stands (`creating` while its sessions are joined).
 * @property {WorkerApprovals} [workerApprovals] Who answers the permission requests of the Worker's delegated turns (left out: `user`).
 * @property {string} workerId The session that takes delegated work.
 * @property {string} [workerName] The Worker's name among its Driver's Workers (unique there): the agent tools' `worker` argument names it. `worker` for pairs made before Workers had names.
 */

/**
 * A pair's persisted life cycle: `creating → active → closed`. The pair row is written first (`creating`), then the two memberships, then `active`; closing writes `closed` before the memberships are cleared. Start-up finishes or undoes any pair left between two steps by a crash.
 * @typedef {('creating' | 'active' | 'closed')} PairState
 */

/**
 * One Worker of a Driver, as the Driver's `SessionInfo.workers` lists it.
 * @typedef {object} PairedWorker
 * @property {string} pairId The pair that links the Driver to this Worker.
 * @property {string} workerId The Worker session.
 * @property {string} workerName Its name among the Driver's Workers.
 */

/**
 * Fields of `pairs.list`: none.
 * @typedef {Record<string, any>} PairsListParams
 */

/**
 * `GET /api/v1/pairs`.
 * @typedef {object} PairsListResult
 * @property {Array<PairInfo>} pairs Pairs whose sessions the caller may see.
 */

/**
 * One answer a vendor offers for a permission request. Its fields are the fields of the `chat.permission-response` that picks it.
 * @typedef {object} PermissionChoice
 * @property {boolean} allow Allow (true) or deny.
 * @property {string} label What to show people (the vendor's own words where it has them).
 * @property {(PermissionMode | null)} [permissionMode] The session's permission mode after this answer (approving a plan and accepting edits from then on).
 * @property {(RememberScope | null)} [remember] Also allow this tool without asking from now on.
 */

/**
 * What a permission request asks about.
 * @typedef {('tool' | 'plan')} PermissionKind
 */

/**
 * How the vendor asks before using tools. Names follow Claude Code's modes, which the other adapters map onto their own approval policies.
 * @typedef {('default' | 'acceptEdits' | 'plan' | 'bypassPermissions')} PermissionMode
 */

/**
 * A remembered answer: requests to use `tool_name` are allowed without asking.
 * @typedef {object} PermissionRule
 * @property {RememberScope} scope How long it holds.
 * @property {string} toolName The tool, as `permission_request.toolName` names it.
 */

/**
 * `ping` has no fields.
 * @typedef {Record<string, any>} PingParams
 */

/**
 * `ping` reply: `{pong: true}`.
 * @typedef {object} PingResult
 * @property {boolean} pong Always true.
 */

/**
 * One step of an agent's plan (the `plan` event).
 * @typedef {object} PlanEntry
 * @property {string} content What the step is.
 * @property {PlanPriority} [priority] How much it matters.
 * @property {PlanStatus} [status] Where it stands.
 */

/**
 * How much a plan step matters.
 * @typedef {('high' | 'medium' | 'low')} PlanPriority
 */

/**
 * Where a plan step stands.
 * @typedef {('pending' | 'in_progress' | 'completed')} PlanStatus
 */

/**
 * Fields of `proposal.respond`.
 * @typedef {object} ProposalRespondParams
 * @property {boolean} accepted Accept (true) or decline.
 * @property {string | null} [effort] Worker effort.
 * @property {string | null} [model] Worker model.
 * @property {string} proposalId The proposal.
 * @property {string} sessionId The Driver session that proposed.
 * @property {string | null} [vendor] Worker vendor (default: the recommendation).
 */

/**
 * `proposal.respond` reply.
 * @typedef {object} ProposalRespondResult
 * @property {string | null} [pairId] The pair created for it (accepted only).
 * @property {string} proposalId The proposal.
 * @property {ProposalStatus} status `running` when accepted, `declined` otherwise.
 * @property {string | null} [workerId] The Worker started for it (accepted only).
 */

/**
 * Where a Worker proposal stands.
 * @typedef {('pending' | 'starting' | 'running' | 'completed' | 'interrupted' | 'error' | 'declined')} ProposalStatus
 */

/**
 * Fields of `push.key` (none).
 * @typedef {Record<string, any>} PushKeyParams
 */

/**
 * `push.key` reply.
 * @typedef {object} PushKeyResult
 * @property {string} publicKey The server's VAPID public key (uncompressed P-256 point, base64url): the `applicationServerKey` of `pushManager.subscribe`.
 */

/**
 * A device's keys, as `PushSubscription.toJSON()` gives them.
 * @typedef {object} PushKeys
 * @property {string} auth Its authentication secret, base64url.
 * @property {string} p256dh Its P-256 public key, base64url.
 */

/**
 * Fields of `push.subscribe`: a device of the caller to notify.
 * @typedef {object} PushSubscribeParams
 * @property {string} endpoint The push service's URL for the device.
 * @property {PushKeys} keys The device's keys.
 * @property {string | null} [label] What to call the device in lists.
 */

/**
 * `push.subscribe` reply.
 * @typedef {object} PushSubscribeResult
 * @property {PushSubscription} subscription The device as registered (the same id when its endpoint was registered before).
 */

/**
 * A registered device, as listed (its keys are not given back).
 * @typedef {object} PushSubscription
 * @property {number} createdAt When it was registered, epoch milliseconds.
 * @property {string} endpoint The push service's URL for the device.
 * @property {string} id Its id, for `push.unsubscribe`.
 * @property {string | null} [label] What the user called it.
 */

/**
 * Fields of `push.subscriptions` (none).
 * @typedef {Record<string, any>} PushSubscriptionsParams
 */

/**
 * `push.subscriptions` reply: the caller's devices, oldest first.
 * @typedef {object} PushSubscriptionsResult
 * @property {Array<PushSubscription>} subscriptions The devices.
 */

/**
 * Fields of `push.unsubscribe`.
 * @typedef {object} PushUnsubscribeParams
 * @property {string} subscriptionId The device's id.
 */

/**
 * `push.unsubscribe` reply.
 * @typedef {object} PushUnsubscribeResult
 * @property {boolean} removed Always true (a device the caller does not have is `NOT_FOUND`).
 * @property {string} subscriptionId The device's id.
 */

/**
 * Where a branch was pushed.
 * @typedef {object} PushedBranch
 * @property {string} branch The branch written there.
 * @property {string} commit The commit pushed.
 * @property {string} remote The remote's name in the base repository.
 */

/**
 * A QR code as its modules, row by row: `1` dark, `0` light (no quiet zone).
 * @typedef {object} QrModules
 * @property {string} modules `size`² characters.
 * @property {number} size Modules per side.
 */

/**
 * Fields of `question.answer`: a person answers a Worker's waiting question in its Driver's place.
 * @typedef {object} QuestionAnswerParams
 * @property {string} answer The answer the Worker's `ask_driver` returns.
 * @property {string} questionId The question (`q_…`).
 * @property {string} sessionId The Worker that asked (the `from` of the `question` event).
 */

/**
 * `question.answer` reply.
 * @typedef {object} QuestionAnswerResult
 * @property {string} questionId The question answered.
 * @property {string} sessionId The Worker that asked.
 */

/**
 * A message waiting in a session's queue until the session has no turn and no background work.
 * @typedef {object} QueuedEntry
 * @property {boolean} [internal] True for a message the server queued (a pushed-back result): it cannot be edited or cancelled.
 * @property {string} queueId Its id (`q_…`); `chat.queue-cancel` and `chat.queue-edit` name it.
 * @property {string} text The user message it sends once the session is free.
 */

/**
 * What a recurring schedule repeats by.
 * @typedef {object} Recurring
 * @property {IfBusy} ifBusy What an occurrence does while a turn runs.
 * @property {number} occurrences Occurrences so far.
 * @property {string} rule The rule, as given.
 * @property {number} start Its first instant, epoch ms (`DTSTART`: the rule counts from it).
 * @property {string} timeZone The IANA time zone its wall-clock times are in.
 */

/**
 * How long a remembered answer holds.
 * @typedef {('session')} RememberScope
 */

/**
 * A comment on lines of the session's diff.
 * @typedef {object} ReviewComment
 * @property {string} body What the reviewer says.
 * @property {number | null} [endLine] The last line (default `line`); the lines between must all be in the diff.
 * @property {number} line The first line commented on, 1-based, on `side`.
 * @property {string} path The file, `/`-separated, relative to the top of the working tree (as the diff names it).
 * @property {ReviewSide} [side] `new` (default) or `old`.
 */

/**
 * Which side of the diff a comment's lines are on.
 * @typedef {('new' | 'old')} ReviewSide
 */

/**
 * Who a review goes to.
 * @typedef {('session' | 'driver')} ReviewTarget
 */

/**
 * What a review by another vendor found, as it travels with a Worker's changes (`review_on_delegation`).
 * @typedef {object} ReviewVerdict
 * @property {Array<ReviewComment>} comments Its line comments, each on a line of the diff.
 * @property {string | null} [failed] Why the review gave no usable answer (its turn failed, or its answer held no review); absent when it did.
 * @property {string} sessionId The reviewer's session.
 * @property {string | null} [summary] Its overall verdict.
 * @property {string} vendor Its vendor.
 */

/**
 * Who wrote a review that an agent wrote.
 * @typedef {object} Reviewer
 * @property {string} sessionId The reviewer's session.
 * @property {string} vendor Its vendor.
 */

/**
 * A session's role inside a Driver/Worker pair.
 * @typedef {('driver' | 'worker')} Role
 */

/**
 * One entry of `GET /api/v1/sessions/running`.
 * @typedef {object} RunningSession
 * @property {boolean | null} [background] True when no turn runs but background work does.
 * @property {boolean | null} [canInterrupt] False when an interrupt cannot reach it.
 * @property {number} lastSeq The session's newest `seq`.
 * @property {string} sessionId The session.
 * @property {number} startedAt When the turn (or the oldest background task) started, epoch milliseconds.
 * @property {string | null} [statusText] A short description of what it is doing.
 * @property {Array<BackgroundTask> | null} [tasks] Its background tasks.
 * @property {string} vendor Its vendor.
 */

/**
 * A scheduled message (kept in its session's record; listed by `GET /api/v1/sessions/{id}/schedules`).
 * @typedef {object} ScheduleInfo
 * @property {number} at When it comes due, epoch ms.
 * @property {string} content The message.
 * @property {string | null} [reason] Why it failed.
 * @property {(Recurring | null)} [rrule] A recurring schedule's rule (RFC 5545 `RRULE` subset); `at` is then its next occurrence, and it stays `pending` until the rule ends.
 * @property {string} scheduleId Its id.
 * @property {ScheduleStatus} status Where it stands.
 * @property {Array<number>} [upcoming] The next occurrences after `at` (up to 5), as listed; not kept.
 */

/**
 * Where a scheduled message stands.
 * @typedef {('pending' | 'sent' | 'failed' | 'cancelled')} ScheduleStatus
 */

/**
 * Which script.
 * @typedef {('setup' | 'run' | 'archive')} ScriptName
 */

/**
 * Where a script is.
 * @typedef {('running' | 'passed' | 'failed' | 'timedOut' | 'stopped')} ScriptStatus
 */

/**
 * A variable or header whose value may be a secret: only whether it is set.
 * @typedef {object} Secret
 * @property {string} name Its name.
 * @property {boolean} set Whether it has a value (never shown).
 */

/**
 * Fields of `session.archive`.
 * @typedef {object} SessionArchiveParams
 * @property {string} sessionId The session to archive.
 */

/**
 * `session.archive` reply (and `DELETE /sessions/{id}`'s answer).
 * @typedef {object} SessionArchiveResult
 * @property {boolean} archived Always true.
 * @property {string} sessionId The archived session.
 */

/**
 * Fields of `session.changes`.
 * @typedef {object} SessionChangesParams
 * @property {string} sessionId The session.
 */

/**
 * `session.changes` reply.
 * @typedef {object} SessionChangesResult
 * @property {GitState} changes The working directory's changes, as its latest `git_state`.
 */

/**
 * Fields of `session.check`.
 * @typedef {object} SessionCheckParams
 * @property {string} sessionId The session.
 */

/**
 * `session.check` reply and `POST /sessions/{id}/check` answer.
 * @typedef {object} SessionCheckResult
 * @property {Array<CheckResult>} checks Every check of `.tandem/worktree.toml`, in order (none: it declares none).
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.checkpoints`.
 * @typedef {object} SessionCheckpointsParams
 * @property {string} sessionId The session.
 */

/**
 * `session.checkpoints` reply (`GET /sessions/{id}/checkpoints`): oldest first.
 * @typedef {object} SessionCheckpointsResult
 * @property {Array<CheckpointInfo>} checkpoints Its checkpoints, oldest first.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.commands`.
 * @typedef {object} SessionCommandsParams
 * @property {string} sessionId The session.
 */

/**
 * `session.commands` reply.
 * @typedef {object} SessionCommandsResult
 * @property {Array<VendorCommand>} commands The slash commands its agent offers, as the vendor last listed them (empty until its agent first started, and for vendors that list none).
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.configure`; absent fields stay as they are.
 * @typedef {object} SessionConfigureParams
 * @property {string | null} [effort] New effort (clamped).
 * @property {string | null} [model] New model.
 * @property {(Notify | null)} [notify] Which moments the owner's devices are told of by Web Push.
 * @property {(OnLimit | null)} [onLimit] What to do when the vendor's usage or rate limit ends a turn: `fail`, `wait` or `{"handoff": VENDOR}`.
 * @property {string | null} [ownerId] New owner: an existing user's id. Admins only; how a revoked user's session is given to someone else (it takes commands again).
 * @property {(PermissionMode | null)} [permissionMode] New permission mode.
 * @property {string} sessionId The session.
 * @property {string | null} [title] New title.
 * @property {string | null} [vendor] New vendor (refused once the vendor has a session id).
 */

/**
 * `session.configure` reply: the session as it is now.
 * @typedef {object} SessionConfigureResult
 * @property {SessionInfo} session The session.
 */

/**
 * Fields of `session.create` and of `POST /api/v1/sessions`.
 * @typedef {object} SessionCreateParams
 * @property {string | null} [baseRef] With `worktree`: the commit, tag or branch to branch from (default: the HEAD of the checkout at `cwd`).
 * @property {string | null} [cwd] Working directory: an existing directory under one of the caller's workspace roots, outside the server's data directory (else `INVALID_ARGUMENT`, REST 422: a rule of this server's disk and configuration); blank or absent: the caller's first root. No NUL byte (no path has one).
 * @property {'' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max' | null} [effort] Reasoning effort (clamped to the vendor's levels).
 * @property {Array<McpServerChoice> | null} [mcpServers] The MCP servers its agent gets beside tandem's own tools: names from `mcp-servers.list` and entries for this session alone, at most 32 and no name twice (a name the caller cannot use, or one given twice: `INVALID_ARGUMENT`, REST 422). Absent or `null`: every server `mcp-servers.list` shows the owner; `[]`: none.
 * @property {string | null} [model] Model name.
 * @property {string | null} [node] The cluster node to create it on (it is pinned there: its working directory is that node's); default the node asked. A node the cluster does not have (any node, outside a cluster) is refused with `INVALID_ARGUMENT` (REST 422).
 * @property {(PermissionMode | null)} [permissionMode] Tool approval mode.
 * @property {string | null} [title] Title; "New session" when absent. 1 to 200 characters once trimmed.
 * @property {string | null} [vendor] Vendor id; `scripted` when absent. One `GET /vendors` lists as installed (else, REST 422: `INVALID_ARGUMENT` for an id it does not list, `VENDOR_NOT_INSTALLED` for one not installed).
 * @property {(Visibility | null)} [visibility] Private (default) or shared.
 * @property {(WorkspaceMode | null)} [workspace] `shared` (default: work in `cwd`) or `worktree` (a new git worktree on branch `tandem/<short id>`; `cwd` must be inside a git repository).
 */

/**
 * `session.create` reply: the new session.
 * @typedef {object} SessionCreateResult
 * @property {SessionInfo} session The session.
 */

/**
 * Fields of `session.diff`.
 * @typedef {object} SessionDiffParams
 * @property {string | null} [path] One changed file (relative to the working directory's top); absent: all.
 * @property {string} sessionId The session.
 */

/**
 * `session.diff` reply.
 * @typedef {object} SessionDiffResult
 * @property {FileDiff} diff The unified diff, capped.
 */

/**
 * Fields of `session.discard`.
 * @typedef {object} SessionDiscardParams
 * @property {string} sessionId The session whose worktree to remove.
 */

/**
 * `session.discard` reply and `POST /sessions/{id}/discard` answer.
 * @typedef {object} SessionDiscardResult
 * @property {string} branch The branch deleted with its worktree.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.events` (and the query of `GET /sessions/{id}/events`).
 * @typedef {object} SessionEventsParams
 * @property {number} [after] Events with `seq > after` (0 to 2^63−1).
 * @property {number} [limit] Events per page, 1 to 5000 (default 1000).
 * @property {string} sessionId The session.
 */

/**
 * `session.events` reply (and `GET /sessions/{id}/events`'s answer).
 * @typedef {object} SessionEventsResult
 * @property {Array<StoredEvent>} events Events after `after`, oldest first.
 * @property {boolean} hasMore True when more events follow.
 * @property {number} lastSeq The `seq` of the last event returned (or `after` when none).
 */

/**
 * Fields of `session.file-read`.
 * @typedef {object} SessionFileReadParams
 * @property {string} path The file, relative to the working directory.
 * @property {string} sessionId The session.
 */

/**
 * `session.file-read` reply.
 * @typedef {object} SessionFileReadResult
 * @property {FileContent} file The file's text and ETag.
 */

/**
 * Fields of `session.file-write`.
 * @typedef {object} SessionFileWriteParams
 * @property {string} content The file's new text (at most 2 MiB).
 * @property {string | null} [ifMatch] The ETag the file was read with; the save is refused (`PRECONDITION_FAILED`) when the file changed since. Absent: a new file.
 * @property {string} path The file, relative to the working directory.
 * @property {string} sessionId The session.
 */

/**
 * `session.file-write` reply.
 * @typedef {object} SessionFileWriteResult
 * @property {FileSaved} saved The saved file and its new ETag.
 */

/**
 * Fields of `session.files`.
 * @typedef {object} SessionFilesParams
 * @property {string | null} [path] `/`-separated, relative; empty or absent: the working directory itself.
 * @property {string} sessionId The session.
 */

/**
 * `session.files` reply.
 * @typedef {object} SessionFilesResult
 * @property {DirListing} listing The directory's entries.
 */

/**
 * Fields of `session.fork`: a new session whose conversation is this one's up to and including the turn of an earlier user message; the source is unchanged.
 * @typedef {object} SessionForkParams
 * @property {number} anchorSeq The `seq` of a `user_message` of an ended turn of it that no rewind superseded.
 * @property {string} sessionId The session forked.
 * @property {string | null} [title] The fork's title; the source's with " · fork" when absent. 1 to 200 characters once trimmed.
 * @property {string | null} [vendor] The fork's vendor; the source's when absent. Another vendor gets the conversation as a bounded transcript.
 * @property {(WorkspaceMode | null)} [workspace] `worktree`: a worktree of its own whose files are the anchor turn's checkpoint (the default when the source has a worktree); `shared`: the source's working directory as it is.
 */

/**
 * `session.fork` reply: the new session.
 * @typedef {object} SessionForkResult
 * @property {ForkConversation} conversation How its agent has the conversation.
 * @property {SessionInfo} session The fork (its `forkedFrom` names the source and the anchor).
 */

/**
 * Fields of `session.get`.
 * @typedef {object} SessionGetParams
 * @property {string} sessionId The session.
 */

/**
 * `session.get` reply.
 * @typedef {object} SessionGetResult
 * @property {SessionInfo} session The session as it is now.
 */

/**
 * Fields of `session.handoff`: continue a conversation in a new session.
 * @typedef {object} SessionHandoffParams
 * @property {string | null} [effort] Effort of the new session.
 * @property {string | null} [model] Model of the new session.
 * @property {string} sessionId The session to continue.
 * @property {string | null} [targetVendor] Vendor of the new session (required; absent gives a clear error).
 */

/**
 * `session.handoff` reply.
 * @typedef {object} SessionHandoffResult
 * @property {string} sourceSessionId The session handed off; it records `handoff_created`.
 * @property {string} targetSessionId The session created to continue it; it starts with the handoff prompt.
 * @property {string} targetVendor The new session's vendor, as asked for (trimmed).
 */

/**
 * A session as REST and `session_upserted` describe it.
 * @typedef {object} SessionInfo
 * @property {number | null} [archivedAt] When it was archived (`DELETE /sessions/{id}`), epoch ms; an archived session is listed nowhere and announced once with this set.
 * @property {Attention} [attention] Whether the session waits for its owner, as every client shows it.
 * @property {Array<BackgroundTask>} backgroundTasks Background work still running.
 * @property {number} createdAt Creation time, epoch milliseconds.
 * @property {string} cwd Working directory of the vendor process.
 * @property {string} effort Reasoning effort, already clamped to the vendor's levels; empty means default.
 * @property {(ForkedFrom | null)} [forkedFrom] The session and message this one was forked at (`session.fork`), if any.
 * @property {string | null} [handoffFrom] The session this one continues (a handoff), if any.
 * @property {string} id Our stable id, minted at creation.
 * @property {number} lastActivity Time of the last event or change, epoch milliseconds.
 * @property {Array<CheckResult> | null} [lastChecks] The outcome of its last `session.check` (a merge gate reads it), if any ran.
 * @property {number} lastSeq Sequence number of the newest history event (0 when there is none).
 * @property {(LoopInfo | null)} [loop] The loop it runs (`loop.start`), if any.
 * @property {Array<string> | null} [mcpServers] The names of the MCP servers it chose (`session.create`'s `mcpServers`), its own entries among them; absent: every server its owner may use.
 * @property {string} model Model name; empty means the vendor's default.
 * @property {string | null} [node] The cluster node the session is pinned to (`tandem serve --node NAME`); absent on a server that is not part of a cluster.
 * @property {boolean} [nodeUnavailable] True while that node's lease has lapsed (it was stopped or cannot be reached): `status` is then the last one it published, and commands to the session are `NODE_UNAVAILABLE`. Left out while the node is available; never stored.
 * @property {Notify} [notify] Which moments its owner's devices are told of by Web Push (absent: `attention`).
 * @property {OnLimit} [onLimit] What it does when a vendor limit ends a turn (absent: `fail`).
 * @property {string} ownerId The owning user's id.
 * @property {string | null} [pairId] The pair this session belongs to, if any (a Driver with several Workers: the pair of its first one; `workers` lists them all).
 * @property {string | null} [parentId] The session that spawned this one, if any.
 * @property {PermissionMode} permissionMode Tool approval mode.
 * @property {(Role | null)} [role] Its role in that pair.
 * @property {SessionStatus} status Where the last turn stands.
 * @property {Array<SupersededRange>} [superseded] Ranges of the history that `chat.edit-send` superseded, oldest first (each as its `history_rewound` event says); clients show them collapsed.
 * @property {string} title Human title.
 * @property {number} turnCount Turns started so far.
 * @property {number | null} [turnStartedAt] When the turn in flight started, epoch ms.
 * @property {string} vendor Vendor id (`scripted`, `codex`, `claude`, ...).
 * @property {string | null} [vendorSessionId] The vendor's own session or thread id, once known.
 * @property {Visibility} visibility Who else may see it.
 * @property {number | null} [waitingPlace] While its turn waits for a turn slot (status `waiting`): its place in the line, 1 being next.
 * @property {Array<PairedWorker>} [workers] A Driver's Workers, oldest first, each with its pair and name; empty (left out) for any other session.
 * @property {(WorkspaceInfo | null)} [workspace] The session's own git worktree (`workspace: "worktree"`); absent for a session that works in the directory it was given.
 */

/**
 * Fields of `session.mcp-token`.
 * @typedef {object} SessionMcpTokenParams
 * @property {string} sessionId The session.
 */

/**
 * `session.mcp-token` reply.
 * @typedef {object} SessionMcpTokenResult
 * @property {string} token Bearer token for `/mcp`, bound to the session.
 * @property {string | null} [url] The `/mcp` endpoint of the node that holds the session, as its own agents reach it (tokens are known only there).
 */

/**
 * Fields of `session.merge`.
 * @typedef {object} SessionMergeParams
 * @property {boolean} [force] Merge even when the repository requires passing checks and the last ones did not all pass.
 * @property {string | null} [message] The commit message (default: "tandem: merge <branch> (<title>)").
 * @property {string} sessionId The worktree session.
 * @property {MergeStrategy} strategy Merge commit or squash.
 */

/**
 * `session.merge` reply and `POST /sessions/{id}/merge` answer.
 * @typedef {object} SessionMergeResult
 * @property {string} base The branch merged into.
 * @property {string} branch Its branch.
 * @property {string} commit The base's new HEAD commit.
 * @property {string} sessionId The session.
 * @property {MergeStrategy} strategy How.
 */

/**
 * Fields of `session.push`.
 * @typedef {object} SessionPushParams
 * @property {string | null} [branch] The branch to write there (default: the session's own).
 * @property {string | null} [remote] A remote of the base repository (default: the base branch's upstream remote, else `origin`).
 * @property {string} sessionId The worktree session.
 */

/**
 * `session.push` reply and `POST /sessions/{id}/push` answer.
 * @typedef {object} SessionPushResult
 * @property {string} branch The branch written there.
 * @property {string} commit The commit pushed (the branch's tip, its uncommitted changes committed).
 * @property {string} remote The remote pushed to.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.rebase`.
 * @typedef {object} SessionRebaseParams
 * @property {string} sessionId The worktree session.
 */

/**
 * `session.rebase` reply and `POST /sessions/{id}/rebase` answer.
 * @typedef {object} SessionRebaseResult
 * @property {string} base The base branch it is on now.
 * @property {string} branch Its branch.
 * @property {string} head The branch's tip now.
 * @property {boolean} moved False when the branch already had the base's head: nothing moved.
 * @property {string} onto The base's head it was rebased onto (its new `baseCommit`).
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.restore`.
 * @typedef {object} SessionRestoreParams
 * @property {string} sessionId The session.
 * @property {string} turnId The checkpoint to put the files back to: a `turnId` that `session.checkpoints` lists.
 */

/**
 * `session.restore` reply (`POST /sessions/{id}/restore`).
 * @typedef {object} SessionRestoreResult
 * @property {string} commit Its commit.
 * @property {Array<string>} files Paths the restore changed, at most 500.
 * @property {number} filesOmitted How many more it changed than `files` lists.
 * @property {string} sessionId The session.
 * @property {string} turnId The checkpoint restored.
 * @property {string} undo The checkpoint of the files as they were just before (a `turnId` of the form `restore_<seq>`): restoring it undoes this restore.
 */

/**
 * Fields of `session.review-by`.
 * @typedef {object} SessionReviewByParams
 * @property {string | null} [instructions] What to look for; put before the diff in the reviewer's prompt.
 * @property {string | null} [model] The reviewer's model (default: the vendor's).
 * @property {string} sessionId The session whose diff is reviewed; it gets the review.
 * @property {string} vendor The reviewer's vendor (any installed one, usually another than the author's).
 */

/**
 * `session.review-by` reply: the review runs in the background, in its own session.
 * @typedef {object} SessionReviewByResult
 * @property {string} reviewSessionId The reviewer's session (read-only, on the same working directory).
 * @property {string} sessionId The reviewed session.
 */

/**
 * Fields of `session.run-log`.
 * @typedef {object} SessionRunLogParams
 * @property {string} sessionId The session.
 */

/**
 * Reply of `session.run-log`: the run script's output.
 * @typedef {object} SessionRunLogResult
 * @property {number} droppedBytes Bytes of that run's output dropped from the front to keep it to 1 MiB.
 * @property {number | null} [exitCode] Its exit code, once it exited by itself.
 * @property {string} log The output of its latest run (stdout and stderr as they interleaved): the last 1 MiB of it.
 * @property {boolean} running Whether the run script is running now.
 * @property {string} sessionId The session.
 * @property {(ScriptStatus | null)} [status] How its last run ended (absent while it runs, or before any run).
 */

/**
 * Fields of `session.run`.
 * @typedef {object} SessionRunParams
 * @property {string} sessionId The session whose repository declares a `run` script.
 */

/**
 * Reply of `session.run` and `session.run-stop`.
 * @typedef {object} SessionRunResult
 * @property {number | null} [port] `TANDEM_PORT` of the script (the worktree's port), when it has one.
 * @property {boolean} running Whether the run script is running now.
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.run-stop`.
 * @typedef {object} SessionRunStopParams
 * @property {string} sessionId The session.
 */

/**
 * Fields of `session.schedule-cancel`.
 * @typedef {object} SessionScheduleCancelParams
 * @property {string} scheduleId The pending schedule.
 * @property {string} sessionId The session.
 */

/**
 * `session.schedule-cancel` reply.
 * @typedef {object} SessionScheduleCancelResult
 * @property {string} scheduleId The schedule.
 * @property {ScheduleStatus} status Always `cancelled`.
 */

/**
 * Fields of `session.schedule`.
 * @typedef {object} SessionScheduleParams
 * @property {string} at When, RFC 3339 (at most 365 days ahead; a past time fires at once); for a recurring schedule, the rule's start.
 * @property {string} content The message to send when it comes due.
 * @property {(IfBusy | null)} [ifBusy] What an occurrence does while a turn runs (default `skip`).
 * @property {string | null} [rrule] Repeat by this rule (`FREQ` MINUTELY to WEEKLY, `INTERVAL`, `BYDAY`, `BYHOUR`, `BYMINUTE`, `COUNT`, `UNTIL`).
 * @property {string} sessionId The session.
 * @property {string | null} [timeZone] The IANA time zone of the rule's wall-clock times (default `UTC`).
 */

/**
 * `session.schedule` reply.
 * @typedef {object} SessionScheduleResult
 * @property {number} at When it comes due, epoch ms.
 * @property {string} scheduleId The new schedule.
 * @property {ScheduleStatus} status Always `pending`.
 */

/**
 * Fields of `session.schedules`.
 * @typedef {object} SessionSchedulesParams
 * @property {string} sessionId The session.
 */

/**
 * `GET /api/v1/sessions/{id}/schedules`.
 * @typedef {object} SessionSchedulesResult
 * @property {Array<ScheduleInfo>} schedules Pending schedules and the latest 50 finished.
 */

/**
 * Where a session's last turn stands. `interrupted` and `failed` are never "done".
 * @typedef {('idle' | 'running' | 'waiting' | 'interrupted' | 'failed')} SessionStatus
 */

/**
 * Fields of `session.usage`.
 * @typedef {object} SessionUsageParams
 * @property {string} sessionId The session.
 * @property {number} [since] Count only turns that ended at or after this time, epoch ms (default 0: all).
 */

/**
 * `session.usage` reply.
 * @typedef {object} SessionUsageResult
 * @property {UsageSummary} usage Tokens and cost of the session and of its delegations.
 */

/**
 * Paging fields of `sessions.watch` and `sessions.list` (and the query of REST `GET /sessions`).
 * @typedef {object} SessionsListParams
 * @property {string | null} [cursor] `nextCursor` of the previous page; absent for the first.
 * @property {number | null} [limit] Sessions per page, 1 to 1000 (default 100).
 */

/**
 * `GET /api/v1/sessions` (one page), and the `sessions.watch` / `sessions.list` replies.
 * @typedef {object} SessionsListResult
 * @property {string | null} [nextCursor] Pass as `cursor` to get the next page; absent on the last page.
 * @property {Array<SessionInfo>} sessions Sessions the caller may see, most recently active first.
 */

/**
 * Fields of `sessions.running`: none.
 * @typedef {Record<string, any>} SessionsRunningParams
 */

/**
 * `GET /api/v1/sessions/running`.
 * @typedef {object} SessionsRunningResult
 * @property {Array<RunningSession>} sessions Sessions with a turn or background work in flight.
 */

/**
 * Fields of `sessions.watch`: the first page, as `sessions.list`'s.
 * @typedef {object} SessionsWatchParams
 * @property {string | null} [cursor] `nextCursor` of a previous page; absent for the first.
 * @property {number | null} [limit] Sessions in the first page, 1 to 1000 (default 100).
 */

/**
 * An attachment as history names it.
 * @typedef {object} StoredAttachment
 * @property {string} mimeType Its media type.
 * @property {string | null} [name] The file name given at upload (`?name=`), if any.
 * @property {string | null} [path] A file that was not inlined: where it was saved, relative to the session's working directory.
 * @property {number} size Bytes.
 * @property {string} uploadId Its upload id (inline images are stored as uploads too).
 */

/**
 * @typedef {object} StoredEvent
 * @property {string} kind
 * @property {number} seq
 * @property {string} sessionId
 * @property {number} ts
 * @property {string} [turnId]
 */

/**
 * One entry of `chat.subscribe`.
 * @typedef {object} SubscribeEntry
 * @property {number | null} [lastSeq] The last `seq` the client already has; replay starts after it (0: everything).
 * @property {string} sessionId The session to watch.
 */

/**
 * A branch of the history that a rewind replaced: what `history_rewound` carries, plus the `seq` of that event.
 * @typedef {object} SupersededRange
 * @property {number} anchorSeq The edited `user_message`.
 * @property {number} rewoundAt The `history_rewound` event that superseded it.
 * @property {number} supersededFrom First superseded `seq`.
 * @property {number} supersededTo Last superseded `seq`.
 * @property {number} turns Turns in the branch not already superseded by an earlier rewind.
 */

/**
 * What kind of background work a task is.
 * @typedef {('shell' | 'agent' | 'other')} TaskType
 */

/**
 * Fields of `terminal.close`.
 * @typedef {object} TerminalCloseParams
 * @property {string} sessionId The session.
 * @property {string} terminalId The terminal to end, with every process it started.
 */

/**
 * `terminal.close` reply.
 * @typedef {object} TerminalCloseResult
 * @property {string} sessionId The session.
 * @property {string} terminalId The terminal ended.
 */

/**
 * One terminal.
 * @typedef {object} TerminalInfo
 * @property {number} clients Clients connected to its socket now.
 * @property {number} cols Its size now, columns.
 * @property {number} createdAt When it was opened, epoch ms.
 * @property {string} cwd Where the shell started (the session's working directory).
 * @property {number} rows Its size now, rows.
 * @property {string} sessionId The session it belongs to.
 * @property {string} shell The shell it runs.
 * @property {string} terminalId Its id (`term_…`): its socket is `/ws/terminals/{terminalId}`.
 */

/**
 * Fields of `terminal.list`.
 * @typedef {object} TerminalListParams
 * @property {string} sessionId The session; its owner's only.
 */

/**
 * `terminal.list` reply: the session's terminals, oldest first.
 * @typedef {object} TerminalListResult
 * @property {string} sessionId The session.
 * @property {Array<TerminalInfo>} terminals Its terminals.
 */

/**
 * Fields of `terminal.open`.
 * @typedef {object} TerminalOpenParams
 * @property {number} cols Columns, 1 to 1000.
 * @property {number} rows Rows, 1 to 500.
 * @property {string} sessionId The session whose working directory the shell starts in; its owner's only.
 */

/**
 * Fields of `tool.call`: call a session-bound tool as that session.
 * @typedef {object} ToolCallParams
 * @property {any} [arguments] Tool arguments (an object).
 * @property {string} name Tool name.
 * @property {string} sessionId The session the call is made as.
 */

/**
 * `tool.call` reply: the tool's result, or its failure.
 * @typedef {object} ToolCallResult
 * @property {(ErrorCode | null)} [code] Why it failed, for programs (only when `isError`).
 * @property {boolean} isError True when the tool refused or failed.
 * @property {any} result The tool's JSON result, or its error text when `isError`.
 */

/**
 * Per-turn overrides on `chat.send`; they stick to the session like `session.configure`.
 * @typedef {object} TurnOptions
 * @property {'' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max' | null} [effort] Effort for this and later turns (clamped to the vendor's levels).
 * @property {string | null} [model] Model for this and later turns.
 * @property {(PermissionMode | null)} [permissionMode] Permission mode for this and later turns.
 */

/**
 * How a turn ended. `interrupted` and `failed` are never reported as completed.
 * @typedef {('completed' | 'interrupted' | 'failed' | 'limited')} TurnStatus
 */

/**
 * What one turn used, as its vendor reported it (`turn_completed.usage`).
 * @typedef {object} TurnUsage
 * @property {number | null} [cacheWriteTokens] Of the input, tokens written to the vendor's cache, when the vendor counts them apart (Claude Code, ACP agents).
 * @property {number} cachedInputTokens Of the input, tokens read from the vendor's cache.
 * @property {(ContextUsage | null)} [context] The context window after the turn, when the vendor said it.
 * @property {number | null} [costUsd] What the turn cost in US dollars, when the vendor reported a cost in dollars.
 * @property {number} inputTokens Input tokens, those served from or written to the vendor's cache included.
 * @property {number} outputTokens Output tokens, reasoning included.
 * @property {number | null} [reasoningTokens] Of the output, reasoning tokens, when the vendor counts them apart.
 * @property {(Cost | null)} [sessionCost] What the vendor session has cost so far, in the currency the vendor gave (ACP agents report the session's cost, not the turn's).
 */

/**
 * `GET /api/v1/sessions/{id}/usage`: totals from the stored `turn_completed` events.
 * @typedef {object} UsageSummary
 * @property {Array<DelegationUsage>} delegations Delegated turns: for a Driver, its Workers' turns it delegated; for a Worker, its own delegated turns. Oldest first.
 * @property {string} sessionId The session.
 * @property {UsageTotals} total Every turn of this session.
 */

/**
 * Token counts and cost summed over turns. Vendors report usage in their own shapes (`turn_completed.usage`); these are the parts every page shows.
 * @typedef {object} UsageTotals
 * @property {number} cachedInputTokens Of the input, tokens served from the vendor's cache.
 * @property {number | null} [costUsd] Cost in US dollars, summed over the turns whose vendor reported one; absent when none did.
 * @property {number} inputTokens Input tokens (Claude: including cache reads and writes).
 * @property {number} outputTokens Output tokens.
 * @property {number} turns Turns that reported usage.
 */

/**
 * Fields of `user.get`: none.
 * @typedef {Record<string, any>} UserGetParams
 */

/**
 * `user.get` reply: the caller as the server knows them.
 * @typedef {object} UserGetResult
 * @property {boolean} admin Whether the caller is an admin (may reassign sessions, see every session).
 * @property {string} userId The caller's user id (`local` under `--auth none`).
 */

/**
 * A slash command the session's agent offers (`/name`), as its vendor lists it.
 * @typedef {object} VendorCommand
 * @property {string} [description] What it does, when the vendor says.
 * @property {string | null} [inputHint] What to type after it, when the vendor says.
 * @property {string} name Its name, without the slash.
 */

/**
 * One vendor in `GET /api/v1/vendors`.
 * @typedef {object} VendorInfo
 * @property {(AgentIdentity | null)} [agent] An ACP agent's own name and version, as its `initialize` answer gave them (absent until the agent was asked, and for the built-in adapters).
 * @property {Array<string>} capabilities What the adapter can do (`interrupt`, `backgroundTasks`, ...).
 * @property {string | null} [confinement] How this vendor's processes (and everything they start) are confined: `landlock` (a Landlock ruleset lets them use only their session's working directory, their own config and cache directories, a private temporary directory and read-only system paths; the data directory and other directories are denied) or `none` (they can read and write what the server can). Absent for vendors that run inside the server (`scripted`).
 * @property {string | null} [confinementProblem] Why `confinement` is `none`, or what a partial Landlock leaves out.
 * @property {string | null} [defaultModel] The model a session gets when it names none, where the CLI says (absent: the CLI decides, e.g. by the account).
 * @property {string} displayName Name to show people.
 * @property {Array<string>} effortLevels Supported effort levels, lowest first.
 * @property {string} id Vendor id used in `session.create`.
 * @property {boolean} installed True when sessions of this vendor can be created here.
 * @property {Array<string>} models Known model names: what the CLI reports (Codex's `model/list`, its default first) or its aliases (Claude Code), plus those the config file names.
 * @property {Array<string>} [notes] Limits worth telling people, e.g. an ACP agent that cannot connect to tandem's MCP endpoint over HTTP and so cannot call the agent tools.
 * @property {string | null} [problem] What is wrong and how to fix it, when `status` is neither `ok` nor `unknown`.
 * @property {VendorStatus} [status] Whether the vendor can work here, as far as is known without calling a model.
 * @property {string | null} [version] The CLI's version line, once known (absent when not installed).
 */

/**
 * Where a vendor stands, as far as is known without calling a model.
 * @typedef {('ok' | 'unknown' | 'missing' | 'broken' | 'unsupportedVersion' | 'notLoggedIn')} VendorStatus
 */

/**
 * Fields of `vendors.list`: none.
 * @typedef {Record<string, any>} VendorsListParams
 */

/**
 * `GET /api/v1/vendors`.
 * @typedef {object} VendorsListResult
 * @property {Array<VendorInfo>} vendors All vendors, installed or not.
 */

/**
 * Who besides the owner may see a session.
 * @typedef {('private' | 'shared')} Visibility
 */

/**
 * Who answers the permission requests a Worker's agent raises in a turn its Driver delegated. Turns a person starts in the Worker always ask that person.
 * @typedef {('user' | 'driver' | 'bypass')} WorkerApprovals
 */

/**
 * A vendor/model/effort choice for a Worker.
 * @typedef {object} WorkerChoice
 * @property {string} [effort] Effort (clamped); empty for the default.
 * @property {string} [model] Model; empty for the vendor's default.
 * @property {string} vendor Vendor id.
 */

/**
 * The Worker side of `pair.create`.
 * @typedef {object} WorkerSpec
 * @property {'' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max' | null} [effort] Worker effort (clamped to the vendor's levels).
 * @property {string | null} [model] Worker model.
 * @property {string} vendor Worker vendor.
 */

/**
 * A worktree session's workspace, in `SessionInfo.workspace` (absent for shared sessions).
 * @typedef {object} WorkspaceInfo
 * @property {string} base The branch it was made from and merges into.
 * @property {string} baseCheckout The checkout where `base` is checked out, which `session.merge` merges into (the repository the `cwd` was in, or the parent's worktree for a spawned session or a Worker of a worktree Driver).
 * @property {string} baseCommit The commit the branch started from.
 * @property {string} branch The session's own branch, `tandem/<short id>`.
 * @property {boolean} [merged] True once `session.merge` merged the branch.
 * @property {WorkspaceMode} mode Always `worktree` (shared sessions have no `workspace`).
 * @property {number | null} [port] `TANDEM_PORT` of the worktree's scripts and agent: a port of its own from the server's range (`[workspace] ports`).
 * @property {(PushedBranch | null)} [pushed] Where `session.push` last pushed the branch; a discard keeps a pushed or merged branch.
 * @property {WorktreeState} state Active, or discarded.
 */

/**
 * Where a session works: in the directory it was given (`shared`, as every session did before workspaces), or in a git worktree of its own on a new branch.
 * @typedef {('shared' | 'worktree')} WorkspaceMode
 */

/**
 * Where a worktree's life stands.
 * @typedef {('active' | 'discarded')} WorktreeState
 */

/**
 * Every WebSocket request `type`: its fields and its reply's fields.
 * @typedef {{
 *   'chat.abort': {params: ChatAbortParams, result: ChatAbortResult},
 *   'chat.edit-send': {params: ChatEditSendParams, result: ChatEditSendResult},
 *   'chat.permission-response': {params: ChatPermissionResponseParams, result: ChatPermissionResponseResult},
 *   'chat.queue': {params: ChatQueueParams, result: ChatQueueResult},
 *   'chat.queue-cancel': {params: ChatQueueCancelParams, result: ChatQueueChangeResult},
 *   'chat.queue-edit': {params: ChatQueueEditParams, result: ChatQueueChangeResult},
 *   'chat.review': {params: ChatReviewParams, result: ChatReviewResult},
 *   'chat.send': {params: ChatSendParams, result: ChatSendResult},
 *   'chat.stop-task': {params: ChatStopTaskParams, result: ChatStopTaskResult},
 *   'chat.subscribe': {params: ChatSubscribeParams, result: ChatSubscribeResult},
 *   'chat.unsubscribe': {params: ChatUnsubscribeParams, result: ChatUnsubscribeResult},
 *   'client.seen': {params: ClientSeenParams, result: ClientSeenResult},
 *   'client.visible': {params: ClientVisibleParams, result: ClientVisibleResult},
 *   'device.pair-code': {params: DevicePairCodeParams, result: DevicePairCodeResult},
 *   'device.revoke': {params: DeviceRevokeParams, result: DeviceRevokeResult},
 *   'devices.list': {params: DevicesListParams, result: DevicesListResult},
 *   'external.import': {params: ExternalImportParams, result: SessionInfo},
 *   'external.list': {params: ExternalListParams, result: ExternalListResult},
 *   'fleet.get': {params: FleetGetParams, result: FleetInfo},
 *   'loop.start': {params: LoopStartParams, result: LoopStartResult},
 *   'loop.stop': {params: LoopStopParams, result: LoopStopResult},
 *   'mcp-servers.add': {params: McpServerEntry, result: McpServerInfo},
 *   'mcp-servers.list': {params: McpServersListParams, result: McpServersListResult},
 *   'mcp-servers.probe': {params: McpServerProbeParams, result: McpServerProbeResult},
 *   'mcp-servers.remove': {params: McpServerRemoveParams, result: McpServerRemoveResult},
 *   'pair.close': {params: PairCloseParams, result: PairCloseResult},
 *   'pair.create': {params: PairCreateParams, result: PairCreateResult},
 *   'pairs.list': {params: PairsListParams, result: PairsListResult},
 *   'ping': {params: PingParams, result: PingResult},
 *   'proposal.respond': {params: ProposalRespondParams, result: ProposalRespondResult},
 *   'push.key': {params: PushKeyParams, result: PushKeyResult},
 *   'push.subscribe': {params: PushSubscribeParams, result: PushSubscribeResult},
 *   'push.subscriptions': {params: PushSubscriptionsParams, result: PushSubscriptionsResult},
 *   'push.unsubscribe': {params: PushUnsubscribeParams, result: PushUnsubscribeResult},
 *   'question.answer': {params: QuestionAnswerParams, result: QuestionAnswerResult},
 *   'session.archive': {params: SessionArchiveParams, result: SessionArchiveResult},
 *   'session.changes': {params: SessionChangesParams, result: SessionChangesResult},
 *   'session.check': {params: SessionCheckParams, result: SessionCheckResult},
 *   'session.checkpoints': {params: SessionCheckpointsParams, result: SessionCheckpointsResult},
 *   'session.commands': {params: SessionCommandsParams, result: SessionCommandsResult},
 *   'session.configure': {params: SessionConfigureParams, result: SessionConfigureResult},
 *   'session.create': {params: SessionCreateParams, result: SessionCreateResult},
 *   'session.diff': {params: SessionDiffParams, result: SessionDiffResult},
 *   'session.discard': {params: SessionDiscardParams, result: SessionDiscardResult},
 *   'session.events': {params: SessionEventsParams, result: SessionEventsResult},
 *   'session.file-read': {params: SessionFileReadParams, result: SessionFileReadResult},
 *   'session.file-write': {params: SessionFileWriteParams, result: SessionFileWriteResult},
 *   'session.files': {params: SessionFilesParams, result: SessionFilesResult},
 *   'session.fork': {params: SessionForkParams, result: SessionForkResult},
 *   'session.get': {params: SessionGetParams, result: SessionGetResult},
 *   'session.handoff': {params: SessionHandoffParams, result: SessionHandoffResult},
 *   'session.mcp-token': {params: SessionMcpTokenParams, result: SessionMcpTokenResult},
 *   'session.merge': {params: SessionMergeParams, result: SessionMergeResult},
 *   'session.push': {params: SessionPushParams, result: SessionPushResult},
 *   'session.rebase': {params: SessionRebaseParams, result: SessionRebaseResult},
 *   'session.restore': {params: SessionRestoreParams, result: SessionRestoreResult},
 *   'session.review-by': {params: SessionReviewByParams, result: SessionReviewByResult},
 *   'session.run': {params: SessionRunParams, result: SessionRunResult},
 *   'session.run-log': {params: SessionRunLogParams, result: SessionRunLogResult},
 *   'session.run-stop': {params: SessionRunStopParams, result: SessionRunResult},
 *   'session.schedule': {params: SessionScheduleParams, result: SessionScheduleResult},
 *   'session.schedule-cancel': {params: SessionScheduleCancelParams, result: SessionScheduleCancelResult},
 *   'session.schedules': {params: SessionSchedulesParams, result: SessionSchedulesResult},
 *   'session.usage': {params: SessionUsageParams, result: SessionUsageResult},
 *   'sessions.list': {params: SessionsListParams, result: SessionsListResult},
 *   'sessions.running': {params: SessionsRunningParams, result: SessionsRunningResult},
 *   'sessions.watch': {params: SessionsWatchParams, result: SessionsListResult},
 *   'terminal.close': {params: TerminalCloseParams, result: TerminalCloseResult},
 *   'terminal.list': {params: TerminalListParams, result: TerminalListResult},
 *   'terminal.open': {params: TerminalOpenParams, result: TerminalInfo},
 *   'tool.call': {params: ToolCallParams, result: ToolCallResult},
 *   'user.get': {params: UserGetParams, result: UserGetResult},
 *   'vendors.list': {params: VendorsListParams, result: VendorsListResult},
 * }} Requests
 */

/**
 * REST bodies the page reads, by method and path.
 * @typedef {{
 *   'GET /pairs': PairsListResult,
 *   'GET /sessions/running': SessionsRunningResult,
 *   'GET /sessions/{id}/changes': GitState,
 *   'GET /sessions/{id}/changes/diff': FileDiff,
 *   'GET /sessions/{id}/files': DirListing,
 *   'GET /sessions/{id}/files/content': FileContent,
 *   'GET /sessions/{id}/queue': ChatQueueResult,
 *   'GET /sessions/{id}/schedules': SessionSchedulesResult,
 *   'GET /sessions/{id}/usage': UsageSummary,
 *   'GET /vendors': VendorsListResult,
 *   'POST /sessions/{id}/discard': SessionDiscardResult,
 *   'POST /sessions/{id}/merge': SessionMergeResult,
 *   'PUT /sessions/{id}/files/content': FileSaved,
 *   'error': ErrorBody,
 *   'event delegation changes': ChangeSummary,
 *   'event git_state': GitState,
 * }} Rest
 */

/**
 * A history event: the envelope (`sessionId`, `seq`, `ts`, `turnId?`) and one
 * payload, told apart by `kind`.
 * @typedef {Event} HistoryEvent
 */

/**
 * A client frame: a request's fields with its `type` and optional `requestId`.
 * @typedef {{type: keyof Requests, requestId?: string} & Record<string, any>} ClientFrame
 */

export {};
