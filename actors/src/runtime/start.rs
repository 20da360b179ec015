//! [`Runtime::start`], in its steps: settle the store (what a previous process left),
//! start the gateway and the store writer, build the services, then bring the stored
//! sessions and pairs back.

use std::sync::{Arc, OnceLock, Weak};

use actix::prelude::*;

use super::{
    handoff, judge, loading, reconcile, recovery, review_by, AuthService, ClientService, CommitTap,
    FileService, Inner, McpServerService, PairService, PeerService, PushService, Runtime,
    RuntimeRef, ScheduleService, SessionAccess, SessionService, Started, TerminalService,
    UploadService, VendorService, WorkspaceService,
};
use crate::adapter::{VendorCatalog, VendorId};
use crate::config::RuntimeConfig;
use crate::error::RuntimeError;
use crate::gateway::Gateway;
use crate::ids::SessionId;
use crate::mcp_tokens::McpTokens;
use crate::metrics::Metrics;
use crate::pair::{pushback_resume, Delegate};
use crate::record::SessionRecord;
use crate::record::{DelegationRecord, PairRecord};
use crate::registry::Registry;
use crate::session::Services;
use crate::session::{ProposalProgress, Resume};
use crate::store::{LoadedSession, Store, StoreWriter, WriterHooks};
use reconcile::ProposalFix;
use tandem_protocol::pair::ProposalStatus;

/// The store once what a previous process left is settled, and what start-up read.
struct Settled {
    store: Store,
    new_admin_token: Option<String>,
    /// Sessions that start their actor now.
    active: Vec<LoadedSession>,
    /// Sessions kept without an actor until a request needs one.
    dormant: Vec<loading::Dormant>,
    /// What the reconciliation leaves for after the actors started.
    after_start: reconcile::AfterStart,
}

/// Opens the store, upgrades old histories, makes the admin, loads the sessions and
/// pairs, closes turns a previous process left open, and settles half-done pairs.
fn settle_store(config: &RuntimeConfig) -> Result<Settled, RuntimeError> {
    let store = Store::open(&config.data_dir)?;
    crate::adapter::old_history::upgrade(&store)?;
    let new_admin_token = store.ensure_admin()?;
    let pairs = store.load_pairs()?;
    let loading::Loaded {
        mut active,
        dormant,
    } = loading::load(&store, &pairs, config.node.as_ref())?;
    recovery::recover_interrupted_turns(&store, &mut active)?;
    let plan = {
        let records: Vec<&SessionRecord> = active.iter().map(|s| &s.record).collect();
        reconcile::plan(&pairs, &records)
    };
    let after_start = reconcile::apply(&store, &mut active, plan)?;
    Ok(Settled {
        store,
        new_admin_token,
        active,
        dormant,
        after_start,
    })
}

/// A new arbiter whose thread carries `name` (at most 15 bytes), so that `top -H`,
/// `/proc/<pid>/task/*/comm` and the benchmarks tell it from the HTTP workers.
fn named_arbiter(name: &'static std::ffi::CStr) -> Arbiter {
    let arbiter = Arbiter::new();
    arbiter.spawn_fn(move || {
        if let Err(e) = rustix::thread::set_name(name) {
            tracing::debug!(error = %e, "naming a thread");
        }
    });
    arbiter
}

/// Starts the gateway on a thread of its own (the arbiter must live as long as it).
fn start_gateway(
    config: &RuntimeConfig,
    store: &Store,
    metrics: &Arc<Metrics>,
) -> (Arbiter, Addr<Gateway>) {
    let arbiter = named_arbiter(c"tandem-gateway");
    let (store, metrics) = (store.clone(), metrics.clone());
    let (ring, stall, total_cap) = (
        config.ring_events,
        config.client_stall,
        config.total_queue_bytes,
    );
    let gateway = Gateway::start_in_arbiter(&arbiter.handle(), move |_| {
        Gateway::new(store, metrics, ring, stall, total_cap)
    });
    (arbiter, gateway)
}

/// Starts the store writer: each commit goes to `tap` (once set) and the gateway; a
/// failed commit to the runtime behind `failures` (once set; the writer starts before
/// the runtime exists); a store that keeps failing stops the process.
fn start_writer(
    config: &RuntimeConfig,
    store: &Store,
    metrics: &Arc<Metrics>,
    gateway: Addr<Gateway>,
    tap: Arc<OnceLock<CommitTap>>,
    failures: Arc<OnceLock<RuntimeRef>>,
) -> Result<StoreWriter, RuntimeError> {
    let db_path = store.path().to_path_buf();
    let give_up_after = config.store_give_up;
    StoreWriter::start(
        store,
        config.commit_batch,
        give_up_after,
        metrics.clone(),
        WriterHooks {
            on_commit: Box::new(move |events| {
                if let Some(tap) = tap.get() {
                    tap(&events);
                }
                gateway.do_send(crate::gateway::Committed(events))
            }),
            on_failure: Box::new(move |failure| {
                if let Some(rt) = failures.get().and_then(RuntimeRef::upgrade) {
                    rt.store_failed(failure);
                }
            }),
            on_give_up: Box::new(move |error| {
                tracing::error!(path = %db_path.display(), %error, "store keeps failing; stopping");
                eprintln!(
                    "tandem: the database {} could not be written for {} s ({error}); stopping",
                    db_path.display(),
                    give_up_after.as_secs()
                );
                std::process::exit(1);
            }),
        },
    )
}

/// The vendors configured and their catalog, with the models the configuration
/// adds.
fn vendors(config: &RuntimeConfig) -> (crate::adapter::Vendors, Arc<VendorCatalog>) {
    let vendors = crate::adapter::Vendors::from_config(&config.vendors);
    let catalog = Arc::new(VendorCatalog::new(vendors.specs()));
    for (id, models) in &config.configured_models {
        catalog.add_configured_models(&VendorId::from(id.as_str()), models);
    }
    (vendors, catalog)
}

/// What every session and pair actor is built with; `weak` is the runtime being
/// built, which the agent tools, reviews, loop judges and failover reach.
fn actor_services(
    config: &RuntimeConfig,
    store: &Store,
    parts: ActorParts,
    tools: impl FnOnce(RuntimeRef) -> crate::adapter::Tools,
    weak: &Weak<Inner>,
) -> Services {
    let runtime = || RuntimeRef(weak.clone());
    let (vendors, catalog) = vendors(config);
    Services {
        writer: parts.writer,
        gateway: parts.gateway,
        metrics: parts.metrics,
        catalog,
        vendors,
        mcp: McpTokens::default(),
        mcp_servers: parts.mcp_servers,
        tools: tools(runtime()),
        sessions: parts.sessions,
        store: store.clone(),
        owners: crate::owners::Owners::new(store.clone()),
        outbox: Default::default(),
        cluster: Default::default(),
        overlaps: Default::default(),
        checks: crate::checks::CheckEnv {
            launcher: config.confinement.launcher.clone(),
            private: config.private_paths(),
            reviewer: Some(review_by::delegation_reviewer(runtime())),
            judge: Some(judge::loop_judge(runtime())),
        },
        scripts: crate::scripts::Scripts::new(
            config.confinement.launcher.clone(),
            config.worktree_ports.clone(),
            &config.data_dir,
        ),
        push: parts.push,
        failover: Some(handoff::failover(runtime())),
        fleet: crate::adapter::fleet::Fleet::new(
            config.max_live_processes,
            config.max_process_rss_mib.map(|mib| mib << 20),
        ),
        turns: crate::turn_slots::TurnSlots::new(config.max_concurrent_turns),
    }
}

/// The MCP servers the configuration names and those users added (stored).
fn mcp_servers(
    config: &RuntimeConfig,
    store: &Store,
) -> Result<crate::adapter::mcp_servers::registry::McpServers, RuntimeError> {
    let added = store.mcp_servers()?;
    Ok(crate::adapter::mcp_servers::registry::McpServers::new(
        config.mcp_servers.clone(),
        added
            .into_iter()
            .map(|(user, entry)| (user, entry.into()))
            .collect(),
    ))
}

/// The parts of [`Services`] made before the runtime is.
struct ActorParts {
    writer: StoreWriter,
    gateway: Addr<Gateway>,
    metrics: Arc<Metrics>,
    sessions: Registry<SessionId, crate::session::SessionHandle>,
    push: crate::push::Push,
    /// The MCP servers the configuration and the users added.
    mcp_servers: crate::adapter::mcp_servers::registry::McpServers,
}

/// What [`Runtime::start`] opened before the services are built.
struct Opened {
    access: SessionAccess,
    store: Store,
    uploads: crate::uploads::Uploads,
    push: crate::push::Push,
    terminals: crate::terminals::Terminals,
    clients: ClientService,
    commit_tap: Arc<OnceLock<CommitTap>>,
    gateway_arbiter: Arbiter,
}

/// The runtime's state: the services with state of their own, built on the actors'
/// shared `services` and what start-up `opened`.
fn inner(config: Arc<RuntimeConfig>, services: Arc<Services>, opened: Opened) -> Inner {
    let Opened {
        access,
        store,
        uploads,
        push,
        terminals,
        clients,
        commit_tap,
        gateway_arbiter,
    } = opened;
    let sessions_arbiter = named_arbiter(c"tandem-sessions");
    Inner {
        access: access.clone(),
        store: store.clone(),
        services: services.clone(),
        pairs: PairService::new(
            access.clone(),
            services.clone(),
            config.node.clone(),
            sessions_arbiter.handle(),
        ),
        auth: AuthService::new(store.clone()),
        sessions: SessionService::new(
            access.clone(),
            services.clone(),
            store.clone(),
            config.max_sessions_per_user,
        ),
        sessions_arbiter,
        _gateway_arbiter: gateway_arbiter,
        clients,
        peers: PeerService::new(services.clone(), commit_tap),
        vendors: VendorService::new(services.clone(), config.clone()),
        uploads: UploadService::new(access.clone(), uploads),
        push: PushService::new(access.clone(), push),
        files: FileService::new(access.clone(), config.private_paths()),
        mcp_servers: McpServerService::new(
            services.mcp_servers.clone(),
            store.clone(),
            config.clone(),
        ),
        schedules: ScheduleService::new(access.clone(), services.catalog.clone()),
        workspaces: WorkspaceService::new(
            access.clone(),
            services.clone(),
            store.clone(),
            &config,
            terminals.clone(),
        ),
        terminals: TerminalService::new(access.clone(), terminals),
        external: Arc::default(),
        config,
    }
}

impl Runtime {
    /// Opens the store, closes turns a previous process left open, and starts the
    /// gateway, the store writer and one actor per stored session. Call inside an
    /// actix `System`.
    ///
    /// `tools` makes the tool host sessions hand their adapters; the crate's
    /// [`crate::start`] passes the agent tools built on this runtime.
    pub fn start(
        config: RuntimeConfig,
        tools: impl FnOnce(RuntimeRef) -> crate::adapter::Tools,
    ) -> Result<Started, RuntimeError> {
        let metrics = Arc::new(Metrics::default());
        let settled = settle_store(&config)?;
        let store = settled.store.clone();
        let (gateway_arbiter, gateway) = start_gateway(&config, &store, &metrics);
        let commit_tap: Arc<OnceLock<CommitTap>> = Arc::default();
        let failures_to: Arc<OnceLock<RuntimeRef>> = Arc::default();
        let writer = start_writer(
            &config,
            &store,
            &metrics,
            gateway.clone(),
            commit_tap.clone(),
            failures_to.clone(),
        )?;
        let uploads =
            crate::uploads::Uploads::open(&config.data_dir, store.clone(), config.uploads)?;
        let push = crate::push::Push::open(&config.data_dir, store.clone())?;
        let terminals = crate::terminals::Terminals::new(
            config.terminals.clone(),
            config.confinement.launcher.clone(),
        );
        terminals.start_sweeper();
        let sessions = Registry::default();
        let access = SessionAccess::new(sessions.clone());
        let clients = ClientService::new(
            access.clone(),
            gateway.clone(),
            store.clone(),
            metrics.clone(),
            push.clone(),
            config.client_queue_bytes,
        );
        let parts = ActorParts {
            writer,
            gateway,
            metrics,
            sessions,
            push: push.clone(),
            mcp_servers: mcp_servers(&config, &store)?,
        };
        let config = Arc::new(config);
        let opened = Opened {
            access,
            store,
            uploads,
            push,
            terminals,
            clients,
            commit_tap,
            gateway_arbiter,
        };
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let services = Arc::new(actor_services(&config, &opened.store, parts, tools, weak));
            inner(config, services, opened)
        });
        let runtime = Runtime { inner };
        let _ = failures_to.set(RuntimeRef(Arc::downgrade(&runtime.inner)));
        runtime.bring_back(settled.active, settled.dormant, settled.after_start);
        runtime.inner.vendors.probe_versions();
        Ok(Started {
            runtime,
            new_admin_token: settled.new_admin_token,
        })
    }

    /// Lists the stored sessions (starting the actors of those with work), restores
    /// live pairs, finishes what reconciliation left, recovers cut-short merges and
    /// discards, and puts spawned sessions still waiting for a slot back in their
    /// parent's queue.
    fn bring_back(
        &self,
        active: Vec<LoadedSession>,
        dormant: Vec<loading::Dormant>,
        after_start: reconcile::AfterStart,
    ) {
        for session in dormant {
            self.inner.sessions.count_owned(session.owner_id);
            self.register(session.id, session.shared, None);
        }
        let mut waiting_children: Vec<(SessionId, SessionId)> = Vec::new();
        for session in active {
            if let (Some(parent), true) = (
                session.record.parent_id.clone(),
                session.record.pending_prompt.is_some(),
            ) {
                waiting_children.push((parent, session.record.id.clone()));
            }
            self.inner
                .sessions
                .count_owned(session.record.owner_id.clone());
            self.spawn_session(session.record, session.last_seq);
        }
        let reconcile::AfterStart {
            start,
            cut_off,
            proposals,
        } = after_start;
        for record in start {
            self.inner.pairs.restore(record);
        }
        self.finish_after_start(cut_off, proposals);
        self.inner.workspaces.recover();
        for (parent, child) in waiting_children {
            if let Some(addr) = self.sessions().session_addr(&parent) {
                addr.do_send(crate::session::SpawnChildren {
                    children: vec![child],
                });
            }
        }
    }

    /// Start-up, once actors run: reports delegations cut off by a removed pair to
    /// their Drivers (once: keyed by the delegation id), and finishes accepted
    /// proposals that never reached their Worker.
    pub(super) fn finish_after_start(
        &self,
        cut_off: Vec<(PairRecord, DelegationRecord)>,
        proposals: Vec<ProposalFix>,
    ) {
        for (pair, delegation) in cut_off {
            if let Some(driver) = self.sessions().session_addr(&pair.driver_id) {
                crate::metrics::Metrics::inc(&self.inner.services.metrics.pushbacks);
                driver.do_send(pushback_resume(
                    &pair,
                    &delegation,
                    &reconcile::cut_off_outcome(&pair),
                ));
            }
        }
        for fix in proposals {
            match fix {
                ProposalFix::Running { .. } => {}
                ProposalFix::Fail {
                    driver_id,
                    proposal_id,
                    reason,
                } => {
                    if let Some(driver) = self.sessions().session_addr(&driver_id) {
                        driver.do_send(Resume::proposal_failed(&proposal_id, &reason));
                    }
                }
                ProposalFix::Delegate {
                    driver_id,
                    proposal_id,
                    pair_id,
                    message,
                } => {
                    let (Some(driver), Some((pair, worker_id))) = (
                        self.sessions().session_addr(&driver_id),
                        self.inner.pairs.parts(&pair_id),
                    ) else {
                        continue;
                    };
                    tracing::info!(proposal = %proposal_id, "delivering an accepted proposal's task after a restart");
                    // Running first, as on acceptance: a crash before the delegation
                    // is stored leaves `running` with no delegation, which the next
                    // start delegates again.
                    driver.do_send(ProposalProgress {
                        proposal_id: proposal_id.clone(),
                        status: ProposalStatus::Running,
                        worker_id: Some(worker_id),
                        pair_id: Some(pair_id),
                        error: None,
                    });
                    actix::spawn(async move {
                        let sent = pair
                            .send(Delegate {
                                message,
                                wait: false,
                                timeout: std::time::Duration::from_secs(1),
                                proposal_id: Some(proposal_id.clone()),
                            })
                            .await;
                        let error = match sent {
                            Ok(Ok(_)) => return,
                            Ok(Err(e)) => e.to_string(),
                            Err(e) => e.to_string(),
                        };
                        let _ = driver
                            .send(Resume::proposal_failed(&proposal_id, &error))
                            .await;
                    });
                }
            }
        }
    }
}
