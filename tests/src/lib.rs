//! Test support: start the real `tandem` server as a child process on a free loopback
//! port, and talk to it over real sockets (WebSocket via awc, REST via awc).
//!
//! Every server started here is killed when its [`Server`] is dropped, so a failing
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
pub mod vendor_clis;
pub mod webdriver;
pub mod ws;

pub use nats::NatsServer;
pub use poll::{eventually, eventually_within};
pub use push_service::PushService;
pub use server::{Api, ConfiguredServer, Server, ServerOptions, TempDir};
pub use webdriver::Browser;
pub use ws::WsClient;
