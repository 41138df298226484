//! The boxed future the crate's object-safe traits return.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future, as [`Tool::call`](crate::Tool::call) and a
/// [`ClientChannel`](crate::ClientChannel) return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
