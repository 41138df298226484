//! The tools a server serves now. The set can change while the server runs (a tool learned at
//! run time joins, another leaves), so it is a table swapped whole on each change, with what is
//! worked out from each tool (its MCP listing, its compiled input schema, its declared
//! argument names) worked out once per change. A call reads the table it was chosen from from
//! its door to its answer, so a change never shows a call half of one set and half of another.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use envelope_core::{SpecText, Tool, ToolSpec, Toolset};
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use super::scopes::Shown;
use crate::schema_check::SchemaCheck;

/// One version of the served tools, and what is worked out from them.
pub(crate) struct Served {
    pub(crate) tools: Toolset,
    /// Each tool as MCP lists it, sorted by name, as `tools` is.
    pub(crate) listing: Arc<[rmcp::model::Tool]>,
    /// Each runnable tool's input schema, compiled: a suggested next action must pass it.
    pub(crate) inputs: BTreeMap<SpecText, SchemaCheck>,
    /// The argument names each tool declares, the controls aside (`None`: its schema cannot
    /// list them): the door splits a call's controls from its arguments by them.
    pub(crate) declared: BTreeMap<SpecText, Option<Vec<String>>>,
    /// Each blocking tool's turns: how many of its calls may run at once, the rest waiting
    /// (see [`EnvelopeConfig::with_blocking_calls_per_tool`](crate::EnvelopeConfig::with_blocking_calls_per_tool)).
    /// A tool of its own, so that a flood of one tool's calls queues behind itself and not in
    /// front of another tool's.
    pub(crate) turns: BTreeMap<SpecText, Arc<super::turns::Turns>>,
}

/// A tool as a call chose it, with the table it was chosen from: the call reads that table
/// throughout, whatever changes meanwhile.
#[derive(Clone)]
pub(crate) struct Chosen {
    pub(crate) served: Arc<Served>,
    pub(crate) tool: Arc<dyn Tool>,
}

impl Served {
    /// `tools`, with each one's listing (by `list`), input schema (of those `runnable`) and
    /// declared arguments worked out.
    pub(crate) fn new(
        tools: Toolset,
        list: impl Fn(&dyn Tool) -> rmcp::model::Tool,
        runnable: impl Fn(&ToolSpec) -> bool,
        blocking_calls: Option<usize>,
    ) -> Served {
        let listing = tools.iter().map(list).collect();
        let inputs = tools
            .iter()
            .filter(|tool| runnable(tool.spec()))
            .filter_map(|tool| Some((tool.spec().name.clone(), input_validator(tool)?)))
            .collect();
        let declared = tools
            .iter()
            .map(|tool| (tool.spec().name.clone(), tool.declared_arguments()))
            .collect();
        let turns = match blocking_calls {
            Some(calls) => tools
                .iter()
                .map(|tool| tool.spec())
                .filter(|spec| spec.blocking)
                .map(|spec| (spec.name.clone(), Arc::new(super::turns::Turns::new(calls))))
                .collect(),
            None => BTreeMap::new(),
        };
        Served {
            tools,
            listing,
            inputs,
            declared,
            turns,
        }
    }

    /// The names of the tools `shown` to a caller, sorted: what an unknown name's refusal
    /// offers instead, on every surface.
    pub(crate) fn names_shown(&self, shown: Shown<'_>) -> Vec<&str> {
        self.tools
            .iter()
            .map(|tool| tool.spec())
            .filter(|spec| shown.includes(spec))
            .map(|spec| &*spec.name)
            .collect()
    }

    /// The tool named `name`, with this table.
    pub(crate) fn choose(self: &Arc<Self>, name: &str) -> Option<Chosen> {
        Some(Chosen {
            served: Arc::clone(self),
            tool: self.tools.shared(name)?,
        })
    }
}

/// `tool`'s input schema, compiled; `None`, logged, when it does not compile, and then no
/// action can target the tool.
fn input_validator(tool: &dyn Tool) -> Option<SchemaCheck> {
    let mut schema = tool.input_schema().to_value();
    // A strict tool refuses unknown arguments, which its schema alone allows. Not
    // `additionalProperties`: it sees only the top-level `properties`, and the arguments of an
    // enum live in the `allOf` the input schema wraps them in.
    if tool.spec().strict_args
        && let Some(object) = schema.as_object_mut()
    {
        object.insert("unevaluatedProperties".to_owned(), Value::Bool(false));
    }
    match SchemaCheck::new(&schema) {
        Ok(validator) => Some(validator),
        Err(error) => {
            let tool = &*tool.spec().name;
            tracing::error!(tool, %error, "input schema does not compile");
            None
        }
    }
}

/// The served table, and the sessions told when it changes.
pub(crate) struct Table {
    now: RwLock<Arc<Served>>,
    /// The sessions that initialized while the server announces changes: each is sent
    /// `notifications/tools/list_changed` when the set changes, until its transport closes.
    sessions: Mutex<Vec<Peer<RoleServer>>>,
    /// The 2026-07-28 subscriptions to the tools' changes (or a composed handler's lists'),
    /// told likewise until they end.
    subscriptions: Mutex<Vec<Subscription>>,
    /// The number the next subscription gets.
    next_subscription: AtomicU64,
}

/// A 2026-07-28 subscription remembered, under a number of its own: its request id is unique
/// only within its session, and two sessions may well each listen as request 1.
#[derive(Clone)]
pub(crate) struct Subscription {
    pub(crate) number: u64,
    pub(crate) sink: SubscriptionSink,
}

/// Who is told when the tools change: sessions, and 2026-07-28 subscriptions.
pub(crate) struct Listeners {
    pub(crate) sessions: Vec<Peer<RoleServer>>,
    pub(crate) subscriptions: Vec<Subscription>,
}

impl Table {
    pub(crate) fn new(served: Served) -> Table {
        Table {
            now: RwLock::new(Arc::new(served)),
            sessions: Mutex::default(),
            subscriptions: Mutex::default(),
            next_subscription: AtomicU64::new(0),
        }
    }

    /// The table as it is now.
    pub(crate) fn now(&self) -> Arc<Served> {
        // A writer that panicked left the last whole table in place: swaps are one store.
        Arc::clone(&self.now.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Remembers `peer`'s session, to tell it of changes.
    pub(crate) fn watch(&self, peer: Peer<RoleServer>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|session| !session.is_transport_closed());
        sessions.push(peer);
    }

    /// The sessions remembered that are still open.
    pub(crate) fn sessions(&self) -> Vec<Peer<RoleServer>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|session| !session.is_transport_closed());
        sessions.clone()
    }

    /// The 2026-07-28 subscriptions remembered.
    pub(crate) fn subscriptions(&self) -> Vec<Subscription> {
        self.subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Remembers a 2026-07-28 subscription to the lists' changes, to tell it of them; the
    /// number it is let go by.
    pub(crate) fn subscribe(&self, sink: SubscriptionSink) -> u64 {
        let number = self.next_subscription.fetch_add(1, Ordering::Relaxed);
        let mut subscriptions = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subscriptions.push(Subscription { number, sink });
        number
    }

    /// Applies `change` to the current tools; when it changed them, swaps in the new set,
    /// worked out by `work_out`, and names who to tell. Returns what `change` returned.
    pub(crate) fn change<R>(
        &self,
        change: impl FnOnce(&mut Toolset) -> R,
        work_out: impl FnOnce(Toolset) -> Served,
    ) -> (R, Option<Listeners>) {
        // One writer at a time: two changes at once would each start from the same table.
        let mut now = self.now.write().unwrap_or_else(PoisonError::into_inner);
        let mut tools = now.tools.clone();
        let result = change(&mut tools);
        // Nothing to work out again, or to tell, when the same tools are served.
        if same_tools(&tools, &now.tools) {
            return (result, None);
        }
        *now = Arc::new(work_out(tools));
        drop(now);
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|session| !session.is_transport_closed());
        let listeners = Listeners {
            sessions: sessions.clone(),
            subscriptions: self
                .subscriptions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        };
        (result, Some(listeners))
    }

    /// Lets go of the subscriptions numbered in `ended`.
    pub(crate) fn unsubscribe(&self, ended: &[u64]) {
        if ended.is_empty() {
            return;
        }
        let mut subscriptions = self
            .subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subscriptions.retain(|subscription| !ended.contains(&subscription.number));
    }
}

/// Whether `a` and `b` serve the very same tools: the same names, each the same shared tool.
fn same_tools(a: &Toolset, b: &Toolset) -> bool {
    a.len() == b.len()
        && a.names().eq(b.names())
        && a.iter().zip(b.iter()).all(|(a, b)| std::ptr::addr_eq(a, b))
}
