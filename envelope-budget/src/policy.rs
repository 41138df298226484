//! Where the budget comes from: the server's policy for every response.

use serde_json::Value;

use crate::subgraph::is_graph;
use crate::tokens::Estimator;
use crate::trim::{AGENT_BUDGET_CHARS, GRAPH_SUBGRAPH_BUDGET_CHARS};

/// Where the budget comes from for one response, and how it is kept.
///
/// Built from [`BudgetPolicy::default`] (or [`BudgetPolicy::unlimited`]) with the `with_`
/// methods; the fields are public to read. It is `#[non_exhaustive]`: a field a feature adds
/// never breaks a downstream crate.
///
/// ```
/// use envelope_budget::{BudgetPolicy, TRIMMABLE_LIST_KEYS};
///
/// const ORDER: &[&str] = &["matches", "files"];
/// let policy = BudgetPolicy::default().with_agent_chars(Some(8_000)).with_list_order(ORDER);
/// assert_eq!(policy.agent_chars, Some(8_000));
/// assert_eq!(BudgetPolicy::default().list_order, TRIMMABLE_LIST_KEYS);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetPolicy {
    /// The agent budget in token-normalized characters; `None` opts out of trimming (browser
    /// callers, which are not context-limited).
    pub agent_chars: Option<usize>,
    /// The ceiling for `{nodes, edges}` payloads.
    pub graph_chars: usize,
    /// How tokens are estimated and sizes normalized.
    pub estimator: Estimator,
    /// Which top-level lists of a payload the trimmer cuts first, one at a time in this order,
    /// each to its longest prefix that fits: the lists an agent misses least. Lists it does not
    /// name are cut after them, keeping a common fraction of their rows. Default:
    /// [`TRIMMABLE_LIST_KEYS`](crate::TRIMMABLE_LIST_KEYS), the list names of code-intelligence
    /// tools.
    pub list_order: &'static [&'static str],
    /// Count every response exactly (feature `exact`): `tokens_estimated` is the exact count
    /// of the bytes sent, and a response with a payload that the exact count puts over its
    /// budget is prepared again under a lowered budget, up to
    /// [`MAX_RETRIES`](crate::exactly::MAX_RETRIES) times (a payload nested past the depth
    /// limit is not: it is cut at that depth instead). Trimming itself works on the estimate, whose counts add up row by
    /// row; see [`exactly`](crate::exactly).
    #[cfg(feature = "exact")]
    pub exact: Option<crate::ExactCounter>,
    /// Count exactly only the responses whose estimate comes within
    /// [`TIGHT_MARGIN`](crate::exactly::TIGHT_MARGIN) of their budget (feature `exact`): those
    /// are stamped and kept within the budget by the exact count, as with `exact`; the rest
    /// keep the estimate, at its cost. Ignored when `exact` is set.
    #[cfg(feature = "exact")]
    pub exact_when_tight: Option<crate::ExactCounter>,
}

impl Default for BudgetPolicy {
    fn default() -> Self {
        BudgetPolicy {
            agent_chars: Some(AGENT_BUDGET_CHARS),
            graph_chars: GRAPH_SUBGRAPH_BUDGET_CHARS,
            estimator: Estimator::default(),
            list_order: crate::TRIMMABLE_LIST_KEYS,
            #[cfg(feature = "exact")]
            exact: None,
            #[cfg(feature = "exact")]
            exact_when_tight: None,
        }
    }
}

impl BudgetPolicy {
    /// No trimming at all.
    pub fn unlimited() -> Self {
        BudgetPolicy {
            agent_chars: None,
            ..BudgetPolicy::default()
        }
    }

    /// With the agent budget `chars` (token-normalized characters); `None` opts out of
    /// trimming.
    #[must_use]
    pub fn with_agent_chars(mut self, chars: Option<usize>) -> Self {
        self.agent_chars = chars;
        self
    }

    /// With the ceiling for `{nodes, edges}` payloads.
    #[must_use]
    pub fn with_graph_chars(mut self, chars: usize) -> Self {
        self.graph_chars = chars;
        self
    }

    /// With `estimator` estimating tokens and normalizing sizes.
    #[must_use]
    pub fn with_estimator(mut self, estimator: Estimator) -> Self {
        self.estimator = estimator;
        self
    }

    /// With the lists the trimmer cuts first, in order.
    #[must_use]
    pub fn with_list_order(mut self, order: &'static [&'static str]) -> Self {
        self.list_order = order;
        self
    }

    /// Counting every response exactly with `counter`: the stamp is exact, and the budget is
    /// kept by the exact count.
    #[cfg(feature = "exact")]
    #[must_use]
    pub fn with_exact(mut self, counter: Option<crate::ExactCounter>) -> Self {
        self.exact = counter;
        self
    }

    /// Counting exactly with `counter` only the responses that come close to their budget: the
    /// budget is kept by the exact count where the estimate's error could break it.
    ///
    /// ```
    /// use envelope_budget::{BudgetPolicy, ExactCounter};
    ///
    /// let policy = BudgetPolicy::default().with_exact_when_tight(Some(ExactCounter::cl100k()));
    /// assert!(policy.exact.is_none());
    /// ```
    #[cfg(feature = "exact")]
    #[must_use]
    pub fn with_exact_when_tight(mut self, counter: Option<crate::ExactCounter>) -> Self {
        self.exact_when_tight = counter;
        self
    }

    /// The budget for one payload: the tool's own, else the graph ceiling for graphs, else the
    /// agent budget. `None` when trimming is off.
    pub fn budget_for(&self, tool_budget: Option<usize>, data: &Value) -> Option<usize> {
        let agent = self.agent_chars?;
        Some(match tool_budget {
            Some(budget) => budget,
            None if is_graph(data) => self.graph_chars,
            None => agent,
        })
    }
}
