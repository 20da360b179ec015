//! Test support: start the real `tandem` server on a free loopback port, inside the
//! test process or (where the process itself is tested: killed, crashed, its memory)
//! as a child process, and talk to it over real sockets (WebSocket and REST via awc),
//! in JSON or typed ([`typed`]).
//!
//! Every server started here is stopped when its [`Server`] is dropped, so a failing
//! test never leaves a process behind. Data directories are removed the same way.

pub mod bench;
pub mod events;
pub mod images;
pub mod json_schema;
pub mod mcp_ping;
pub mod mock_anthropic;
pub mod mock_openai;
pub mod nats;
pub mod poll;
pub mod procs;
pub mod push_service;
pub mod raw_socket;
pub mod server;
pub mod transcripts;
pub mod typed;
pub mod vendor_clis;
pub mod webdriver;
pub mod ws;

pub use nats::NatsServer;
pub use poll::{eventually, eventually_within};
pub use push_service::PushService;
pub use server::{Api, ConfiguredServer, Server, ServerOptions, TempDir};
pub use typed::Refused;
pub use webdriver::Browser;
pub use ws::WsClient;
