//! The one upstream server: started (or reached), its listing and its calls, and started again,
//! with backoff, when it dies.
//!
//! Over stdio its output is read with bounded lines ([`envelope_check::stdio_transport`]): a
//! message longer than the configured bound is dropped as it streams by, and the call in
//! progress is told at once, never left waiting for an answer that will not come.
#![allow(deprecated)] // sampling and logging, which rmcp marks deprecated

use std::collections::HashMap;
use std::future::Future;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use envelope_check::Faults;
use envelope_core::ToolError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject,
    LoggingLevel, NumberOrString, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    RequestMetaObject, ServerNotification, ServerResult, SubscriptionFilter, Tool,
};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _};
use rmcp::service::{
    MaybeSendFuture, NotificationContext, Peer, PeerRequestOptions, RunningService, ServiceError,
};
use rmcp::transport::IntoTransport;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::{Mutex, Notify, mpsc};

use crate::config::{ProxyConfig, Revision, Target};
use crate::errors::{
    UPSTREAM_ANSWER_TOO_LARGE, UPSTREAM_MALFORMED, UPSTREAM_TIMEOUT, rpc_error, unavailable,
    upstream_error,
};
use crate::input::{Answered, Retry};
use crate::relay::InFlight;
use crate::watchers::Watchers;

/// The first wait before starting a dead upstream again; doubled after each start that fails
/// or dies, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between two starts of an upstream that keeps dying.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// An upstream that ran this long before dying starts again without waiting.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// One progress report of the upstream's, for the call that asked for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
}

/// Where each call in flight that relays its progress gets it, by the token the proxy sent.
type ProgressRoutes = Arc<std::sync::Mutex<HashMap<String, mpsc::UnboundedSender<Progress>>>>;

/// What the proxy's client hears from the upstream besides answers, and what it is asked.
#[derive(Clone, Default)]
struct Listener {
    revision: Revision,
    tools_changed: Arc<Notify>,
    lists_changed: ListsChanged,
    progress: ProgressRoutes,
    in_flight: InFlight,
    watchers: Watchers,
}

/// Woken when the upstream says its prompts, or its resources, changed. A `Notify` keeps one
/// wake-up however many notices arrive before it is read: an upstream flooding them costs its
/// clients one notice each per round of telling.
#[derive(Clone, Default)]
pub(crate) struct ListsChanged {
    pub(crate) prompts: Arc<Notify>,
    pub(crate) resources: Arc<Notify>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        info.capabilities = crate::relay::capabilities(self.revision);
        info
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.in_flight.sample(params).await
    }

    async fn create_elicitation(
        &self,
        params: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.in_flight.elicit(params).await
    }

    fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.watchers.tell(&params);
        std::future::ready(())
    }

    fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.in_flight.log(params);
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.tools_changed.notify_one();
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.lists_changed.prompts.notify_one();
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.lists_changed.resources.notify_one();
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        let token = token_key(&params.progress_token);
        let routes = self
            .progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A report for a call that ended (or a token the proxy never sent) goes nowhere.
        if let Some(route) = routes.get(&token) {
            let _ = route.send(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
        std::future::ready(())
    }
}

/// A progress token as the routes key it.
fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(number) => format!("n:{number}"),
        NumberOrString::String(text) => format!("s:{text}"),
    }
}

/// One live connection to the upstream.
struct Connection {
    service: RunningService<RoleClient, Listener>,
    /// What the upstream sent that could not be read (stdio only).
    faults: Option<Arc<Faults>>,
    started: Instant,
}

/// Whether the upstream is up, and if not, when it may be started again.
enum State {
    /// Running; `backoff` is the wait before the next start should this one die young.
    Up {
        connection: Arc<Connection>,
        backoff: Duration,
    },
    Down {
        why: String,
        next_start: Instant,
        backoff: Duration,
    },
}

/// The upstream server the proxy fronts.
pub struct Upstream {
    target: Target,
    env: Vec<(String, String)>,
    max_message_bytes: usize,
    call_timeout: Duration,
    stderr: bool,
    revision: Revision,
    tools_changed: Arc<Notify>,
    lists_changed: ListsChanged,
    progress: ProgressRoutes,
    in_flight: InFlight,
    watchers: Watchers,
    /// The log level a client last set (`logging/setLevel`), set again on a new connection.
    log_level: std::sync::Mutex<Option<LoggingLevel>>,
    /// On 2026-07-28: each resource watched, the task reading its subscription stream.
    resource_streams: std::sync::Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// Held while the upstream is asked to start or stop telling of a resource, so that a
    /// stop decided on a watcher list another client has joined since is not carried out. Taken
    /// only with a peer in hand: never while waiting for the connection, whose restoring
    /// takes it.
    watching: Mutex<()>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// The upstream `config` names, started (or reached) now: an error when it cannot be.
    pub async fn start(config: &ProxyConfig) -> Result<Upstream, String> {
        let upstream = Upstream {
            target: config.target().map_err(|error| error.to_string())?,
            env: config.upstream_env().map_err(|error| error.to_string())?,
            max_message_bytes: config.max_message_bytes(),
            call_timeout: config.call_timeout(),
            stderr: config.upstream.stderr.unwrap_or(true),
            revision: config.revision(),
            tools_changed: Arc::default(),
            lists_changed: ListsChanged::default(),
            progress: ProgressRoutes::default(),
            in_flight: InFlight::default(),
            watchers: Watchers::default(),
            log_level: std::sync::Mutex::default(),
            resource_streams: std::sync::Mutex::default(),
            watching: Mutex::new(()),
            state: Mutex::new(State::Down {
                why: "not started".to_owned(),
                next_start: Instant::now(),
                backoff: FIRST_BACKOFF,
            }),
        };
        let connection = upstream.connect().await?;
        *upstream.state.lock().await = State::Up {
            connection: Arc::new(connection),
            backoff: FIRST_BACKOFF,
        };
        Ok(upstream)
    }

    /// The clients watching the upstream's resources, told of each update it announces.
    pub(crate) fn watchers(&self) -> Watchers {
        self.watchers.clone()
    }

    /// Remembers the log level a client set, for a connection made after it.
    pub(crate) fn keep_log_level(&self, level: LoggingLevel) {
        *self
            .log_level
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(level);
    }

    /// The live peer, for a request made on a client's behalf: its absence as that request's
    /// error.
    pub(crate) async fn request_peer(&self) -> Result<Peer<RoleClient>, ServiceError> {
        self.peer().await.map_err(|error| {
            ServiceError::McpError(rmcp::ErrorData::internal_error(
                error.message().to_owned(),
                None,
            ))
        })
    }

    /// `request`'s outcome, or [`ServiceError::Timeout`] past the call timeout.
    async fn within_timeout<T>(
        &self,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, ServiceError> {
        tokio::time::timeout(self.call_timeout, request)
            .await
            .unwrap_or(Err(ServiceError::Timeout {
                timeout: self.call_timeout,
            }))
    }

    /// Asks the upstream to tell of the resource `uri`'s updates, which go to its watchers:
    /// `resources/subscribe`, or on 2026-07-28 a subscription stream of its own (one a
    /// resource, kept while it is watched). An upstream that does not acknowledge within the
    /// call timeout is answered [`ServiceError::Timeout`].
    pub(crate) async fn watch(&self, uri: &str) -> Result<(), ServiceError> {
        let peer = self.request_peer().await?;
        let _watching = self.watching.lock().await;
        self.within_timeout(self.watch_with(&peer, uri)).await
    }

    async fn watch_with(&self, peer: &Peer<RoleClient>, uri: &str) -> Result<(), ServiceError> {
        if self.revision != Revision::Discover {
            #[allow(deprecated)] // the legacy subscription, which the 2025 revisions speak
            return peer
                .subscribe(rmcp::model::SubscribeRequestParams::new(uri.to_owned()))
                .await;
        }
        let streaming = self
            .resource_streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(uri)
            .is_some_and(|task| !task.is_finished());
        if streaming {
            return Ok(());
        }
        let mut filter = SubscriptionFilter::default();
        filter.resource_subscriptions = Some(vec![uri.to_owned()]);
        let mut subscription = peer.listen(filter).await?;
        let accepted = subscription
            .acknowledged()
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| uris.iter().any(|accepted| accepted == uri));
        if !accepted {
            return Err(ServiceError::McpError(rmcp::ErrorData::invalid_params(
                format!("the upstream does not tell of `{uri}`'s updates"),
                None,
            )));
        }
        let watchers = self.watchers.clone();
        let task = tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                if let ServerNotification::ResourceUpdatedNotification(updated) = notification {
                    watchers.tell(&updated.params);
                }
            }
        });
        if let Some(stale) = self
            .resource_streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(uri.to_owned(), task.abort_handle())
        {
            stale.abort();
        }
        Ok(())
    }

    /// Ends the task reading `uri`'s subscription stream, if there is one: dropped with it, the
    /// subscription is cancelled upstream.
    fn end_stream(&self, uri: &str) {
        if let Some(task) = self
            .resource_streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(uri)
        {
            task.abort();
        }
    }

    /// Tells the upstream no one watches `uri` any more: `resources/unsubscribe` (within the
    /// call timeout), or the end of its subscription stream.
    pub(crate) async fn unwatch(&self, uri: &str) -> Result<(), ServiceError> {
        // On 2026-07-28 the stream is this proxy's own task: no request to send.
        let peer = match self.revision {
            Revision::Discover => None,
            _ => Some(self.request_peer().await?),
        };
        let _watching = self.watching.lock().await;
        // Someone watches it again since the last watcher left: it stays watched.
        if self.watchers.is_watched(uri) {
            return Ok(());
        }
        let Some(peer) = peer else {
            self.end_stream(uri);
            return Ok(());
        };
        #[allow(deprecated)] // the legacy subscription, which the 2025 revisions speak
        let unsubscribing =
            peer.unsubscribe(rmcp::model::UnsubscribeRequestParams::new(uri.to_owned()));
        self.within_timeout(unsubscribing).await
    }

    /// What a new connection does before it serves: follow the upstream's lists, and restore
    /// what the clients asked of the connection before. Each request is bounded by the call
    /// timeout, and the restored ones are made at once: the connection is being made under the
    /// lock every call waits on, so an upstream that never acknowledges holds them a few call
    /// timeouts at most (following the lists, a watch already under way on the old connection,
    /// the restored requests), and one request it leaves unanswered costs no other.
    async fn settle_in(&self, service: &RunningService<RoleClient, Listener>) {
        if tokio::time::timeout(self.call_timeout, self.follow_lists(service))
            .await
            .is_err()
        {
            tracing::warn!(
                "the upstream did not acknowledge the subscription to its lists' changes in time; serving without it"
            );
        }
        self.restore(service).await;
    }

    /// What a new connection owes the clients of the one before: the resources they watch,
    /// subscribed to again, and (before 2026-07-28, whose requests each name their own) the
    /// log level they set, set again. An upstream that started again knows neither. Every
    /// request goes at once, each within the call timeout; what the upstream refuses or leaves
    /// unanswered is logged, and the connection serves all the same.
    async fn restore(&self, service: &RunningService<RoleClient, Listener>) {
        let peer = service.peer();
        let _watching = self.watching.lock().await;
        let subscribing = self.watchers.uris().into_iter().map(|uri| async move {
            if self.revision == Revision::Discover {
                // The old stream ended with its connection: a new one, whatever is recorded.
                self.end_stream(&uri);
            }
            if let Err(error) = self.within_timeout(self.watch_with(peer, &uri)).await {
                tracing::warn!(%error, %uri, "the upstream refused a subscription made again");
            }
        });
        let level = match self.revision {
            Revision::Discover => None,
            _ => *self
                .log_level
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        };
        let leveling = async {
            let Some(level) = level else { return };
            let setting = peer.set_level(rmcp::model::SetLevelRequestParams::new(level));
            if let Err(error) = self.within_timeout(setting).await {
                tracing::warn!(%error, "the upstream refused the log level set again");
            }
        };
        futures::future::join(futures::future::join_all(subscribing), leveling).await;
    }

    /// Woken each time the upstream says its tools changed.
    pub(crate) fn tools_changed(&self) -> Arc<Notify> {
        Arc::clone(&self.tools_changed)
    }

    /// Woken each time the upstream says its prompts or its resources changed.
    pub(crate) fn lists_changed(&self) -> ListsChanged {
        self.lists_changed.clone()
    }

    /// How long one call may take.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The upstream's tools, every page of them.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ToolError> {
        let connection = self.connection().await?;
        let listed = tokio::time::timeout(
            self.call_timeout,
            watched(&connection, connection.service.peer().list_all_tools()),
        )
        .await;
        self.settle(&connection, listed, "tools/list").await
    }

    /// Calls the upstream's tool `name` with `arguments`, for no client in particular: what
    /// the upstream asks of a client meanwhile is refused, and nothing stops the call but its
    /// timeout.
    pub async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ToolError> {
        let ctx = envelope_core::ToolContext::new();
        crate::input::until_answered(&ctx, |retry| {
            self.call_for(&ctx, name, arguments.clone(), retry, None)
        })
        .await
    }

    /// Calls the upstream's tool `name` with `arguments` for the call of `ctx`: with
    /// `progress`, sends each progress report the upstream makes for the call there, until the
    /// call ends; the upstream's requests and log messages meanwhile go to `ctx`'s client
    /// while it is the only call in flight. When `ctx`'s client cancels, or the call is
    /// dropped unanswered (its deadline passed), the upstream is told to stop
    /// (`notifications/cancelled`). A `retry` carries the input an upstream on 2026-07-28
    /// asked for (see [`crate::input`]).
    pub(crate) async fn call_for(
        &self,
        ctx: &envelope_core::ToolContext,
        name: &str,
        arguments: JsonObject,
        retry: Option<Retry>,
        progress: Option<mpsc::UnboundedSender<Progress>>,
    ) -> Result<Answered, ToolError> {
        let connection = self.connection().await?;
        let mut options = PeerRequestOptions::no_options();
        if self.revision == Revision::Discover {
            // Each request on 2026-07-28 says its client's capabilities: the caller's, not the
            // proxy's, so the upstream asks it only what it can answer.
            let mut meta = RequestMetaObject::default();
            meta.set_client_capabilities(crate::relay::callers_capabilities(ctx));
            // That revision has no session level: each request names the least it wants, and
            // the upstream's messages come back on the call's own stream.
            if let Some(level) = ctx.log_level() {
                meta.set_log_level(envelope_mcp::logging_level_of(level));
            }
            options.meta = Some(meta);
        }
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        if let Some(retry) = retry {
            params.input_responses = Some(retry.responses);
            params.request_state = retry.state;
        }
        let peer = connection.service.peer().clone();
        let routes = Arc::clone(&self.progress);
        let _in_flight = self.in_flight.enter(ctx);
        let asked = async move {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            let handle = peer.send_request_with_option(request, options).await?;
            let mut stop = StopUnanswered {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            // rmcp gives every request a progress token of its own: the reports are routed by
            // the one it chose, from the moment the request is out.
            let token = token_key(&handle.progress_token);
            let routed = progress.is_some();
            if let Some(progress) = progress {
                routes
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(token.clone(), progress);
            }
            let answered = tokio::select! {
                answered = handle.await_response() => answered,
                () = cancelled(ctx) => {
                    stop.now("the client cancelled the call").await;
                    Err(ServiceError::Cancelled { reason: Some("the client cancelled the call".to_owned()) })
                }
            };
            stop.id = None;
            if routed {
                // rmcp hands each notification to a task of its own: a report the upstream
                // sent just before its answer may still be on its way. Those tasks are ready
                // now; let them run before the route closes. (A call without a route has
                // nothing to wait for.)
                for _ in 0..4 {
                    tokio::task::yield_now().await;
                }
                routes
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .remove(&token);
            }
            match answered? {
                ServerResult::CallToolResult(result) => Ok(Answered::Complete(result)),
                ServerResult::InputRequiredResult(asked) => Ok(Answered::InputRequired(asked)),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        };
        let called = tokio::time::timeout(self.call_timeout, watched(&connection, asked)).await;
        self.settle(&connection, called, name).await
    }

    /// What the upstream declared at `initialize` (its capabilities and instructions); `None`
    /// while it is down.
    pub async fn server_info(&self) -> Option<Arc<rmcp::model::ServerPeerInfo>> {
        self.peer().await.ok()?.peer_info()
    }

    /// The live peer, for what is forwarded as it is (no envelope).
    pub async fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        Ok(self.connection().await?.service.peer().clone())
    }

    /// The peer to send to now: the live connection, or a new one when the backoff allows.
    async fn connection(&self) -> Result<Arc<Connection>, ToolError> {
        let mut state = self.state.lock().await;
        if let State::Up {
            connection,
            backoff,
        } = &*state
        {
            if !connection.service.is_closed() && !connection.service.peer().is_transport_closed() {
                return Ok(Arc::clone(connection));
            }
            // Died young: wait before starting it again, longer each time.
            let (wait, backoff) = if connection.started.elapsed() >= HEALTHY_RUN {
                (Duration::ZERO, FIRST_BACKOFF)
            } else {
                (*backoff, (*backoff * 2).min(MAX_BACKOFF))
            };
            *state = State::Down {
                why: "it exited".to_owned(),
                next_start: Instant::now() + wait,
                backoff,
            };
        }
        let (why, next_start, backoff) = match &*state {
            State::Down {
                why,
                next_start,
                backoff,
            } => (why.clone(), *next_start, *backoff),
            State::Up { connection, .. } => return Ok(Arc::clone(connection)),
        };
        let now = Instant::now();
        if now < next_start {
            return Err(unavailable(&why, next_start - now));
        }
        match self.connect().await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                tracing::info!("the upstream started again");
                *state = State::Up {
                    connection: Arc::clone(&connection),
                    backoff,
                };
                Ok(connection)
            }
            Err(why) => {
                tracing::warn!(%why, "the upstream could not be started");
                *state = State::Down {
                    why: why.clone(),
                    next_start: Instant::now() + backoff,
                    backoff: (backoff * 2).min(MAX_BACKOFF),
                };
                Err(unavailable(&why, backoff))
            }
        }
    }

    /// The outcome of one request over `connection`: its answer, or the typed error, marking
    /// the upstream down when the connection is gone.
    async fn settle<T>(
        &self,
        connection: &Arc<Connection>,
        outcome: Result<Result<T, Failure>, tokio::time::error::Elapsed>,
        what: &str,
    ) -> Result<T, ToolError> {
        let failure = match outcome {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(failure)) => failure,
            Err(_) => {
                return Err(upstream_error(
                    UPSTREAM_TIMEOUT,
                    format!(
                        "the upstream did not answer `{what}` within {} s",
                        self.call_timeout.as_secs()
                    ),
                ));
            }
        };
        match failure {
            Failure::Service(ServiceError::McpError(error)) => Err(rpc_error(what, &error)),
            Failure::Fault(fault) => Err(fault_error(&fault, self.max_message_bytes)),
            Failure::Service(error) => {
                let gone = connection.service.is_closed()
                    || connection.service.peer().is_transport_closed()
                    || matches!(
                        error,
                        ServiceError::TransportClosed | ServiceError::TransportSend(_)
                    );
                if gone {
                    self.mark_down(connection, &error.to_string()).await
                } else {
                    Err(upstream_error(
                        UPSTREAM_MALFORMED,
                        format!("the upstream's answer to `{what}` could not be read: {error}"),
                    ))
                }
            }
        }
    }

    /// Marks the upstream down after `connection` failed; the next call starts it again.
    async fn mark_down<T>(&self, connection: &Arc<Connection>, why: &str) -> Result<T, ToolError> {
        let mut state = self.state.lock().await;
        if let State::Up {
            connection: current,
            backoff,
        } = &*state
            && Arc::ptr_eq(current, connection)
        {
            tracing::warn!(%why, "the upstream's connection closed");
            let (wait, backoff) = if current.started.elapsed() >= HEALTHY_RUN {
                (Duration::ZERO, FIRST_BACKOFF)
            } else {
                (*backoff, (*backoff * 2).min(MAX_BACKOFF))
            };
            *state = State::Down {
                why: why.to_owned(),
                next_start: Instant::now() + wait,
                backoff,
            };
        }
        Err(unavailable(why, Duration::ZERO))
    }

    /// The request a connection opens with, in the revision spoken to the upstream.
    fn opening(&self) -> &'static str {
        match self.revision {
            Revision::Initialize => "initialize",
            Revision::Discover => "server/discover",
        }
    }

    /// The session `listener` opens over `transport`, in the revision spoken to the upstream.
    async fn open<T, E, A>(
        &self,
        listener: Listener,
        transport: T,
    ) -> Result<RunningService<RoleClient, Listener>, ClientInitializeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let lifecycle = match self.revision {
            Revision::Initialize => ClientLifecycleMode::Initialize,
            Revision::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        };
        listener.serve_with_lifecycle(transport, lifecycle).await
    }

    /// On 2026-07-28, where changes come only to a subscription: subscribes to the changes of
    /// the lists the upstream says change (`subscriptions/listen`), each told as a session's
    /// notification would be, for as long as the connection lasts. An upstream that refuses is
    /// logged, and its lists are read again only when the proxy starts it again.
    async fn follow_lists(&self, service: &RunningService<RoleClient, Listener>) {
        if self.revision != Revision::Discover {
            return;
        }
        let Some(declared) = service.peer().peer_info() else {
            return;
        };
        let declared = &declared.capabilities;
        let changes = |declared: Option<bool>| (declared == Some(true)).then_some(true);
        let mut filter = SubscriptionFilter::default();
        filter.tools_list_changed = changes(declared.tools.as_ref().and_then(|it| it.list_changed));
        filter.prompts_list_changed =
            changes(declared.prompts.as_ref().and_then(|it| it.list_changed));
        filter.resources_list_changed =
            changes(declared.resources.as_ref().and_then(|it| it.list_changed));
        if filter == SubscriptionFilter::default() {
            return;
        }
        let mut subscription = match service.peer().listen(filter).await {
            Ok(subscription) => subscription,
            Err(error) => {
                tracing::warn!(%error, "the upstream refused to tell its lists' changes");
                return;
            }
        };
        let tools = Arc::clone(&self.tools_changed);
        let lists = self.lists_changed.clone();
        tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                match notification {
                    ServerNotification::ToolListChangedNotification(_) => tools.notify_one(),
                    ServerNotification::PromptListChangedNotification(_) => {
                        lists.prompts.notify_one();
                    }
                    ServerNotification::ResourceListChangedNotification(_) => {
                        lists.resources.notify_one();
                    }
                    _ => {}
                }
            }
        });
    }

    /// A new connection to the upstream, initialized.
    async fn connect(&self) -> Result<Connection, String> {
        let listener = Listener {
            revision: self.revision,
            tools_changed: Arc::clone(&self.tools_changed),
            lists_changed: self.lists_changed.clone(),
            progress: Arc::clone(&self.progress),
            in_flight: self.in_flight.clone(),
            watchers: self.watchers.clone(),
        };
        let started = Instant::now();
        match &self.target {
            Target::Url(url) => {
                let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                http.max_sse_event_size = self.max_message_bytes;
                http.max_json_response_size = self.max_message_bytes;
                let transport = StreamableHttpClientTransport::from_config(http);
                let service =
                    tokio::time::timeout(self.call_timeout, self.open(listener, transport))
                        .await
                        .map_err(|_| format!("{url} did not answer `{}`", self.opening()))?
                        .map_err(|error| format!("cannot connect to {url}: {error}"))?;
                self.settle_in(&service).await;
                Ok(Connection {
                    service,
                    faults: None,
                    started,
                })
            }
            Target::Command { program, args } => {
                let mut command = tokio::process::Command::new(program);
                command
                    .args(args)
                    .envs(self.env.iter().map(|(name, value)| (name, value)))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(if self.stderr {
                        Stdio::inherit()
                    } else {
                        Stdio::null()
                    })
                    .kill_on_drop(true);
                let mut child = command
                    .spawn()
                    .map_err(|error| format!("cannot run `{program}`: {error}"))?;
                let (Some(output), Some(input)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(format!("`{program}` has no standard input and output"));
                };
                let (transport, faults) =
                    envelope_check::stdio_transport(output, input, self.max_message_bytes);
                let service =
                    tokio::time::timeout(self.call_timeout, self.open(listener, transport))
                        .await
                        .map_err(|_| format!("`{program}` did not answer `{}`", self.opening()))?
                        .map_err(|error| format!("`{program}` did not initialize: {error}"))?;
                self.settle_in(&service).await;
                // The child is reaped when it exits; killed when the proxy drops it.
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
                Ok(Connection {
                    service,
                    faults: Some(faults),
                    started,
                })
            }
        }
    }
}

/// How one request failed before it was answered.
enum Failure {
    Service(ServiceError),
    /// Something the upstream sent could not be read.
    Fault(String),
}

/// `request`, or the first fault the upstream's output shows while it runs.
async fn watched<T>(
    connection: &Connection,
    request: impl Future<Output = Result<T, ServiceError>>,
) -> Result<T, Failure> {
    let Some(faults) = &connection.faults else {
        return request.await.map_err(Failure::Service);
    };
    tokio::select! {
        answered = request => answered.map_err(Failure::Service),
        fault = faults.next() => Err(Failure::Fault(fault)),
    }
}

/// The error of a fault in the upstream's output.
fn fault_error(fault: &str, max_message_bytes: usize) -> ToolError {
    if fault.contains("longer than") {
        upstream_error(
            UPSTREAM_ANSWER_TOO_LARGE,
            format!(
                "the upstream's answer is longer than {max_message_bytes} bytes, the most the \
                 proxy reads; it was dropped unread"
            ),
        )
        .with_hint("narrow the request so the upstream answers less")
    } else {
        upstream_error(UPSTREAM_MALFORMED, fault.to_owned())
    }
}

/// Tells the upstream to stop a request that goes unanswered: when dropped while it still
/// holds the request's id (the call timed out, or its deadline passed and it was dropped).
struct StopUnanswered {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl StopUnanswered {
    /// Tells the upstream now, and not again.
    async fn now(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            let _ = self
                .peer
                .send_notification(cancelled_notification(id, reason))
                .await;
        }
    }
}

impl Drop for StopUnanswered {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let notification = cancelled_notification(id, "the proxy stopped waiting for it");
            let _ = peer.send_notification(notification).await;
        });
    }
}

fn cancelled_notification(
    id: rmcp::model::RequestId,
    reason: &str,
) -> rmcp::model::ClientNotification {
    let params = rmcp::model::CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    rmcp::model::ClientNotification::CancelledNotification(rmcp::model::CancelledNotification::new(
        params,
    ))
}

/// Resolves once `ctx`'s client cancelled the call: woken by the transport's signal, or, for
/// one that can only be looked at, by reading it every [`CANCELLATION_POLL`].
async fn cancelled(ctx: &envelope_core::ToolContext) {
    if let Some(cancelled) = ctx.until_cancelled() {
        return cancelled.await;
    }
    loop {
        if ctx.is_cancelled() {
            return;
        }
        tokio::time::sleep(CANCELLATION_POLL).await;
    }
}

/// How often a call in flight looks whether its client cancelled it, when the signal cannot
/// wake it.
const CANCELLATION_POLL: Duration = Duration::from_millis(50);
