//! Overlaps between sibling worktrees: the paths each live worktree session has
//! changed since its base (its latest `git_state`), by repository, so that two
//! sessions of one owner in one repository that change the same files hear of it
//! while they work rather than at merge. In memory: a restart rebuilds it from the
//! next `git_state` of each session.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use crate::ids::{SessionId, UserId};

/// A session to tell that what it shares with another changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The session told.
    pub to: SessionId,
    /// The other session.
    pub with: SessionId,
    /// The paths both have changed now, sorted; empty when they no longer share any.
    pub paths: Vec<String>,
}

/// One live worktree session's changes.
#[derive(Debug, Default)]
struct Entry {
    owner: UserId,
    /// The base checkout: sessions of one repository share it.
    repo: String,
    paths: BTreeSet<String>,
    /// What it was last told it shares, per other session (absent: nothing).
    told: BTreeMap<SessionId, Vec<String>>,
}

/// Every live worktree session's changed paths.
#[derive(Debug, Default)]
pub struct Overlaps {
    entries: Mutex<HashMap<SessionId, Entry>>,
}

impl Overlaps {
    /// Session `id` (of `owner`, a worktree of the checkout `repo`) has changed
    /// `paths`: the notices for every pair of it and a sibling whose shared paths
    /// changed, both ways.
    pub fn update(
        &self,
        id: &str,
        owner: &str,
        repo: &str,
        paths: BTreeSet<String>,
    ) -> Vec<Notice> {
        let Ok(mut entries) = self.entries.lock() else {
            return Vec::new();
        };
        let entry = entries.entry(id.into()).or_default();
        entry.owner = owner.into();
        entry.repo = repo.to_string();
        entry.paths = paths;
        let siblings: Vec<(SessionId, Vec<String>)> = entries
            .iter()
            .filter(|(other, e)| *other != id && e.owner == owner && e.repo == repo)
            .map(|(other, e)| {
                let shared = entries
                    .get(id)
                    .map(|me| me.paths.intersection(&e.paths).cloned().collect())
                    .unwrap_or_default();
                (other.clone(), shared)
            })
            .collect();
        let mut notices = Vec::new();
        for (other, shared) in siblings {
            notices.extend(tell(&mut entries, id, &other, &shared));
        }
        notices
    }

    /// Session `id` has no worktree any more (discarded, archived, stopped): each
    /// sibling it shared paths with hears that it shares none now.
    pub fn remove(&self, id: &str) -> Vec<Notice> {
        let Ok(mut entries) = self.entries.lock() else {
            return Vec::new();
        };
        let Some(gone) = entries.remove(id) else {
            return Vec::new();
        };
        let mut notices = Vec::new();
        for other in gone.told.keys() {
            if let Some(e) = entries.get_mut(other) {
                e.told.remove(id);
                notices.push(Notice {
                    to: other.clone(),
                    with: id.into(),
                    paths: Vec::new(),
                });
            }
        }
        notices
    }
}

/// Records that `a` and `b` share `shared` now, and the notices if that is news.
fn tell(
    entries: &mut HashMap<SessionId, Entry>,
    a: &str,
    b: &str,
    shared: &[String],
) -> Vec<Notice> {
    let before = entries
        .get(a)
        .and_then(|e| e.told.get(b))
        .map_or(&[][..], Vec::as_slice);
    if before == shared {
        return Vec::new();
    }
    for (me, other) in [(a, b), (b, a)] {
        if let Some(e) = entries.get_mut(me) {
            if shared.is_empty() {
                e.told.remove(other);
            } else {
                e.told.insert(other.into(), shared.to_vec());
            }
        }
    }
    [(a, b), (b, a)]
        .into_iter()
        .map(|(to, with)| Notice {
            to: to.into(),
            with: with.into(),
            paths: shared.to_vec(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| (*p).to_string()).collect()
    }

    #[test]
    fn siblings_hear_of_shared_paths_once_and_when_they_end() {
        let o = Overlaps::default();
        assert!(o.update("a", "u", "/r", set(&["x", "y"])).is_empty());
        // Another owner, another repository: never siblings.
        assert!(o.update("m", "mallory", "/r", set(&["x"])).is_empty());
        assert!(o.update("c", "u", "/other", set(&["x"])).is_empty());
        let told = o.update("b", "u", "/r", set(&["x", "z"]));
        assert_eq!(
            told,
            [
                Notice {
                    to: "b".into(),
                    with: "a".into(),
                    paths: vec!["x".into()]
                },
                Notice {
                    to: "a".into(),
                    with: "b".into(),
                    paths: vec!["x".into()]
                },
            ]
        );
        // Nothing new: nothing said.
        assert!(o.update("b", "u", "/r", set(&["x", "z", "w"])).is_empty());
        assert!(o.update("a", "u", "/r", set(&["x", "y", "q"])).is_empty());
        // More shared.
        let told = o.update("a", "u", "/r", set(&["x", "z"]));
        assert_eq!(told.len(), 2);
        assert_eq!(told[0].paths, ["x", "z"]);
        // `b` goes: `a` hears it shares nothing with it now.
        assert_eq!(
            o.remove("b"),
            [Notice {
                to: "a".into(),
                with: "b".into(),
                paths: Vec::new()
            }]
        );
        assert!(o.remove("b").is_empty());
    }

    #[test]
    fn an_overlap_that_ends_is_told_with_no_paths() {
        let o = Overlaps::default();
        o.update("a", "u", "/r", set(&["x"]));
        assert_eq!(o.update("b", "u", "/r", set(&["x"])).len(), 2);
        let told = o.update("b", "u", "/r", set(&["y"]));
        assert_eq!(told.len(), 2);
        assert!(told.iter().all(|n| n.paths.is_empty()));
        assert!(o.update("b", "u", "/r", set(&["z"])).is_empty());
    }
}
