//! A session's settings as ACP shows them, pure: its permission mode as ACP session
//! modes (`modes`, `session/set_mode`), and its vendor, model, effort and mode, and
//! for a session that is not a Worker its Worker's vendor and workspace, as session
//! config options (`configOptions`, `session/set_config_option`), each built from the
//! session (`SessionInfo`), its pair and the server's vendors (`vendors.list`); and
//! the other way, a choice of the editor as what to ask of the server ([`Change`]).

use serde_json::{json, Value};

/// tandem's permission modes, as ACP modes: id (the wire name), name, description.
pub const MODES: [(&str, &str, &str); 4] = [
    (
        "default",
        "Ask",
        "Ask before every edit and command that needs approval",
    ),
    (
        "acceptEdits",
        "Accept edits",
        "File edits are accepted without asking; commands still ask",
    ),
    (
        "plan",
        "Plan",
        "Read-only: the agent plans and changes nothing",
    ),
    (
        "bypassPermissions",
        "Bypass permissions",
        "Never ask: every tool runs",
    ),
];

/// Config option ids (`configId`).
pub const VENDOR: &str = "vendor";
/// The model option's id.
pub const MODEL: &str = "model";
/// The effort option's id.
pub const EFFORT: &str = "effort";
/// The permission mode option's id.
pub const MODE: &str = "mode";
/// The Worker's vendor option's id.
pub const WORKER: &str = "worker";
/// The Worker's workspace option's id.
pub const WORKER_WORKSPACE: &str = "workerWorkspace";

/// The `worker` value of a session without a Worker.
pub const NO_WORKER: &str = "none";

/// A Driver's Worker, or the Worker it will get, as the options show it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairing {
    /// The paired Worker: its pair id, vendor and workspace (`shared` or
    /// `worktree`).
    pub worker: Option<(String, String, String)>,
    /// The workspace chosen for a Worker not created yet (`""`: the server's
    /// default).
    pub chosen_workspace: String,
}

/// What a choice of the editor asks of the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// `session.configure` with these fields.
    Configure(Value),
    /// `pair.create` of a Worker of this vendor.
    CreateWorker(String),
    /// `pair.close` of this pair.
    CloseWorker(String),
    /// Remember this workspace for the Worker to be created.
    ChooseWorkspace(String),
    /// Nothing: it is so already.
    Nothing,
}

/// What the editor asked of a setting that cannot be done: the message of a -32602.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A `configId` tandem does not offer.
    #[error("unknown config option `{0}` (tandem offers vendor, model, effort and mode)")]
    UnknownOption(String),
    /// A value the option does not list.
    #[error("`{value}` is not a value of the config option `{option}`")]
    UnknownValue {
        /// The option.
        option: String,
        /// The value asked for.
        value: String,
    },
    /// A boolean (or other non-string) value: every tandem option is a select.
    #[error("the config option `{0}` takes one of its values as a string")]
    NotASelect(String),
    /// A mode id that is none of tandem's permission modes.
    #[error("unknown mode `{0}` (tandem's modes: default, acceptEdits, plan, bypassPermissions)")]
    UnknownMode(String),
    /// Another vendor for a Worker that exists.
    #[error("the session has a {0} Worker already; set `worker` to `none` first (that dissolves the pair)")]
    WorkerExists(String),
    /// Another workspace for a Worker that exists.
    #[error("the Worker exists already; its workspace cannot change")]
    WorkspaceFixed,
}

/// The `modes` of a session: its permission mode among tandem's four.
pub fn modes(session: &Value) -> Value {
    let available: Vec<Value> = MODES
        .iter()
        .map(|(id, name, description)| json!({"id": id, "name": name, "description": description}))
        .collect();
    json!({
        "currentModeId": current_mode(session),
        "availableModes": available,
    })
}

/// The session's permission mode (`default` when it says none).
pub fn current_mode(session: &Value) -> &str {
    session["permissionMode"].as_str().unwrap_or("default")
}

/// The vendor `id` among `vendors` (a `vendors.list` answer's list).
fn vendor<'a>(vendors: &'a [Value], id: &str) -> Option<&'a Value> {
    vendors.iter().find(|v| v["id"] == id)
}

fn strings(list: &Value) -> Vec<&str> {
    list.as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// A select option with `id`, its values as `(value, name)`; the current value is
/// listed even when the list does not have it (a model named by hand), so the
/// editor can show it.
fn select(
    id: &str,
    name: &str,
    description: &str,
    category: Option<&str>,
    current: &str,
    values: Vec<(String, String)>,
) -> Value {
    let mut values = values;
    if !values.iter().any(|(v, _)| v == current) {
        values.push((current.to_string(), current.to_string()));
    }
    let options: Vec<Value> = values
        .into_iter()
        .map(|(value, name)| json!({"value": value, "name": name}))
        .collect();
    let mut option = json!({
        "type": "select",
        "id": id,
        "name": name,
        "description": description,
        "currentValue": current,
        "options": options,
    });
    if let Some(category) = category {
        option["category"] = json!(category);
    }
    option
}

/// The config options of `session` (a `SessionInfo`) with the server's `vendors`:
/// the vendor (the installed ones; the server refuses a change once the vendor's
/// own session started), the model and the effort the vendor offers (`""` is the
/// vendor's default), and the permission mode.
pub fn options(session: &Value, vendors: &[Value], pairing: &Pairing) -> Vec<Value> {
    let current_vendor = session["vendor"].as_str().unwrap_or_default();
    let installed: Vec<(String, String)> = vendors
        .iter()
        .filter(|v| v["installed"] == true)
        .filter_map(|v| {
            let id = v["id"].as_str()?;
            let name = v["displayName"].as_str().unwrap_or(id);
            Some((id.to_string(), name.to_string()))
        })
        .collect();
    let mut out = vec![select(
        VENDOR,
        "Agent",
        "The vendor CLI the session runs (fixed once its first turn started)",
        None,
        current_vendor,
        installed.clone(),
    )];
    out.extend(model_and_effort(session, vendor(vendors, current_vendor)));
    out.push(select(
        MODE,
        "Permission mode",
        "When the agent asks before using a tool",
        Some("mode"),
        current_mode(session),
        MODES
            .iter()
            .map(|(id, name, _)| (id.to_string(), name.to_string()))
            .collect(),
    ));
    // A Worker delegates to no one.
    if session["role"] == "worker" {
        return out;
    }
    out.extend(worker_options(installed, pairing));
    out
}

/// The model and (when the vendor offers levels) effort options of `session`, whose
/// vendor's entry in `GET /vendors` is `spec`.
fn model_and_effort(session: &Value, spec: Option<&Value>) -> Vec<Value> {
    let mut out = Vec::new();
    let default_model = spec.and_then(|v| v["defaultModel"].as_str());
    let mut models = vec![(
        String::new(),
        match default_model {
            Some(m) => format!("Default ({m})"),
            None => "Default".to_string(),
        },
    )];
    models.extend(
        spec.map(|v| strings(&v["models"]))
            .unwrap_or_default()
            .into_iter()
            .map(|m| (m.to_string(), m.to_string())),
    );
    out.push(select(
        MODEL,
        "Model",
        "The model of the session's vendor",
        Some("model"),
        session["model"].as_str().unwrap_or_default(),
        models,
    ));
    let levels = spec
        .map(|v| strings(&v["effortLevels"]))
        .unwrap_or_default();
    if !levels.is_empty() {
        let mut efforts = vec![(String::new(), "Default".to_string())];
        efforts.extend(levels.into_iter().map(|l| (l.to_string(), l.to_string())));
        out.push(select(
            EFFORT,
            "Effort",
            "How hard the model thinks",
            Some("thought_level"),
            session["effort"].as_str().unwrap_or_default(),
            efforts,
        ));
    }
    out
}

/// The Worker options of a Driver: which vendor's Worker it has (or none), and
/// where a new one works.
fn worker_options(installed: Vec<(String, String)>, pairing: &Pairing) -> Vec<Value> {
    let mut out = Vec::new();
    let mut workers = vec![(NO_WORKER.to_string(), "No Worker".to_string())];
    workers.extend(installed);
    let (worker, workspace) = match &pairing.worker {
        Some((_, vendor, workspace)) => (vendor.as_str(), workspace.as_str()),
        None => (NO_WORKER, pairing.chosen_workspace.as_str()),
    };
    out.push(select(
        WORKER,
        "Worker",
        "The Worker this session delegates to: a vendor creates one now, none dissolves the pair",
        None,
        worker,
        workers,
    ));
    out.push(select(
        WORKER_WORKSPACE,
        "Worker workspace",
        "Where a new Worker works: the session's directory, or a git worktree of its own",
        None,
        workspace,
        vec![
            (String::new(), "Server default".to_string()),
            ("shared".to_string(), "Shared directory".to_string()),
            ("worktree".to_string(), "Own worktree".to_string()),
        ],
    ));
    out
}

/// What setting config option `id` to `value` asks, checked against the options the
/// session has now (`current`, from [`options`]) and its `pairing`.
pub fn change(
    current: &[Value],
    pairing: &Pairing,
    id: &str,
    value: &Value,
) -> Result<Change, ConfigError> {
    let option = current
        .iter()
        .find(|o| o["id"] == id)
        .ok_or_else(|| ConfigError::UnknownOption(id.to_string()))?;
    let value = value
        .as_str()
        .ok_or_else(|| ConfigError::NotASelect(id.to_string()))?;
    let listed = option["options"]
        .as_array()
        .is_some_and(|values| values.iter().any(|v| v["value"] == value));
    if !listed {
        return Err(ConfigError::UnknownValue {
            option: id.to_string(),
            value: value.to_string(),
        });
    }
    let field = match id {
        VENDOR => "vendor",
        MODEL => "model",
        EFFORT => "effort",
        MODE => "permissionMode",
        WORKER => {
            return Ok(match (&pairing.worker, value) {
                (None, NO_WORKER) => Change::Nothing,
                (None, vendor) => Change::CreateWorker(vendor.to_string()),
                (Some((pair, _, _)), NO_WORKER) => Change::CloseWorker(pair.clone()),
                (Some((_, vendor, _)), v) if v == vendor => Change::Nothing,
                (Some((_, vendor, _)), _) => return Err(ConfigError::WorkerExists(vendor.clone())),
            })
        }
        _ => {
            return match &pairing.worker {
                None => Ok(Change::ChooseWorkspace(value.to_string())),
                Some((_, _, workspace)) if workspace == value => Ok(Change::Nothing),
                Some(_) => Err(ConfigError::WorkspaceFixed),
            }
        }
    };
    Ok(Change::Configure(json!({ field: value })))
}

/// The `session.configure` fields of `session/set_mode {modeId}`.
pub fn set_mode(mode: &str) -> Result<Value, ConfigError> {
    if !MODES.iter().any(|(id, _, _)| *id == mode) {
        return Err(ConfigError::UnknownMode(mode.to_string()));
    }
    Ok(json!({"permissionMode": mode}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vendors() -> Vec<Value> {
        vec![
            json!({"id": "scripted", "displayName": "Scripted", "installed": true,
                "models": ["scripted-1"], "defaultModel": "scripted-1",
                "effortLevels": ["low", "high"]}),
            json!({"id": "codex", "displayName": "Codex", "installed": false,
                "models": [], "effortLevels": []}),
            json!({"id": "plain", "displayName": "Plain", "installed": true,
                "models": [], "effortLevels": []}),
        ]
    }

    fn session() -> Value {
        json!({"vendor": "scripted", "model": "", "effort": "high",
            "permissionMode": "acceptEdits"})
    }

    #[test]
    fn options_offer_the_installed_vendors_and_the_vendors_models_and_levels() {
        let opts = options(&session(), &vendors(), &Pairing::default());
        let ids: Vec<&Value> = opts.iter().map(|o| &o["id"]).collect();
        assert_eq!(
            ids,
            [
                "vendor",
                "model",
                "effort",
                "mode",
                "worker",
                "workerWorkspace"
            ]
        );
        assert_eq!(
            opts[0]["options"],
            json!([{"value": "scripted", "name": "Scripted"}, {"value": "plain", "name": "Plain"}])
        );
        assert_eq!(opts[1]["category"], "model");
        assert_eq!(opts[1]["currentValue"], "");
        assert_eq!(
            opts[1]["options"],
            json!([{"value": "", "name": "Default (scripted-1)"},
                {"value": "scripted-1", "name": "scripted-1"}])
        );
        assert_eq!(opts[2]["category"], "thought_level");
        assert_eq!(opts[2]["currentValue"], "high");
        assert_eq!(opts[3]["category"], "mode");
        assert_eq!(opts[3]["currentValue"], "acceptEdits");
        assert_eq!(opts[3]["options"].as_array().map(Vec::len), Some(4));
        // A vendor without levels has no effort option; a model named by hand is listed.
        let plain = json!({"vendor": "plain", "model": "mine", "effort": "",
            "permissionMode": "default", "role": "worker"});
        let opts = options(&plain, &vendors(), &Pairing::default());
        let ids: Vec<&Value> = opts.iter().map(|o| &o["id"]).collect();
        assert_eq!(ids, ["vendor", "model", "mode"]);
        assert_eq!(
            opts[1]["options"],
            json!([{"value": "", "name": "Default"}, {"value": "mine", "name": "mine"}])
        );
    }

    #[test]
    fn choices_become_changes_and_bad_ones_are_refused() {
        let none = Pairing::default();
        let opts = options(&session(), &vendors(), &none);
        let set = |id: &str, v: Value| change(&opts, &none, id, &v);
        let configure = |v: Value| Ok(Change::Configure(v));
        assert_eq!(
            set("model", json!("scripted-1")),
            configure(json!({"model": "scripted-1"}))
        );
        assert_eq!(
            set("mode", json!("plan")),
            configure(json!({"permissionMode": "plan"}))
        );
        assert_eq!(set("effort", json!("")), configure(json!({"effort": ""})));
        assert_eq!(
            set("vendor", json!("plain")),
            configure(json!({"vendor": "plain"}))
        );
        assert!(matches!(
            set("vendor", json!("codex")),
            Err(ConfigError::UnknownValue { .. })
        ));
        assert!(matches!(
            set("colour", json!("red")),
            Err(ConfigError::UnknownOption(_))
        ));
        assert!(matches!(
            set("mode", json!(true)),
            Err(ConfigError::NotASelect(_))
        ));
        assert_eq!(
            set_mode("bypassPermissions"),
            Ok(json!({"permissionMode": "bypassPermissions"}))
        );
        assert!(set_mode("yolo").is_err());
        // The Worker: created, chosen where, dissolved; fixed once it exists.
        assert_eq!(
            set("worker", json!("plain")),
            Ok(Change::CreateWorker("plain".into()))
        );
        assert_eq!(set("worker", json!("none")), Ok(Change::Nothing));
        assert_eq!(
            set("workerWorkspace", json!("worktree")),
            Ok(Change::ChooseWorkspace("worktree".into()))
        );
        let paired = Pairing {
            worker: Some(("pair_1".into(), "plain".into(), "shared".into())),
            chosen_workspace: String::new(),
        };
        let opts = options(&session(), &vendors(), &paired);
        let worker = opts.iter().find(|o| o["id"] == "worker").unwrap();
        assert_eq!(worker["currentValue"], "plain");
        let set = |id: &str, v: Value| change(&opts, &paired, id, &v);
        assert_eq!(
            set("worker", json!("none")),
            Ok(Change::CloseWorker("pair_1".into()))
        );
        assert_eq!(set("worker", json!("plain")), Ok(Change::Nothing));
        assert_eq!(
            set("worker", json!("scripted")),
            Err(ConfigError::WorkerExists("plain".into()))
        );
        assert_eq!(
            set("workerWorkspace", json!("worktree")),
            Err(ConfigError::WorkspaceFixed)
        );
    }

    #[test]
    fn modes_name_the_current_one() {
        let m = modes(&session());
        assert_eq!(m["currentModeId"], "acceptEdits");
        assert_eq!(m["availableModes"][0]["id"], "default");
        assert_eq!(modes(&json!({}))["currentModeId"], "default");
    }
}
