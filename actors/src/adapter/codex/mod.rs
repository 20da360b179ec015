//! The Codex adapter: drives the real `codex app-server` over JSON-RPC on stdio.
//!
//! - [`rpc`]: the transport: one process, requests correlated by id with a timeout,
//!   notifications and server requests routed by `threadId`, stderr tail, exit.
//! - [`server`]: one [`server::AppServer`] actor per owner (its process is shared by
//!   that owner's Codex sessions) and the [`CodexHub`] that finds it.
//! - [`thread`]: the adapter actor of one session (built on the adapter core) and
//!   what it dispatches to: `turn` (a turn's life, interrupts, the unreachable-model
//!   guard), `plan` (loading the thread, per-turn settings), `approvals`,
//!   `terminals` (background terminals).
//! - [`mapping`]: a turn's notifications → our history events.
//! - [`wire`]: typed serde shapes of the app-server messages we use.

mod approvals;
pub mod mapping;
mod plan;
mod rewind;
pub mod rpc;
pub mod server;
pub mod shown;
mod terminals;
pub mod thread;
mod turn;
pub mod wire;

#[cfg(test)]
mod schema_check;

use actix::prelude::*;

pub use server::{CodexHub, Limits};

use crate::adapter::catalog::strings;
use crate::adapter::health::{self, CliFacts, CliProfile, Health, SupportedRange};
use crate::adapter::messages::AdapterCommand;
use crate::adapter::vendors::LocalFuture;
use crate::adapter::{
    AdapterContext, AdapterFactory, ConfiguredVendor, VendorId, VendorProcess, VendorSpec,
    CLI_CAPABILITIES,
};
use crate::error::RuntimeError;

/// What `GET /vendors`, `tandem doctor` and failed turns say about the Codex CLI.
pub const PROFILE: CliProfile = CliProfile {
    id: "codex",
    name: "Codex",
    range: SupportedRange {
        min: (0, 171, 0),
        below: (1, 0, 0),
    },
    install_hint: "install it (`npm install -g @openai/codex`) or set TANDEM_CODEX_BIN or `[vendors.codex] bin`",
    login_hint: "run `codex login`, or configure a model provider whose key (its `env_key`) is set in the environment tandem starts in",
    base_url_hint: "the model provider's base_url",
};

/// Checks the Codex CLI without spending tokens: version, then login and models from
/// a short-lived app-server (`account/read`, `model/list`). `None`: no binary found.
pub async fn check(process: Option<&VendorProcess>) -> Health {
    health::check(&PROFILE, process, |process| async move {
        match probe(&process).await {
            Some(facts) => CliFacts {
                logged_in: facts.logged_in,
                models: facts.models,
                default_model: facts.default_model,
            },
            None => CliFacts::default(),
        }
    })
    .await
}

/// Codex's catalog entry before its CLI has been asked (the model list is replaced by
/// what `model/list` reports).
pub fn spec() -> VendorSpec {
    let mut spec = VendorSpec {
        models: strings(&["gpt-5-codex", "gpt-5"]),
        effort_levels: strings(&["minimal", "low", "medium", "high", "xhigh"]),
        ..VendorSpec::new(VendorId::CODEX, "Codex", CLI_CAPABILITIES)
    };
    // `thread/fork`.
    spec.capabilities.push(super::FORK_CAPABILITY.into());
    spec
}

/// Codex in the vendor registry: starts one [`thread::CodexThread`] per session on
/// its owner's shared app-server.
pub struct Factory {
    /// The vendor id (`codex` unless configured otherwise).
    id: VendorId,
    /// Name from the config, if any.
    display_name: Option<String>,
    /// How to start `codex`.
    process: VendorProcess,
    /// The owners' app-servers.
    hub: CodexHub,
}

impl Factory {
    /// The adapter for `vendor` (whose protocol is Codex's).
    pub fn new(vendor: &ConfiguredVendor) -> Self {
        Factory {
            id: vendor.id.clone(),
            display_name: vendor.display_name.clone(),
            process: vendor.process.clone(),
            hub: CodexHub::default(),
        }
    }
}

impl AdapterFactory for Factory {
    fn spec(&self) -> VendorSpec {
        spec().configured(&self.id, self.display_name.as_deref())
    }

    fn start(&self, ctx: AdapterContext) -> Result<Recipient<AdapterCommand>, RuntimeError> {
        let server = self.hub.server_for(
            &ctx.owner_id,
            &ctx.cwd,
            &self.process,
            (&ctx.fleet, &self.id),
        );
        let confined = self.process.confine.is_some();
        Ok(
            thread::CodexThread::new(ctx, server, self.hub.limits, confined)
                .start()
                .recipient(),
        )
    }

    fn probe(&self) -> Option<LocalFuture<Health>> {
        let process = self.process.clone();
        Some(Box::pin(async move { check(Some(&process)).await }))
    }

    fn explain(&self, raw: String) -> String {
        health::explain(&PROFILE, raw)
    }
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
