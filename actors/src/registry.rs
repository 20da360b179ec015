//! Which live actor serves an id. The runtime adds an actor's handle when it starts
//! the actor and the actor removes itself when it goes away; everyone else only looks
//! handles up. Kept generic so this module knows no actor type: the session and pair
//! modules name their own handles, and nothing here can grow into a service locator.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Arc;

use dashmap::DashMap;

/// Live handles by id (`K`: a session's or a pair's); cheap to clone (clones share
/// one map).
#[derive(Debug)]
pub struct Registry<K: Eq + Hash, H> {
    map: Arc<DashMap<K, H>>,
}

impl<K: Eq + Hash, H> Clone for Registry<K, H> {
    fn clone(&self) -> Self {
        Registry {
            map: self.map.clone(),
        }
    }
}

impl<K: Eq + Hash, H> Default for Registry<K, H> {
    fn default() -> Self {
        Registry {
            map: Arc::default(),
        }
    }
}

impl<K: Eq + Hash + Borrow<str>, H: Clone> Registry<K, H> {
    /// The handle serving `id`, if that actor is alive.
    pub fn get(&self, id: &str) -> Option<H> {
        self.map.get(id).map(|h| h.value().clone())
    }

    /// Records the actor that now serves `id`.
    pub fn insert(&self, id: K, handle: H) {
        self.map.insert(id, handle);
    }

    /// Forgets `id` (its actor stopped, or was never committed); answers whether it
    /// was there.
    pub fn remove(&self, id: &str) -> bool {
        self.map.remove(id).is_some()
    }

    /// Calls `f` with every id and handle. `f` must not touch this registry (a shard
    /// is locked while it runs).
    pub fn for_each(&self, mut f: impl FnMut(&K, &H)) {
        for entry in self.map.iter() {
            f(entry.key(), entry.value());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Registry;

    #[test]
    fn clones_share_one_map_and_remove_answers_presence() {
        let a: Registry<String, u32> = Registry::default();
        let b = a.clone();
        a.insert("x".into(), 1);
        assert_eq!(b.get("x"), Some(1));
        assert!(b.remove("x"));
        assert!(!a.remove("x"));
        assert_eq!(a.get("x"), None);
    }
}
