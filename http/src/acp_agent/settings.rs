//! The session settings methods of the [`Agent`]: the `modes` and `configOptions`
//! that `session/new`, `session/load` and `session/resume` answer with,
//! `session/set_mode` and `session/set_config_option` (both `session.configure`),
//! (`session.configure`, `pair.create`, `pair.close`), and the updates that tell the
//! editor of a change made anywhere (`config_option_update`,
//! `current_mode_update`).

use serde_json::{json, Value};
use tandem_actors::adapter::acp::wire::RpcError;

use super::agent::{refused, string, Agent, Answer};
use super::config;
use super::link::Link;
use super::rpc::{error, INVALID_PARAMS};

/// How long the options told for a new pair wait for its Worker session to exist.
const WORKER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Agent {
    /// The server's vendors (`vendors.list`), asked once; none when the server
    /// refuses (the options then offer only what the session has).
    async fn vendors(&self, link: &Link) -> Vec<Value> {
        if let Some(vendors) = self.state.borrow().vendors.clone() {
            return vendors;
        }
        match link.call("vendors.list", json!({})).await {
            Ok(reply) => {
                let vendors = reply["vendors"].as_array().cloned().unwrap_or_default();
                self.state.borrow_mut().vendors = Some(vendors.clone());
                vendors
            }
            Err(e) => {
                tracing::warn!("vendors.list: {e}");
                Vec::new()
            }
        }
    }

    /// The Worker of `session` (a `SessionInfo`), when it is a paired Driver, and
    /// the workspace chosen for its next one.
    async fn pairing(&self, link: &Link, session: &Value) -> config::Pairing {
        let id = session["id"].as_str().unwrap_or_default();
        let chosen_workspace = self
            .state
            .borrow()
            .worker_workspace
            .get(id)
            .cloned()
            .unwrap_or_default();
        let mut pairing = config::Pairing {
            worker: None,
            chosen_workspace,
        };
        let (Some(pair_id), false) = (session["pairId"].as_str(), session["role"] == "worker")
        else {
            return pairing;
        };
        let pairs = match link.call("pairs.list", json!({})).await {
            Ok(reply) => reply,
            Err(e) => {
                tracing::warn!("pairs.list: {e}");
                return pairing;
            }
        };
        let worker_id = pairs["pairs"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .find(|p| p["pairId"] == pair_id && p["state"] != "closed")
            .and_then(|p| p["workerId"].as_str());
        if let Some(worker_id) = worker_id {
            pairing.worker = self.worker(link, pair_id, worker_id).await;
        }
        pairing
    }

    /// Pair `pair_id`'s Worker `worker_id` as the options show it: the pair, the
    /// Worker's vendor and workspace.
    async fn worker(
        &self,
        link: &Link,
        pair_id: &str,
        worker_id: &str,
    ) -> Option<(String, String, String)> {
        match link
            .call("session.get", json!({"sessionId": worker_id}))
            .await
        {
            Ok(reply) => {
                let worker = &reply["session"];
                let workspace = if worker["workspace"].is_object() {
                    "worktree"
                } else {
                    "shared"
                };
                Some((
                    pair_id.to_string(),
                    worker["vendor"].as_str().unwrap_or_default().to_string(),
                    workspace.to_string(),
                ))
            }
            Err(e) => {
                tracing::warn!("the Worker {worker_id}: {e}");
                None
            }
        }
    }

    /// The Worker of pair `pair_id` its Driver `driver_id` was just told of
    /// (`pair_created`). The Driver joins a new pair before its Worker session is
    /// made (its actor is what refuses a second Worker of the same name), and the
    /// pair is listed (`pairs.list`) once both joined: until then it is asked again,
    /// pausing longer each time, for at most [`WORKER_WAIT`], unless the Driver no
    /// longer names the pair among its Workers (refused, or closed meanwhile).
    async fn new_worker(
        &self,
        link: &Link,
        driver_id: &str,
        pair_id: &str,
        worker_id: &str,
    ) -> Option<(String, String, String)> {
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(10);
        loop {
            if pair_listed(link, pair_id).await {
                return self.worker(link, pair_id, worker_id).await;
            }
            let driver = self.session(link, driver_id).await.ok()?;
            let named = driver["workers"]
                .as_array()
                .is_some_and(|workers| workers.iter().any(|w| w["pairId"] == pair_id));
            if !named {
                return None;
            }
            if started.elapsed() >= WORKER_WAIT {
                tracing::warn!("pair {pair_id}: its Worker was not made in {WORKER_WAIT:?}");
                return None;
            }
            actix_rt::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(250));
        }
    }

    /// The config options of `session` (a `SessionInfo`).
    async fn options(&self, link: &Link, session: &Value) -> Vec<Value> {
        let vendors = self.vendors(link).await;
        let pairing = self.pairing(link, session).await;
        config::options(session, &vendors, &pairing)
    }

    /// `{modes, configOptions}` of `session` (a `SessionInfo`).
    pub(super) async fn settings(&self, link: &Link, session: &Value) -> Value {
        json!({
            "modes": config::modes(session),
            "configOptions": self.options(link, session).await,
        })
    }

    /// Session `id` as it is now (`session.get`).
    async fn session(&self, link: &Link, id: &str) -> Result<Value, RpcError> {
        let reply = link
            .call("session.get", json!({"sessionId": id}))
            .await
            .map_err(refused)?;
        Ok(reply["session"].clone())
    }

    /// `session/set_mode {sessionId, modeId}`: the session's permission mode.
    pub(super) async fn set_mode(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let mode = string(&params, "modeId")?;
        let mut fields =
            config::set_mode(&mode).map_err(|e| error(INVALID_PARAMS, e.to_string()))?;
        fields["sessionId"] = json!(id);
        let link = self.link().await?;
        link.call("session.configure", fields)
            .await
            .map_err(refused)?;
        Ok(json!({}))
    }

    /// `session/set_config_option {sessionId, configId, value}`: the vendor, model,
    /// effort or permission mode (`session.configure`), the Worker (`pair.create`,
    /// `pair.close`) or its workspace; the answer is every option as it is now.
    pub(super) async fn set_config_option(&self, params: Value) -> Answer {
        let id = string(&params, "sessionId")?;
        let option = string(&params, "configId")?;
        let link = self.link().await?;
        let session = self.session(&link, &id).await?;
        let vendors = self.vendors(&link).await;
        let pairing = self.pairing(&link, &session).await;
        let current = config::options(&session, &vendors, &pairing);
        let change = config::change(&current, &pairing, &option, &params["value"])
            .map_err(|e| error(INVALID_PARAMS, e.to_string()))?;
        // What the pair is after the change, when the change made it (the session's
        // `pairId` may lag behind).
        let mut paired: Option<Option<(String, String, String)>> = None;
        match change {
            config::Change::Configure(mut fields) => {
                fields["sessionId"] = json!(id);
                link.call("session.configure", fields)
                    .await
                    .map_err(refused)?;
            }
            config::Change::CreateWorker(vendor) => {
                let mut create = json!({"driverId": id, "worker": {"vendor": vendor}});
                if !pairing.chosen_workspace.is_empty() {
                    create["workerWorkspace"] = json!(pairing.chosen_workspace);
                }
                let reply = link.call("pair.create", create).await.map_err(refused)?;
                let pair = &reply["pair"];
                if let (Some(pair_id), Some(worker_id)) =
                    (pair["pairId"].as_str(), pair["workerId"].as_str())
                {
                    paired = Some(self.worker(&link, pair_id, worker_id).await);
                }
            }
            config::Change::CloseWorker(pair) => {
                link.call("pair.close", json!({"pairId": pair}))
                    .await
                    .map_err(refused)?;
                paired = Some(None);
            }
            config::Change::ChooseWorkspace(workspace) => {
                self.state
                    .borrow_mut()
                    .worker_workspace
                    .insert(id.clone(), workspace);
            }
            config::Change::Nothing => {}
        }
        let session = self.session(&link, &id).await?;
        let mut pairing = self.pairing(&link, &session).await;
        if let Some(worker) = paired {
            pairing.worker = worker;
        }
        Ok(json!({"configOptions": config::options(&session, &vendors, &pairing)}))
    }

    /// The session's settings or its Worker changed (`event`, a `config_changed`,
    /// `pair_created` or `pair_closed`, from this editor or any other client): its
    /// options and its mode, as they are now, are told. The pair is the event's own
    /// (the session's `pairId` may lag behind it).
    pub(super) fn configured(&self, id: &str, event: Value) {
        let (agent, id) = (self.clone(), id.to_string());
        actix_rt::spawn(async move {
            let told = async {
                let link = agent.link().await?;
                let session = agent.session(&link, &id).await?;
                let vendors = agent.vendors(&link).await;
                let mut pairing = agent.pairing(&link, &session).await;
                match event["kind"].as_str() {
                    Some("pair_created") => {
                        let pair = &event["pair"];
                        if let (Some(pair_id), Some(worker_id)) =
                            (pair["pairId"].as_str(), pair["workerId"].as_str())
                        {
                            pairing.worker = agent.new_worker(&link, &id, pair_id, worker_id).await;
                        }
                    }
                    Some("pair_closed") => pairing.worker = None,
                    _ => {}
                }
                let options = config::options(&session, &vendors, &pairing);
                Ok::<_, RpcError>((session, options))
            };
            match told.await {
                Ok((session, options)) => {
                    agent.update(
                        &id,
                        json!({"sessionUpdate": "config_option_update", "configOptions": options}),
                    );
                    agent.update(
                        &id,
                        json!({
                            "sessionUpdate": "current_mode_update",
                            "currentModeId": config::current_mode(&session),
                        }),
                    );
                }
                Err(e) => tracing::warn!("the settings of {id}: {}", e.message),
            }
        });
    }
}

/// True once pair `pair_id` is listed and open (`pairs.list`: a pair is listed once
/// both its sessions joined it).
async fn pair_listed(link: &Link, pair_id: &str) -> bool {
    match link.call("pairs.list", json!({})).await {
        Ok(reply) => reply["pairs"].as_array().is_some_and(|pairs| {
            pairs
                .iter()
                .any(|p| p["pairId"] == pair_id && p["state"] != "closed")
        }),
        Err(e) => {
            tracing::warn!("pairs.list: {e}");
            false
        }
    }
}
