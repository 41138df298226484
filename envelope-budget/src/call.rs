//! One call's budget: what a server asks the budget stage once per call, for the tool's context
//! and for [`prepare`](crate::prepare).

use std::sync::Arc;

use envelope_core::stage::ResponseSizer;

use crate::encode::BudgetEncoder;
use crate::policy::BudgetPolicy;

/// The budget one call is prepared under: the server's [`BudgetPolicy`] and the tool's own
/// budget (`#[tool(budget = …)]`), as they apply to this call.
///
/// A server asks for it once per call ([`BudgetPolicy::for_call`]), installs its
/// [`sizer`](CallBudget::sizer) on the tool's context, and prepares the tool's output with it.
///
/// ```
/// use envelope_budget::{BudgetPolicy, prepare};
/// use envelope_core::Envelope;
/// use serde_json::json;
///
/// let budget = BudgetPolicy::default().with_agent_chars(Some(2_000)).for_call(None);
/// assert_eq!(budget.sizer().map(|sizer| sizer.budget_chars()), Some(2_000));
/// let rows: Vec<_> = (0..1_000).map(|i| json!({ "line": i })).collect();
/// let sent = prepare(Envelope::ok(json!(rows)), &budget);
/// assert!(sent.json.chars().count() <= 2_000);
/// assert!(sent.ok);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallBudget {
    policy: BudgetPolicy,
    tool: Option<usize>,
    /// What the attached media took of the budget, in characters: the envelope gets the rest.
    media: usize,
    /// Whether the transport carries media at all (plain HTTP's JSON body does not).
    carries_media: bool,
}

impl BudgetPolicy {
    /// The budget of one call of a tool whose own budget is `tool_budget`.
    pub fn for_call(&self, tool_budget: Option<usize>) -> CallBudget {
        CallBudget {
            policy: *self,
            tool: tool_budget,
            media: 0,
            carries_media: true,
        }
    }
}

impl CallBudget {
    /// This budget for a call opted out of trimming: each budget raised to `ceiling`, never
    /// lowered (opting out never makes an answer smaller), and a policy without a budget stays
    /// without.
    #[must_use]
    pub fn raised_to(self, ceiling: usize) -> Self {
        let policy = self.policy;
        CallBudget {
            policy: policy
                .with_agent_chars(policy.agent_chars.map(|agent| agent.max(ceiling)))
                .with_graph_chars(policy.graph_chars.max(ceiling)),
            tool: self.tool.map(|budget| budget.max(ceiling)),
            media: self.media,
            carries_media: self.carries_media,
        }
    }

    /// This budget for a transport that carries no media beside the envelope (the REST
    /// gateway's JSON body): every attachment is noted `dropped`, none is sent.
    #[must_use]
    pub fn without_media(mut self) -> Self {
        self.carries_media = false;
        self
    }

    /// What the attached media may take, in characters: the whole response's budget, which
    /// media share with the envelope; `Some(0)` on a transport that carries none; `None` when
    /// nothing is trimmed.
    pub(crate) fn media_chars(&self) -> Option<usize> {
        if self.carries_media {
            self.response_chars()
        } else {
            Some(0)
        }
    }

    /// The budget of the response as a whole, in characters, before media take their share:
    /// `None` when nothing is trimmed.
    pub fn response_chars(&self) -> Option<usize> {
        self.policy.budget_for(self.tool, &serde_json::Value::Null)
    }

    /// What the envelope around `data` may take, in characters: the policy's budget for it
    /// less what the attached media took. `None` when nothing is trimmed.
    pub fn budget_for(&self, data: &serde_json::Value) -> Option<usize> {
        self.policy
            .budget_for(self.tool, data)
            .map(|budget| budget.saturating_sub(self.media))
    }

    /// This budget with `chars` taken by the attached media.
    pub(crate) fn less_media(mut self, chars: usize) -> Self {
        self.media = self.media.saturating_add(chars);
        self
    }

    /// The server's policy.
    pub fn policy(&self) -> &BudgetPolicy {
        &self.policy
    }

    /// The tool's own budget, as it applies to this call.
    pub fn tool_budget(&self) -> Option<usize> {
        self.tool
    }

    /// What the tool's context sizes its rows with
    /// ([`ToolContext::with_sizer`](envelope_core::ToolContext::with_sizer)); `None` when
    /// nothing is trimmed.
    pub fn sizer(&self) -> Option<Arc<dyn ResponseSizer>> {
        self.encoder()
            .map(|encoder| Arc::new(encoder) as Arc<dyn ResponseSizer>)
    }

    /// The payload encoder for this call: it converts no row that could never be sent. `None`
    /// when trimming is off. A graph payload is still encoded whole (its ceiling is applied
    /// once its shape is known).
    pub(crate) fn encoder(&self) -> Option<BudgetEncoder> {
        self.budget_for(&serde_json::Value::Null)
            .map(|budget| BudgetEncoder::new(budget, self.policy.estimator))
    }
}
