//! tandem's HTTP gateway: REST under `/api/v1`, the WebSocket at `/ws`, `/metrics`,
//! the browser page (`/`, `/assets/`), and the `tandem` command line. Only this crate
//! knows HTTP and WebSocket framing.

pub mod acp_agent;
pub mod auth;
pub mod body_timeout;
pub mod cli;
pub mod client;
pub mod cluster_rpc;
pub mod cluster_subscribe;
pub mod cluster_uploads;
pub mod cluster_visible;
pub mod cluster_wire;
pub mod config_file;
pub mod confine;
pub mod doctor;
pub mod error;
#[cfg(feature = "failpoints")]
pub mod failpoints;
pub mod guard;
#[cfg(feature = "test-hooks")]
pub mod holds;
pub mod limits;
pub mod listeners;
pub mod long_uri;
pub mod mcp;
pub mod metrics;
pub mod operation;
pub mod pairing;
pub mod request;
pub mod rest;
pub mod rest_control;
pub mod rest_devices;
pub mod rest_edit;
pub mod rest_loops;
pub mod rest_push;
pub mod rest_terminals;
pub mod rest_workspace;
pub mod server;
pub mod state;
pub mod tls;
pub mod tty;
pub mod uploads;
pub mod web;
pub mod ws;
pub mod ws_io;
pub mod ws_limit;
pub mod ws_requests;
pub mod ws_terminal;

pub use server::{serve, ServeOptions};
