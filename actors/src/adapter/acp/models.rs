//! The models an ACP agent offers for a session, read from its answer to
//! `session/new` (or `load`/`resume`), and how to switch between them. Agents offer
//! them one of two ways:
//!
//! - a session configuration option whose `category` is `model`, switched with
//!   `session/set_config_option` (codex-acp 0.16);
//! - the unstable session-model API, `models: {availableModels, currentModelId}`,
//!   switched with `session/set_model` (claude-code-acp 0.16).
//!
//! The configuration option is preferred when an agent offers both: it is the stable
//! part of the protocol.
//!
//! Effort levels come the first way only: an option of category `thought_level`
//! (codex-acp's `reasoning_effort`), switched with `session/set_config_option`. Pure
//! functions, unit-tested.

use serde_json::Value;

use super::wire::SessionOpened;

/// How the agent switches a session's model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSwitch {
    /// `session/set_config_option` with this option id.
    ConfigOption(String),
    /// `session/set_model`.
    SetModel,
}

/// The models an agent offers for one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferedModels {
    /// Model ids, the one in force when the session opened (the agent's default)
    /// first.
    pub models: Vec<String>,
    /// The model in force when the session opened, when the agent said.
    pub current: Option<String>,
    /// How to switch.
    pub switch: ModelSwitch,
}

impl OfferedModels {
    /// True when `model` is one of them.
    pub fn offers(&self, model: &str) -> bool {
        self.models.iter().any(|m| m == model)
    }
}

/// What the agent offers in `opened`; `None` when it offers no way to choose a model.
pub fn offered(opened: &SessionOpened) -> Option<OfferedModels> {
    let from_option = opened.config_options.iter().find_map(model_option);
    let offered = from_option.or_else(|| {
        let state = opened.models.as_ref()?;
        let models: Vec<String> = state
            .available_models
            .iter()
            .map(|m| m.model_id.clone())
            .collect();
        let current = Some(state.current_model_id.clone()).filter(|c| !c.is_empty());
        Some(OfferedModels {
            models,
            current,
            switch: ModelSwitch::SetModel,
        })
    })?;
    Some(default_first(offered)).filter(|o| !o.models.is_empty())
}

/// A `select` option of category `model`: its id, values and current value.
fn model_option(option: &Value) -> Option<OfferedModels> {
    let (id, models, current) = select_option(option, "model")?;
    Some(OfferedModels {
        models,
        current,
        switch: ModelSwitch::ConfigOption(id),
    })
}

/// The effort levels an agent offers for one session: the values of its
/// `thought_level` option, switched with `session/set_config_option`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferedEfforts {
    /// The option's id.
    pub option: String,
    /// Its values in the agent's order (agents list them lowest first).
    pub levels: Vec<String>,
    /// The level in force when the session opened.
    pub current: Option<String>,
}

/// The effort levels in `config_options` (an answer to `session/new` or
/// `set_config_option`); `None` when the agent offers no `thought_level` option.
pub fn offered_efforts(config_options: &[Value]) -> Option<OfferedEfforts> {
    config_options.iter().find_map(|option| {
        let (option, levels, current) = select_option(option, "thought_level")?;
        (!levels.is_empty()).then_some(OfferedEfforts {
            option,
            levels,
            current,
        })
    })
}

/// A `select` option of this category: its id, values and current value.
fn select_option(option: &Value, category: &str) -> Option<(String, Vec<String>, Option<String>)> {
    if option["category"] != category {
        return None;
    }
    let id = option["id"].as_str()?.to_string();
    let mut values = Vec::new();
    collect_values(&option["options"], &mut values);
    let current = option["currentValue"].as_str().map(str::to_string);
    Some((id, values, current))
}

/// The `value`s of a select option's choices, flat or in groups (`{group, options}`).
fn collect_values(options: &Value, into: &mut Vec<String>) {
    for entry in options.as_array().into_iter().flatten() {
        if let Some(value) = entry["value"].as_str() {
            if !into.iter().any(|m| m == value) {
                into.push(value.to_string());
            }
        } else if entry["options"].is_array() {
            collect_values(&entry["options"], into);
        }
    }
}

/// The current model moved to the front (the catalog's first model is the default).
fn default_first(mut offered: OfferedModels) -> OfferedModels {
    if let Some(current) = &offered.current {
        if let Some(pos) = offered.models.iter().position(|m| m == current) {
            let model = offered.models.remove(pos);
            offered.models.insert(0, model);
        }
    }
    offered
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opened(v: Value) -> SessionOpened {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_session_model_api_is_read_with_the_current_model_first() {
        // claude-code-acp 0.16.2's answer, trimmed.
        let o = offered(&opened(json!({"sessionId": "s", "models": {
            "availableModels": [{"modelId": "opus", "name": "Opus"},
                                {"modelId": "default", "name": "Default"},
                                {"modelId": "haiku", "name": "Haiku"}],
            "currentModelId": "default"}})))
        .unwrap();
        assert_eq!(o.models, ["default", "opus", "haiku"]);
        assert_eq!(o.current.as_deref(), Some("default"));
        assert_eq!(o.switch, ModelSwitch::SetModel);
        assert!(o.offers("haiku") && !o.offers("sonnet"));
    }

    #[test]
    fn a_model_config_option_wins_and_groups_are_flattened() {
        // codex-acp 0.16.0 answers with a flat list; the protocol also allows groups.
        let o = offered(&opened(json!({"sessionId": "s",
            "models": {"availableModels": [{"modelId": "other"}], "currentModelId": "other"},
            "configOptions": [
                {"id": "mode", "category": "mode", "type": "select", "currentValue": "auto",
                 "options": [{"value": "auto", "name": "Auto"}]},
                {"id": "model", "category": "model", "type": "select", "currentValue": "gpt-b",
                 "options": [{"value": "gpt-a", "name": "A"},
                             {"group": "more", "name": "More",
                              "options": [{"value": "gpt-b", "name": "B"}]}]}]})))
        .unwrap();
        assert_eq!(o.models, ["gpt-b", "gpt-a"]);
        assert_eq!(o.switch, ModelSwitch::ConfigOption("model".into()));
    }

    #[test]
    fn an_agent_without_models_offers_none() {
        assert_eq!(offered(&opened(json!({"sessionId": "s"}))), None);
        let empty =
            json!({"sessionId": "s", "models": {"availableModels": [], "currentModelId": ""}});
        assert_eq!(offered(&opened(empty)), None);
    }

    #[test]
    fn a_thought_level_option_gives_the_effort_levels() {
        // codex-acp's answer for a model with several reasoning efforts, trimmed.
        let options = vec![
            json!({"id": "model", "category": "model", "type": "select",
                   "currentValue": "gpt-b", "options": [{"value": "gpt-b", "name": "B"}]}),
            json!({"id": "reasoning_effort", "category": "thought_level", "type": "select",
                   "currentValue": "medium", "options": [
                       {"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"},
                       {"value": "high", "name": "High"}]}),
        ];
        let e = offered_efforts(&options).unwrap();
        assert_eq!(e.option, "reasoning_effort");
        assert_eq!(e.levels, ["low", "medium", "high"]);
        assert_eq!(e.current.as_deref(), Some("medium"));
        assert_eq!(offered_efforts(&options[..1]), None);
    }
}
