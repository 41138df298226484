//! Who watches which of the upstream's resources: the clients that subscribed to it
//! (`resources/subscribe`), each told of every update the upstream announces for it
//! (`notifications/resources/updated`), and no other client.
#![allow(deprecated)] // the legacy subscription, which rmcp marks deprecated

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::Peer;

/// Each resource's watchers, by URI.
#[derive(Clone, Default)]
pub(crate) struct Watchers(Arc<Mutex<HashMap<String, Vec<Peer<RoleServer>>>>>);

/// Whether two peers are the same client's connection: rmcp keeps one handshake record per
/// connection, shared by every handle to it.
fn same_client(one: &Peer<RoleServer>, other: &Peer<RoleServer>) -> bool {
    match (one.peer_info(), other.peer_info()) {
        (Some(one), Some(other)) => Arc::ptr_eq(&one, &other),
        _ => false,
    }
}

impl Watchers {
    /// `client` watches `uri`; whether it is the first to.
    pub(crate) fn add(&self, uri: &str, client: Peer<RoleServer>) -> bool {
        let mut watched = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let watchers = watched.entry(uri.to_owned()).or_default();
        watchers.retain(|watcher| !watcher.is_transport_closed());
        let first = watchers.is_empty();
        if !watchers.iter().any(|watcher| same_client(watcher, &client)) {
            watchers.push(client);
        }
        first
    }

    /// `client` no longer watches `uri`; whether anyone still does.
    pub(crate) fn remove(&self, uri: &str, client: &Peer<RoleServer>) -> bool {
        let mut watched = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(watchers) = watched.get_mut(uri) else {
            return false;
        };
        watchers.retain(|watcher| !same_client(watcher, client) && !watcher.is_transport_closed());
        let watching = !watchers.is_empty();
        if !watching {
            watched.remove(uri);
        }
        watching
    }

    /// The resources some client still watches.
    pub(crate) fn uris(&self) -> Vec<String> {
        let watched = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        watched
            .iter()
            .filter(|(_, watchers)| {
                watchers
                    .iter()
                    .any(|watcher| !watcher.is_transport_closed())
            })
            .map(|(uri, _)| uri.clone())
            .collect()
    }

    /// Tells each client watching the resource `update` names that it changed.
    pub(crate) fn tell(&self, update: &ResourceUpdatedNotificationParam) {
        let watchers: Vec<Peer<RoleServer>> = {
            let watched = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            watched.get(&update.uri).cloned().unwrap_or_default()
        };
        for watcher in watchers {
            let update = update.clone();
            tokio::spawn(async move {
                let _ = watcher.notify_resource_updated(update).await;
            });
        }
    }
}
