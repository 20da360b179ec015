//! Checks the [`super::wire`] types against the JSON schema the pinned `codex` binary
//! generates (`codex app-server generate-json-schema --experimental`).
//!
//! For every message shape we use, a fully populated value of our type is checked
//! against the schema's definition: every field we write or read must exist there with
//! a compatible type (enum values included); what we send must carry every field the
//! schema requires; and every field we cannot do without when reading (removing it
//! makes our parse fail) must be one the schema marks required. Method names we send
//! or handle must be ones the binary knows.
//!
//! The binary is `TANDEM_TEST_CODEX_BIN` or the one `.ci/run` installs under
//! `.vendor-clis`; without it the test prints why and passes, except under CI.

mod schema;

use serde_json::json;

use super::wire::*;
use schema::*;

fn turn() -> Turn {
    Turn {
        id: "t".into(),
        status: TurnStatus::Failed,
        error: Some(TurnError {
            message: "m".into(),
            additional_details: Some("d".into()),
            codex_error_info: Some(serde_json::json!("usageLimitExceeded")),
        }),
    }
}

fn items() -> Vec<ThreadItem> {
    vec![
        ThreadItem::AgentMessage {
            id: "a".into(),
            text: "hi".into(),
        },
        ThreadItem::Reasoning {
            id: "r".into(),
            summary: vec!["s".into()],
            content: vec!["c".into()],
        },
        ThreadItem::CommandExecution {
            id: "c".into(),
            command: "ls".into(),
            cwd: Some("/w".into()),
            status: ItemStatus::Declined,
            aggregated_output: Some("out".into()),
            exit_code: Some(1),
            process_id: Some("9".into()),
        },
        ThreadItem::FileChange {
            id: "f".into(),
            changes: vec![json!({"path": "a.txt", "kind": {"type": "add"}, "diff": "+x"})],
            status: ItemStatus::Completed,
        },
        ThreadItem::McpToolCall {
            id: "m".into(),
            server: "tandem".into(),
            tool: "send_to_partner".into(),
            arguments: json!({"message": "x"}),
            status: ItemStatus::Failed,
            result: Some(json!({"content": []})),
            error: Some(McpToolCallError {
                message: "no".into(),
            }),
        },
        ThreadItem::DynamicToolCall {
            id: "d".into(),
            tool: "t".into(),
            arguments: json!({}),
            status: ItemStatus::InProgress,
            content_items: Some(json!([{"type": "inputText", "text": "x"}])),
            success: Some(true),
        },
        ThreadItem::WebSearch {
            id: "w".into(),
            query: "q".into(),
        },
    ]
}

#[test]
fn wire_types_match_the_pinned_binarys_schema() {
    let Some(bin) = codex_bin() else {
        if std::env::var_os("CI").is_some() {
            panic!("the pinned codex CLI is not installed, but CI must have it (see .ci/run)");
        }
        eprintln!("skipped: the pinned codex CLI is not installed (run .ci/run's install steps)");
        return;
    };
    let schema = Schema::generate(&bin);
    let mut errors = Vec::new();

    // Requests we send and their results.
    sent(
        &schema,
        "InitializeParams",
        &InitializeParams {
            client_info: ClientInfo {
                name: "n".into(),
                title: "t".into(),
                version: "v".into(),
            },
            capabilities: InitializeCapabilities {
                experimental_api: true,
                opt_out_notification_methods: vec!["x".into()],
            },
        },
        &mut errors,
    );
    read(
        &schema,
        "InitializeResponse",
        &InitializeResponse {
            user_agent: "u".into(),
            codex_home: Some("/h".into()),
        },
        &mut errors,
    );
    for (policy, sandbox) in [
        (ApprovalPolicy::Untrusted, SandboxMode::ReadOnly),
        (ApprovalPolicy::OnRequest, SandboxMode::WorkspaceWrite),
        (ApprovalPolicy::Never, SandboxMode::DangerFullAccess),
    ] {
        sent(
            &schema,
            "ThreadStartParams",
            &ThreadStartParams {
                cwd: "/w".into(),
                approval_policy: policy,
                sandbox,
                model: Some("m".into()),
                developer_instructions: Some("i".into()),
                config: Some(json!({"mcp_servers": {}})),
            },
            &mut errors,
        );
        sent(
            &schema,
            "ThreadResumeParams",
            &ThreadResumeParams {
                thread_id: "t".into(),
                cwd: "/w".into(),
                approval_policy: policy,
                sandbox,
                model: Some("m".into()),
                developer_instructions: Some("i".into()),
                config: Some(json!({})),
                exclude_turns: true,
            },
            &mut errors,
        );
        sent(
            &schema,
            "ThreadForkParams",
            &ThreadForkParams {
                thread_id: "t".into(),
                before_turn_id: Some("turn".into()),
                cwd: "/w".into(),
                approval_policy: policy,
                sandbox,
                model: Some("m".into()),
                developer_instructions: Some("i".into()),
                config: Some(json!({})),
                exclude_turns: true,
            },
            &mut errors,
        );
        sent(
            &schema,
            "TurnStartParams",
            &TurnStartParams {
                thread_id: "t".into(),
                input: vec![UserInput::Text {
                    text: "x".into(),
                    text_elements: Vec::new(),
                }],
                model: Some("m".into()),
                effort: Some("high".into()),
                approval_policy: Some(policy),
                sandbox_policy: Some(sandbox.into()),
            },
            &mut errors,
        );
    }
    sent(
        &schema,
        "ThreadTurnsListParams",
        &ThreadTurnsListParams {
            thread_id: "t".into(),
            limit: 2,
            sort_direction: "desc",
        },
        &mut errors,
    );
    read(
        &schema,
        "ThreadTurnsListResponse",
        &ThreadTurnsListResponse {
            data: vec![TurnRef { id: "turn".into() }],
        },
        &mut errors,
    );
    for def in [
        "ThreadStartResponse",
        "ThreadResumeResponse",
        "ThreadForkResponse",
    ] {
        read(
            &schema,
            def,
            &ThreadResponse {
                thread: Thread { id: "t".into() },
            },
            &mut errors,
        );
    }
    read(
        &schema,
        "TurnStartResponse",
        &TurnStartResponse { turn: turn() },
        &mut errors,
    );
    sent(
        &schema,
        "TurnInterruptParams",
        &TurnInterruptParams {
            thread_id: "t".into(),
            turn_id: "u".into(),
        },
        &mut errors,
    );
    sent(
        &schema,
        "ThreadBackgroundTerminalsListParams",
        &BackgroundTerminalsListParams {
            thread_id: "t".into(),
            cursor: Some("c".into()),
        },
        &mut errors,
    );
    read(
        &schema,
        "ThreadBackgroundTerminalsListResponse",
        &BackgroundTerminalsListResponse {
            data: vec![BackgroundTerminal {
                item_id: "i".into(),
                process_id: "p".into(),
                command: "sleep 9".into(),
            }],
            next_cursor: Some("n".into()),
        },
        &mut errors,
    );
    sent(
        &schema,
        "ThreadBackgroundTerminalsTerminateParams",
        &BackgroundTerminalsTerminateParams {
            thread_id: "t".into(),
            process_id: "p".into(),
        },
        &mut errors,
    );
    read(
        &schema,
        "ThreadBackgroundTerminalsTerminateResponse",
        &BackgroundTerminalsTerminateResponse { terminated: true },
        &mut errors,
    );
    sent(
        &schema,
        "ModelListParams",
        &ModelListParams {
            cursor: Some("c".into()),
        },
        &mut errors,
    );
    read(
        &schema,
        "ModelListResponse",
        &ModelListResponse {
            data: vec![Model {
                model: "m".into(),
                hidden: false,
                is_default: true,
            }],
            next_cursor: None,
        },
        &mut errors,
    );

    // Notifications.
    for def in ["TurnStartedNotification", "TurnCompletedNotification"] {
        read(
            &schema,
            def,
            &TurnNotification {
                thread_id: "t".into(),
                turn: turn(),
            },
            &mut errors,
        );
    }
    for item in items() {
        for def in ["ItemStartedNotification", "ItemCompletedNotification"] {
            read(
                &schema,
                def,
                &ItemNotification {
                    thread_id: "t".into(),
                    turn_id: "u".into(),
                    item: item.clone(),
                },
                &mut errors,
            );
        }
        read(&schema, "ThreadItem", &item, &mut errors);
    }
    for def in [
        "AgentMessageDeltaNotification",
        "ReasoningSummaryTextDeltaNotification",
        "ReasoningTextDeltaNotification",
    ] {
        read(
            &schema,
            def,
            &DeltaNotification {
                thread_id: "t".into(),
                turn_id: "u".into(),
                item_id: "i".into(),
                delta: "d".into(),
            },
            &mut errors,
        );
    }
    let usage = TokenUsageBreakdown {
        input_tokens: 1,
        cached_input_tokens: 1,
        output_tokens: 1,
        reasoning_output_tokens: 1,
        total_tokens: 4,
    };
    read(
        &schema,
        "ThreadTokenUsageUpdatedNotification",
        &TokenUsageNotification {
            thread_id: "t".into(),
            turn_id: "u".into(),
            token_usage: ThreadTokenUsage {
                last: usage,
                model_context_window: Some(1000),
            },
        },
        &mut errors,
    );
    read(
        &schema,
        "ErrorNotification",
        &ErrorNotification {
            thread_id: "t".into(),
            turn_id: "u".into(),
            error: turn()
                .error
                .unwrap_or_else(|| panic!("sample has an error")),
            will_retry: true,
        },
        &mut errors,
    );
    read(
        &schema,
        "ServerRequestResolvedNotification",
        &ServerRequestResolved {
            thread_id: "t".into(),
            request_id: RequestId::Number(3),
        },
        &mut errors,
    );

    // Server requests and our answers.
    read(
        &schema,
        "CommandExecutionRequestApprovalParams",
        &CommandApprovalParams {
            thread_id: "t".into(),
            turn_id: "u".into(),
            item_id: "i".into(),
            command: Some("ls".into()),
            cwd: Some("/w".into()),
            reason: Some("r".into()),
        },
        &mut errors,
    );
    read(
        &schema,
        "FileChangeRequestApprovalParams",
        &FileChangeApprovalParams {
            thread_id: "t".into(),
            turn_id: "u".into(),
            item_id: "i".into(),
            reason: Some("r".into()),
            grant_root: Some("/w".into()),
        },
        &mut errors,
    );
    read(
        &schema,
        "PermissionsRequestApprovalParams",
        &PermissionsApprovalParams {
            thread_id: "t".into(),
            turn_id: "u".into(),
            item_id: "i".into(),
            permissions: json!({}),
            reason: Some("r".into()),
        },
        &mut errors,
    );
    read(
        &schema,
        "McpServerElicitationRequestParams",
        &ElicitationParams {
            thread_id: "t".into(),
            server_name: "s".into(),
            message: Some("m".into()),
            meta: Some(json!({"tool_name": "x"})),
        },
        &mut errors,
    );
    for decision in [
        ApprovalDecision::Accept,
        ApprovalDecision::Decline,
        ApprovalDecision::Cancel,
    ] {
        for def in [
            "CommandExecutionRequestApprovalResponse",
            "FileChangeRequestApprovalResponse",
        ] {
            sent(&schema, def, &ApprovalResponse { decision }, &mut errors);
        }
    }
    sent(
        &schema,
        "PermissionsRequestApprovalResponse",
        &PermissionsApprovalResponse {
            permissions: json!({}),
        },
        &mut errors,
    );
    for (action, content) in [
        (ElicitationAction::Accept, Some(json!({}))),
        (ElicitationAction::Decline, None),
        (ElicitationAction::Cancel, None),
    ] {
        sent(
            &schema,
            "McpServerElicitationRequestResponse",
            &ElicitationResponse { action, content },
            &mut errors,
        );
    }

    // Method names.
    let client = schema.methods("ClientRequest");
    let notifications = schema.methods("ServerNotification");
    let requests = schema.methods("ServerRequest");
    for m in [
        method::INITIALIZE,
        method::THREAD_START,
        method::THREAD_RESUME,
        method::THREAD_TURNS_LIST,
        method::THREAD_FORK,
        method::TURN_START,
        method::TURN_INTERRUPT,
        method::TERMINALS_LIST,
        method::TERMINALS_TERMINATE,
        method::MODEL_LIST,
    ] {
        if !client.contains(m) {
            errors.push(format!("client request {m} is unknown to the binary"));
        }
    }
    let ours = [
        method::TURN_STARTED,
        method::TURN_COMPLETED,
        method::ITEM_STARTED,
        method::ITEM_COMPLETED,
        method::AGENT_MESSAGE_DELTA,
        method::REASONING_SUMMARY_DELTA,
        method::REASONING_TEXT_DELTA,
        method::TOKEN_USAGE,
        method::ERROR,
        method::REQUEST_RESOLVED,
    ];
    for m in ours.iter().chain(method::OPTED_OUT) {
        if !notifications.contains(*m) {
            errors.push(format!("notification {m} is unknown to the binary"));
        }
    }
    for m in [
        method::COMMAND_APPROVAL,
        method::FILE_CHANGE_APPROVAL,
        method::PERMISSIONS_APPROVAL,
        method::ELICITATION,
    ] {
        if !requests.contains(m) {
            errors.push(format!("server request {m} is unknown to the binary"));
        }
    }
    let notification_defs = schema.methods("ClientNotification");
    if !notification_defs.contains(method::INITIALIZED) {
        errors.push("client notification initialized is unknown to the binary".into());
    }

    assert!(
        errors.is_empty(),
        "our wire types disagree with the binary's schema:\n{}",
        errors.join("\n")
    );
}
