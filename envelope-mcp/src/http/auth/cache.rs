//! The callers an issuer's introspection vouched for, kept a while under a hash of their token.
//! Bounded: an entry lives until its own deadline, and the cache holds at most its capacity,
//! the expired entries going first, then the oldest. Nothing here does I/O or knows a token.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use envelope_core::Caller;
use sha2::{Digest, Sha256};

/// What a token is known by here: its SHA-256, so no memory of this process holds a token
/// longer than the call that presented it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TokenKey([u8; 32]);

impl TokenKey {
    pub(crate) fn of(token: &str) -> TokenKey {
        TokenKey(Sha256::digest(token.as_bytes()).into())
    }
}

struct Entry {
    caller: Caller,
    expires: Instant,
    /// When it came in, as a count: the smallest is the oldest.
    order: u64,
}

/// Callers by token, each until its deadline, at most `capacity` of them.
pub(crate) struct Cache {
    capacity: usize,
    entries: HashMap<TokenKey, Entry>,
    /// The entries by deadline, the first to expire first.
    by_deadline: BTreeSet<(Instant, u64)>,
    /// The entries by arrival, the oldest first.
    by_order: BTreeMap<u64, TokenKey>,
    next_order: u64,
}

impl Cache {
    pub(crate) fn new(capacity: usize) -> Cache {
        Cache {
            capacity,
            entries: HashMap::new(),
            by_deadline: BTreeSet::new(),
            by_order: BTreeMap::new(),
            next_order: 0,
        }
    }

    /// How many entries are held, the expired ones not yet dropped included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The caller of `key`, while its entry lives; an expired entry is dropped.
    pub(crate) fn get(&mut self, key: &TokenKey, now: Instant) -> Option<Caller> {
        let entry = self.entries.get(key)?;
        if entry.expires > now {
            return Some(entry.caller.clone());
        }
        self.remove(key);
        None
    }

    /// Keeps `caller` for `key` until `expires` (a deadline already passed keeps nothing), making
    /// room first: the expired entries go, then the oldest.
    pub(crate) fn insert(&mut self, key: TokenKey, caller: Caller, expires: Instant, now: Instant) {
        self.remove(&key);
        if expires <= now || self.capacity == 0 {
            return;
        }
        self.make_room(now);
        let order = self.next_order;
        self.next_order += 1;
        self.by_deadline.insert((expires, order));
        self.by_order.insert(order, key);
        self.entries.insert(
            key,
            Entry {
                caller,
                expires,
                order,
            },
        );
    }

    /// Drops entries until one more fits: every expired one, then the oldest.
    fn make_room(&mut self, now: Instant) {
        let fits = |cache: &Cache| cache.entries.len() < cache.capacity;
        if fits(self) {
            return;
        }
        while let Some(&(expires, order)) = self.by_deadline.first()
            && expires <= now
        {
            self.remove_order(order);
        }
        while !fits(self) {
            let Some((&order, _)) = self.by_order.first_key_value() else {
                return;
            };
            self.remove_order(order);
        }
    }

    fn remove_order(&mut self, order: u64) {
        if let Some(key) = self.by_order.get(&order).copied() {
            self.remove(&key);
        }
    }

    fn remove(&mut self, key: &TokenKey) {
        if let Some(entry) = self.entries.remove(key) {
            self.by_deadline.remove(&(entry.expires, entry.order));
            self.by_order.remove(&entry.order);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use envelope_core::{Principal, Scopes};

    use super::*;

    fn caller(subject: &str) -> Caller {
        Caller::new(
            Principal::new("https://auth.example.com", subject),
            Scopes::parse("notes:read"),
        )
    }

    /// Keeps the caller of `token` in `cache` until `expires`, at `now`.
    fn keep(cache: &mut Cache, token: &str, expires: Instant, now: Instant) {
        cache.insert(TokenKey::of(token), caller(token), expires, now);
    }

    fn subject(cache: &mut Cache, token: &str, now: Instant) -> Option<String> {
        cache
            .get(&TokenKey::of(token), now)
            .map(|caller| caller.principal().subject().to_owned())
    }

    #[test]
    fn an_entry_lives_until_its_deadline() {
        let now = Instant::now();
        let mut cache = Cache::new(10);
        keep(&mut cache, "a", now + Duration::from_secs(1), now);
        assert_eq!(subject(&mut cache, "a", now).as_deref(), Some("a"));
        assert_eq!(subject(&mut cache, "b", now), None);
        assert_eq!(subject(&mut cache, "a", now + Duration::from_secs(1)), None);
        assert_eq!(cache.len(), 0, "an expired entry is dropped when read");
        // A deadline already passed keeps nothing.
        keep(&mut cache, "c", now, now);
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn the_cache_never_grows_past_its_capacity() {
        let now = Instant::now();
        let mut cache = Cache::new(3);
        for (i, token) in ["a", "b", "c"].into_iter().enumerate() {
            let lives = Duration::from_secs(10 + u64::try_from(i).expect("small"));
            keep(&mut cache, token, now + lives, now);
        }
        // `b` expires first, though `a` is the oldest: the expired entry goes first.
        keep(&mut cache, "b", now + Duration::from_secs(1), now);
        let later = now + Duration::from_secs(2);
        keep(&mut cache, "d", later + Duration::from_secs(60), later);
        assert_eq!(cache.len(), 3);
        assert_eq!(subject(&mut cache, "a", later).as_deref(), Some("a"));
        assert_eq!(subject(&mut cache, "b", later), None);
        // Nothing expired: the oldest goes.
        keep(&mut cache, "e", later + Duration::from_secs(60), later);
        assert_eq!(cache.len(), 3);
        assert_eq!(subject(&mut cache, "a", later), None);
        for token in ["c", "d", "e"] {
            assert_eq!(subject(&mut cache, token, later).as_deref(), Some(token));
        }
        // Many more: never more than the capacity, the newest kept.
        for i in 0..1000 {
            let token = format!("t{i}");
            keep(&mut cache, &token, later + Duration::from_secs(60), later);
            assert!(cache.len() <= 3);
        }
        assert_eq!(subject(&mut cache, "t999", later).as_deref(), Some("t999"));
        assert_eq!(cache.by_deadline.len(), 3);
        assert_eq!(cache.by_order.len(), 3);
        // A capacity of none keeps nothing.
        let mut cache = Cache::new(0);
        keep(&mut cache, "f", later + Duration::from_secs(60), later);
        assert_eq!(cache.len(), 0);
    }
}
