//! Complexity tiers: declared per tool, stable across releases, so a router can send
//! cheap calls to cheap models.

use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// How expensive a tool is to call and to read. Wire names: `lite`, `standard`, `heavy`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// `lite`: a quick lookup with a small answer.
    Lite,
    /// `standard`: an ordinary query.
    Standard,
    /// `heavy`: a large analysis or a big answer.
    Heavy,
}

impl Tier {
    /// Every tier, cheapest first. `#[tool(tier = …)]` accepts exactly these names.
    pub const ALL: [Tier; 3] = [Tier::Lite, Tier::Standard, Tier::Heavy];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Tier::Lite => "lite",
            Tier::Standard => "standard",
            Tier::Heavy => "heavy",
        }
    }

    /// What the tier means for a router.
    pub const fn meaning(self) -> &'static str {
        match self {
            Tier::Lite => "A quick lookup with a small answer; fine for the cheapest model.",
            Tier::Standard => "An ordinary query; a mid-size model reads it well.",
            Tier::Heavy => "A large analysis or a big answer; route to the strongest model.",
        }
    }
}

crate::wire::wire_display!(Tier);

impl FromStr for Tier {
    type Err = CoreError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Tier::ALL
            .into_iter()
            .find(|tier| tier.as_str() == raw)
            .ok_or_else(|| CoreError::UnknownTier(raw.to_owned()))
    }
}
