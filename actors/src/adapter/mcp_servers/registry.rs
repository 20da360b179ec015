//! Which MCP servers there are and which a session's agent gets. The config's are
//! every user's and fixed while the server runs; a user's own (`mcp-servers.add`) are
//! theirs alone, kept here in memory beside the store's copy; a session that chose
//! (`session.create`'s `mcpServers`) gets exactly its choice, one that did not gets
//! every server its owner may use. Names are resolved when an agent starts, so a
//! server removed since is no longer given, and a changed one is given as it is now.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tandem_protocol::mcp_servers::{McpServerChoice, McpServerScope};

use super::NamedServer;

/// Most servers one user may add.
pub const MAX_PER_USER: usize = 32;

/// Why a server cannot be added or removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name is taken: by the config's, by one of the user's, or by tandem's own
    /// tools.
    #[error("{0}")]
    Taken(String),
    /// The user has [`MAX_PER_USER`] already.
    #[error("at most {MAX_PER_USER} MCP servers of one's own: remove one first")]
    TooMany,
    /// The config declares it: only the config changes it.
    #[error("the MCP server `{0}` is declared in the config: change it there")]
    Declared(String),
    /// No such server of the user's.
    #[error("no MCP server `{0}` of yours")]
    Missing(String),
}

/// Why a session's choice of MCP servers cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    /// A server is chosen twice.
    #[error("the MCP server `{0}` is named twice")]
    Twice(String),
    /// A name no server listed for the owner has.
    #[error("no MCP server `{0}`: name one mcp-servers.list shows")]
    Unknown(String),
    /// An entry of its own named `tandem`, the name of tandem's tools.
    #[error("the MCP server name `tandem` is tandem's own tools")]
    Reserved,
}

/// The runtime reports a refused choice by its message.
impl From<ChoiceError> for String {
    fn from(e: ChoiceError) -> String {
        e.to_string()
    }
}

/// The servers; cheap to clone.
#[derive(Clone, Default)]
pub struct McpServers {
    /// The config's, in its order.
    config: Arc<Vec<NamedServer>>,
    /// Each user's own, oldest first.
    users: Arc<Mutex<HashMap<String, Vec<NamedServer>>>>,
}

impl McpServers {
    /// The config's servers and the users' own, as the store keeps them.
    pub fn new(config: Vec<NamedServer>, users: Vec<(String, NamedServer)>) -> McpServers {
        let mut by_user: HashMap<String, Vec<NamedServer>> = HashMap::new();
        for (user, server) in users {
            by_user.entry(user).or_default().push(server);
        }
        McpServers {
            config: Arc::new(config),
            users: Arc::new(Mutex::new(by_user)),
        }
    }

    fn users(&self) -> MutexGuard<'_, HashMap<String, Vec<NamedServer>>> {
        // A panic while holding it cannot leave a list half-changed (each change is
        // one push or retain), so a poisoned lock is still good.
        self.users.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `user` may use: the config's, then the user's own.
    pub fn listed(&self, user: &str) -> Vec<(NamedServer, McpServerScope)> {
        let own = self.users().get(user).cloned().unwrap_or_default();
        self.config
            .iter()
            .cloned()
            .map(|s| (s, McpServerScope::Config))
            .chain(own.into_iter().map(|s| (s, McpServerScope::User)))
            .collect()
    }

    /// One server `user` may use, by name.
    pub fn find(&self, user: &str, name: &str) -> Option<(NamedServer, McpServerScope)> {
        self.listed(user).into_iter().find(|(s, _)| s.name == name)
    }

    /// Adds `server` to `user`'s own after `persist` (the store's write) succeeded; the
    /// check and the write happen under one lock, so two adds of a name cannot both
    /// pass.
    pub fn add<E>(
        &self,
        user: &str,
        server: NamedServer,
        persist: impl FnOnce() -> Result<(), E>,
    ) -> Result<Result<(), E>, RegistryError> {
        let mut users = self.users();
        let own = users.entry(user.to_string()).or_default();
        if server.name == "tandem" {
            return Err(RegistryError::Taken(
                "the MCP server name `tandem` is tandem's own tools".into(),
            ));
        }
        if self.config.iter().any(|s| s.name == server.name) {
            return Err(RegistryError::Taken(format!(
                "the config declares an MCP server `{}`",
                server.name
            )));
        }
        if own.iter().any(|s| s.name == server.name) {
            return Err(RegistryError::Taken(format!(
                "you have an MCP server `{}` already: remove it first",
                server.name
            )));
        }
        if own.len() >= MAX_PER_USER {
            return Err(RegistryError::TooMany);
        }
        Ok(persist().map(|()| own.push(server)))
    }

    /// Removes one of `user`'s own after `persist` (the store's delete) succeeded.
    pub fn remove<E>(
        &self,
        user: &str,
        name: &str,
        persist: impl FnOnce() -> Result<(), E>,
    ) -> Result<Result<(), E>, RegistryError> {
        if self.config.iter().any(|s| s.name == name) {
            return Err(RegistryError::Declared(name.to_string()));
        }
        let mut users = self.users();
        let Some(own) = users
            .get_mut(user)
            .filter(|o| o.iter().any(|s| s.name == name))
        else {
            return Err(RegistryError::Missing(name.to_string()));
        };
        Ok(persist().map(|()| own.retain(|s| s.name != name)))
    }

    /// Checks a session's choice when it is made: every name one `owner` may use, no
    /// name twice.
    pub fn check_choice(&self, owner: &str, choice: &[McpServerChoice]) -> Result<(), ChoiceError> {
        let listed = self.listed(owner);
        let mut seen = std::collections::HashSet::new();
        for c in choice {
            if !seen.insert(c.name()) {
                return Err(ChoiceError::Twice(c.name().to_string()));
            }
            match c {
                McpServerChoice::Name(n) if !listed.iter().any(|(s, _)| &s.name == n) => {
                    return Err(ChoiceError::Unknown(n.clone()))
                }
                McpServerChoice::Entry(e) if e.name == "tandem" => {
                    return Err(ChoiceError::Reserved)
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The servers a session's agent gets now: its choice, else every one its owner
    /// may use. A chosen name that is gone is left out (with a warning).
    pub fn for_session(
        &self,
        owner: &str,
        choice: Option<&[McpServerChoice]>,
    ) -> Arc<Vec<NamedServer>> {
        let listed = self.listed(owner);
        let Some(choice) = choice else {
            return Arc::new(listed.into_iter().map(|(s, _)| s).collect());
        };
        let servers = choice
            .iter()
            .filter_map(|c| match c {
                McpServerChoice::Entry(e) => Some(NamedServer::from(e.clone())),
                McpServerChoice::Name(n) => {
                    let found = listed.iter().find(|(s, _)| &s.name == n).map(|(s, _)| s.clone());
                    if found.is_none() {
                        tracing::warn!(server = %n, "a session's MCP server is gone; its agent starts without it");
                    }
                    found
                }
            })
            .collect();
        Arc::new(servers)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::adapter::mcp_servers::McpServerSpec;

    fn server(name: &str) -> NamedServer {
        NamedServer {
            name: name.into(),
            spec: McpServerSpec::Stdio {
                command: "srv".into(),
                args: Vec::new(),
                env: BTreeMap::new(),
            },
        }
    }

    fn names(list: &[NamedServer]) -> Vec<&str> {
        list.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn each_user_has_their_own_beside_the_configs() {
        let reg = McpServers::new(vec![server("cfg")], vec![("ann".into(), server("a1"))]);
        let ok = |r: Result<Result<(), ()>, RegistryError>| r.map(|inner| inner.is_ok());
        assert_eq!(ok(reg.add("bob", server("b1"), || Ok(()))), Ok(true));
        assert_eq!(names(&reg.for_session("ann", None)), ["cfg", "a1"]);
        assert_eq!(names(&reg.for_session("bob", None)), ["cfg", "b1"]);
        assert!(matches!(
            reg.add("bob", server("cfg"), || Ok::<_, ()>(())),
            Err(RegistryError::Taken(_))
        ));
        assert!(matches!(
            reg.add("bob", server("b1"), || Ok::<_, ()>(())),
            Err(RegistryError::Taken(_))
        ));
        assert!(matches!(
            reg.add("bob", server("tandem"), || Ok::<_, ()>(())),
            Err(RegistryError::Taken(_))
        ));
        // ann may take bob's name: names are per user.
        assert_eq!(ok(reg.add("ann", server("b1"), || Ok(()))), Ok(true));
        // A failed write changes nothing.
        assert_eq!(ok(reg.add("ann", server("x"), || Err(()))), Ok(false));
        assert!(reg.find("ann", "x").is_none());
        assert_eq!(
            reg.remove("ann", "cfg", || Ok::<_, ()>(())),
            Err(RegistryError::Declared("cfg".into()))
        );
        assert_eq!(
            reg.remove("ann", "nope", || Ok::<_, ()>(())),
            Err(RegistryError::Missing("nope".into()))
        );
        assert_eq!(
            reg.remove("bob", "a1", || Ok::<_, ()>(())),
            Err(RegistryError::Missing("a1".into())),
            "not another user's"
        );
        assert_eq!(reg.remove("ann", "a1", || Ok::<_, ()>(())), Ok(Ok(())));
        assert_eq!(names(&reg.for_session("ann", None)), ["cfg", "b1"]);
    }

    #[test]
    fn a_session_gets_its_choice_resolved_now() {
        let reg = McpServers::new(vec![server("cfg")], vec![("ann".into(), server("a1"))]);
        let entry: McpServerChoice = serde_json::from_value(
            serde_json::json!({"name": "own", "url": "http://127.0.0.1:9/mcp"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let choice = vec![McpServerChoice::Name("a1".into()), entry];
        assert_eq!(reg.check_choice("ann", &choice), Ok(()));
        assert!(reg.check_choice("bob", &choice).is_err(), "a1 is ann's");
        let twice = vec![
            McpServerChoice::Name("cfg".into()),
            McpServerChoice::Name("cfg".into()),
        ];
        assert!(reg.check_choice("ann", &twice).is_err());
        assert_eq!(names(&reg.for_session("ann", Some(&choice))), ["a1", "own"]);
        assert!(reg.for_session("ann", Some(&[])).is_empty());
        let _ = reg.remove("ann", "a1", || Ok::<_, ()>(()));
        assert_eq!(
            names(&reg.for_session("ann", Some(&choice))),
            ["own"],
            "a removed one is no longer given"
        );
        for _ in 0..MAX_PER_USER {
            let n = format!("s{}", reg.listed("ann").len());
            assert!(matches!(
                reg.add("ann", server(&n), || Ok::<_, ()>(())),
                Ok(Ok(()))
            ));
        }
        assert_eq!(
            reg.add("ann", server("more"), || Ok::<_, ()>(())),
            Err(RegistryError::TooMany)
        );
    }
}
