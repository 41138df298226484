//! Who watches which of the upstream's resources: the clients that subscribed to it — a client
//! on the 2025 revisions by `resources/subscribe`, a 2026-07-28 subscription stream
//! (`subscriptions/listen`) that named it — each told of every update the upstream announces for
//! it (`notifications/resources/updated`), and no other client.
#![allow(deprecated)] // the legacy subscription, which rmcp marks deprecated

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};

/// Each resource's watchers, by URI.
#[derive(Clone, Default)]
pub(crate) struct Watchers {
    watched: Arc<Mutex<HashMap<String, Vec<Watcher>>>>,
    /// The number of the next stream: a stream's request id is unique only in its session.
    streams: Arc<AtomicU64>,
}

/// One client watching a resource.
#[derive(Clone)]
pub(crate) enum Watcher {
    /// A client on the 2025 revisions, which subscribed by `resources/subscribe`.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 subscription stream that named the resource, until it ends; numbered by
    /// [`Watchers::stream`].
    Stream(u64, SubscriptionSink),
}

impl Watcher {
    /// Whether two are the same client's: one connection's peers (rmcp keeps one handshake
    /// record per connection, shared by every handle to it), or one stream.
    fn same(&self, other: &Watcher) -> bool {
        match (self, other) {
            (Watcher::Session(one), Watcher::Session(other)) => {
                match (one.peer_info(), other.peer_info()) {
                    (Some(one), Some(other)) => Arc::ptr_eq(&one, &other),
                    _ => false,
                }
            }
            (Watcher::Stream(one, _), Watcher::Stream(other, _)) => one == other,
            _ => false,
        }
    }

    /// Whether it can still be told: a stream is taken off when it ends.
    fn is_gone(&self) -> bool {
        match self {
            Watcher::Session(peer) => peer.is_transport_closed(),
            Watcher::Stream(..) => false,
        }
    }
}

impl Watchers {
    /// `sink`, a subscription stream, as a watcher of a number of its own.
    pub(crate) fn stream(&self, sink: SubscriptionSink) -> Watcher {
        Watcher::Stream(self.streams.fetch_add(1, Ordering::Relaxed), sink)
    }

    /// Whether some client watches `uri`.
    pub(crate) fn is_watched(&self, uri: &str) -> bool {
        let watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        watched
            .get(uri)
            .is_some_and(|watchers| watchers.iter().any(|watcher| !watcher.is_gone()))
    }

    /// `watcher` watches `uri`.
    pub(crate) fn add(&self, uri: &str, watcher: Watcher) {
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        let watchers = watched.entry(uri.to_owned()).or_default();
        watchers.retain(|kept| !kept.is_gone());
        if !watchers.iter().any(|kept| kept.same(&watcher)) {
            watchers.push(watcher);
        }
    }

    /// `watcher` no longer watches `uri`; whether anyone still does.
    pub(crate) fn remove(&self, uri: &str, watcher: &Watcher) -> bool {
        let mut watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(watchers) = watched.get_mut(uri) else {
            return false;
        };
        watchers.retain(|kept| !kept.same(watcher) && !kept.is_gone());
        let watching = !watchers.is_empty();
        if !watching {
            watched.remove(uri);
        }
        watching
    }

    /// The resources some client still watches.
    pub(crate) fn uris(&self) -> Vec<String> {
        let watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
        watched
            .iter()
            .filter(|(_, watchers)| watchers.iter().any(|watcher| !watcher.is_gone()))
            .map(|(uri, _)| uri.clone())
            .collect()
    }

    /// Tells each client watching the resource `update` names that it changed.
    pub(crate) fn tell(&self, update: &ResourceUpdatedNotificationParam) {
        let watchers: Vec<Watcher> = {
            let watched = self.watched.lock().unwrap_or_else(PoisonError::into_inner);
            watched.get(&update.uri).cloned().unwrap_or_default()
        };
        for watcher in watchers {
            let update = update.clone();
            tokio::spawn(async move {
                match watcher {
                    Watcher::Session(peer) => {
                        let _ = peer.notify_resource_updated(update).await;
                    }
                    Watcher::Stream(_, sink) => {
                        let _ = sink.notify_resource_updated(update.uri).await;
                    }
                }
            });
        }
    }
}
