//! tandem's wire contract: every type that crosses the WebSocket, REST or MCP boundary.
//!
//! This crate holds data shapes and their (de)serialization only: no actors, no I/O.
//! All JSON is camelCase. Client frames carry `type`, server frames carry `kind`.
//! The human-readable description lives in `docs/PROTOCOL.md` at the repository root;
//! keep the two in step.

pub mod client;
pub mod content;
pub mod devices;
pub mod error;
pub mod event;
pub mod external;
pub mod fleet;
pub mod history;
pub mod ids;
pub mod incoming;
pub mod loops;
pub mod mcp;
pub mod mcp_servers;
pub mod openapi;
pub mod operations;
pub mod pair;
pub mod permission;
pub mod push;
pub mod queries;
pub mod question;
pub mod rest;
pub mod rest_control;
pub mod results;
pub mod review;
pub mod schedule;
pub mod scripts;
pub mod server;
pub mod session;
pub mod strict;
pub mod terminals;
pub mod tools;
pub mod workspace;

pub use client::{parse_client_frame, ClientFrame, ClientRequest, FrameError};
pub use content::{ContentBlock, HistoryBlock, MessageContent};
pub use error::ErrorCode;
pub use event::{Event, EventBody, TurnStatus, MAX_SEQ};
pub use history::{FileChange, FileChangeKind, PlanEntry, TurnUsage};
pub use ids::{DelegationId, PairId, RequestId, SessionId, TurnId, UploadId, UserId, VendorId};
pub use permission::{
    ApprovalAsk, Decider, PermissionChoice, PermissionKind, PermissionRule, RememberScope,
};
pub use server::ServerFrame;
pub use session::{
    Attention, BackgroundTask, ForkConversation, ForkedFrom, PermissionMode, Role, SessionInfo,
    SessionStatus, SupersededRange, TaskType, Visibility,
};
