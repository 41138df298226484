//! Complexity tiers: declared per tool, stable across releases, so a router can send
//! cheap calls to cheap models.

use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::CoreError;

crate::wire::vocabulary! {
    /// What the tier means for a router.
    fn meaning;
    /// How expensive a tool is to call and to read. Wire names: `lite`, `standard`, `heavy`.
    #[derive(PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum Tier {
        /// `lite`: a quick lookup with a small answer.
        Lite = "lite": "A quick lookup with a small answer; fine for the cheapest model.",
        /// `standard`: an ordinary query.
        Standard = "standard": "An ordinary query; a mid-size model reads it well.",
        /// `heavy`: a large analysis or a big answer.
        Heavy = "heavy": "A large analysis or a big answer; route to the strongest model.",
    }
}

impl FromStr for Tier {
    type Err = CoreError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Tier::ALL
            .iter()
            .copied()
            .find(|tier| tier.as_str() == raw)
            .ok_or_else(|| CoreError::UnknownTier(raw.to_owned()))
    }
}
