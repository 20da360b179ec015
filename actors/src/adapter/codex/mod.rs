//! The Codex adapter: drives the real `codex app-server` over JSON-RPC on stdio.
//!
//! - [`rpc`]: the transport: one process, requests correlated by id with a timeout,
//!   notifications and server requests routed by `threadId`, stderr tail, exit.
//! - [`server`]: one [`server::AppServer`] actor per owner (its process is shared by
//!   that owner's Codex sessions) and the [`CodexHub`] that finds it.
//! - [`thread`]: the adapter actor of one session: its Codex thread, turns,
//!   interrupts, approvals and background terminals.
//! - [`mapping`]: a turn's notifications → our history events.
//! - [`wire`]: typed serde shapes of the app-server messages we use.

pub mod mapping;
pub mod rpc;
pub mod server;
pub mod shown;
pub mod thread;
pub mod wire;

#[cfg(test)]
mod schema_check;

use actix::prelude::*;

pub use server::{CodexHub, Limits};

use crate::adapter::messages::AdapterCommand;
use crate::adapter::{AdapterContext, VendorProcess};
use crate::error::RuntimeError;

/// Starts the adapter actor for one Codex session (the owner's app-server starts with
/// its first turn).
pub fn start(
    ctx: AdapterContext,
    hub: &CodexHub,
) -> Result<Recipient<AdapterCommand>, RuntimeError> {
    let process = ctx
        .process
        .clone()
        .ok_or_else(|| RuntimeError::VendorNotInstalled("codex".into()))?;
    let server = hub.server_for(&ctx.owner_id, &process);
    Ok(thread::CodexThread::new(ctx, server, hub.limits)
        .start()
        .recipient())
}

/// What a short-lived app-server says about itself: its models and its login.
#[derive(Debug, Default)]
pub struct AppServerFacts {
    /// `model/list` (hidden ones left out), the default first; `None` when it could
    /// not be read.
    pub models: Option<Vec<String>>,
    /// The one `model/list` marks as the default.
    pub default_model: Option<String>,
    /// `account/read`: `Some(false)` when the provider needs an OpenAI login and
    /// there is none; `None` when it could not be read.
    pub logged_in: Option<bool>,
}

/// Starts a short-lived app-server and asks it for [`AppServerFacts`] (no model is
/// called, so no tokens are spent); `None` when it does not start or initialize.
pub async fn probe(process: &VendorProcess) -> Option<AppServerFacts> {
    let limits = Limits::from_env();
    let mut cmd = process.command();
    cmd.arg("app-server");
    let conn = rpc::Connection::spawn(cmd, 0, None).ok()?;
    let init = wire::InitializeParams {
        client_info: wire::ClientInfo {
            name: "tandem".into(),
            title: "tandem".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        capabilities: wire::InitializeCapabilities {
            experimental_api: true,
            opt_out_notification_methods: Vec::new(),
        },
    };
    conn.request::<_, wire::InitializeResponse>(wire::method::INITIALIZE, &init, limits.request)
        .await
        .ok()?;
    conn.notify(wire::method::INITIALIZED, &shown::Empty {});
    let account: Option<wire::GetAccountResponse> = conn
        .request(
            wire::method::ACCOUNT_READ,
            &wire::GetAccountParams {
                refresh_token: false,
            },
            limits.request,
        )
        .await
        .ok();
    let listed = list_models(&conn, limits.request).await;
    let default_model = listed
        .as_ref()
        .and_then(|l| l.iter().find(|m| m.is_default).map(|m| m.model.clone()));
    let models = listed.map(|list| {
        // The default first, so the list's head is what a session gets by default.
        let (default, rest): (Vec<_>, Vec<_>) = list.into_iter().partition(|m| m.is_default);
        default.into_iter().chain(rest).map(|m| m.model).collect()
    });
    Some(AppServerFacts {
        models,
        default_model,
        logged_in: account.map(|a| !a.requires_openai_auth || a.account.is_some()),
    })
}

/// The models `model/list` reports (hidden ones left out), every page.
async fn list_models(
    conn: &rpc::Connection,
    timeout: std::time::Duration,
) -> Option<Vec<wire::Model>> {
    let mut models = Vec::new();
    let mut cursor = None;
    loop {
        let page: wire::ModelListResponse = conn
            .request(
                wire::method::MODEL_LIST,
                &wire::ModelListParams {
                    cursor: cursor.take(),
                },
                timeout,
            )
            .await
            .ok()?;
        models.extend(page.data.into_iter().filter(|m| !m.hidden));
        match page.next_cursor {
            Some(next) if !next.is_empty() => cursor = Some(next),
            _ => return Some(models),
        }
    }
}
