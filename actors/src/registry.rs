//! Which live actor serves an id. The runtime adds an actor's handle when it starts
//! the actor and the actor removes itself when it goes away; everyone else only looks
//! handles up. Kept generic so this module knows no actor type: the session and pair
//! modules name their own handles, and nothing here can grow into a service locator.

use std::sync::Arc;

use dashmap::DashMap;

/// Live handles by id; cheap to clone (clones share one map).
#[derive(Debug)]
pub struct Registry<H> {
    map: Arc<DashMap<String, H>>,
}

impl<H> Clone for Registry<H> {
    fn clone(&self) -> Self {
        Registry {
            map: self.map.clone(),
        }
    }
}

impl<H> Default for Registry<H> {
    fn default() -> Self {
        Registry {
            map: Arc::default(),
        }
    }
}

impl<H: Clone> Registry<H> {
    /// The handle serving `id`, if that actor is alive.
    pub fn get(&self, id: &str) -> Option<H> {
        self.map.get(id).map(|h| h.value().clone())
    }

    /// Records the actor that now serves `id`.
    pub fn insert(&self, id: String, handle: H) {
        self.map.insert(id, handle);
    }

    /// Forgets `id` (its actor stopped, or was never committed); answers whether it
    /// was there.
    pub fn remove(&self, id: &str) -> bool {
        self.map.remove(id).is_some()
    }

    /// Calls `f` with every id and handle. `f` must not touch this registry (a shard
    /// is locked while it runs).
    pub fn for_each(&self, mut f: impl FnMut(&str, &H)) {
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
        let a: Registry<u32> = Registry::default();
        let b = a.clone();
        a.insert("x".into(), 1);
        assert_eq!(b.get("x"), Some(1));
        assert!(b.remove("x"));
        assert!(!a.remove("x"));
        assert_eq!(a.get("x"), None);
    }
}
