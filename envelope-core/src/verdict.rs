//! The verdict alphabet: eight values and nothing else.
//!
//! Writing an unknown verdict is impossible by type. Reading is lenient: legacy spellings
//! (`ok`, `clean`, `warning`, `n/a`, …) canonicalize, and anything unrecognised reads as `INFO`,
//! the verdict that obliges nothing.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

crate::wire::vocabulary! {
    /// What the verdict means, in one line.
    fn meaning;
    /// The one value an agent branches on first.
    ///
    /// Wire names are the upper-case strings in [`Verdict::as_str`]; see [`Verdict::obligation`]
    /// for what each one obliges the agent to do.
    #[derive(Default, PartialOrd, Ord)]
    pub enum Verdict {
        /// `SAFE`: no meaningful risk detected.
        Safe = "SAFE": "No meaningful risk detected.",
        /// `CAUTION`: low risk or a notable but non-blocking signal.
        Caution = "CAUTION": "Low risk, or a notable but non-blocking signal.",
        /// `REVIEW`: medium risk; inspect before acting.
        Review = "REVIEW": "Medium risk: the blast radius or the findings need inspection.",
        /// `UNSAFE`: high risk; a blocker.
        Unsafe = "UNSAFE": "High risk: wide blast radius, a violated constraint or a guarded target.",
        /// `INFO`: informational; no risk judgement. The default on success.
        #[default]
        Info = "INFO": "Informational result; no risk judgement implied. The default on success.",
        /// `WARN`: succeeded, but with warning-level conditions.
        Warn = "WARN": "The tool succeeded but found warning-level conditions.",
        /// `ERROR`: the call failed. The default on failure.
        Error = "ERROR": "The call failed (`ok: false`). The default on failure.",
        /// `NOT_FOUND`: ran fine, but the requested thing does not exist.
        NotFound = "NOT_FOUND": "The tool ran fine but the requested entity does not exist.",
    }
}

impl Verdict {
    /// What the verdict obliges an agent to do.
    pub const fn obligation(self) -> &'static str {
        match self {
            Verdict::Safe => "Proceed directly; run the usual verification after the change.",
            Verdict::Caution => "Proceed, but follow `next_step` first.",
            Verdict::Review => {
                "Do not act blindly: inspect what the payload lists, then re-check before changing anything."
            }
            Verdict::Unsafe => {
                "Stop and treat it as a blocker: narrow the change, fix the violation or escalate. Never auto-apply."
            }
            Verdict::Info => "Nothing mandated: consume the payload; use `next_step` to go deeper.",
            Verdict::Warn => {
                "Read `warnings` and decide; surface the warning if you act on the data."
            }
            Verdict::Error => {
                "Read `error` (and `hint`), fix the call or the environment; retry only if `retryable`. Do not consume `data`."
            }
            Verdict::NotFound => {
                "Treat as an empty result, not a failure: check the spelling or qualify the name before retrying."
            }
        }
    }

    /// Reads a verdict the lenient way: canonical names in any case, then legacy spellings,
    /// then `INFO` for anything else.
    pub fn canonicalize(raw: &str) -> Verdict {
        let folded = raw.trim().to_ascii_uppercase().replace(['-', ' '], "_");
        if let Some(verdict) = Verdict::ALL.iter().find(|v| v.as_str() == folded) {
            return *verdict;
        }
        match folded.as_str() {
            "OK" | "CLEAN" => Verdict::Safe,
            "WARNING" => Verdict::Warn,
            "NOTFOUND" => Verdict::NotFound,
            // "", "N/A", "NA", "SUCCESS" and everything unrecognised oblige nothing.
            _ => Verdict::Info,
        }
    }
}

impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Verdict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Verdict::canonicalize(&raw))
    }
}

impl JsonSchema for Verdict {
    fn schema_name() -> Cow<'static, str> {
        "Verdict".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // Writers must use the canonical alphabet; only readers are lenient.
        let names: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
        json_schema!({
            "description": "The verdict alphabet; see docs/CONTRACT.md for each value's obligation.",
            "type": "string",
            "enum": names,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(raw: &str) -> Verdict {
        serde_json::from_value(serde_json::Value::String(raw.to_owned()))
            .expect("strings always read")
    }

    #[test]
    fn canonical_names_round_trip() {
        for &verdict in Verdict::ALL {
            let wire = serde_json::to_value(verdict).expect("serializes");
            assert_eq!(wire, verdict.as_str());
            assert_eq!(read(verdict.as_str()), verdict);
        }
    }

    #[test]
    fn legacy_values_canonicalize() {
        assert_eq!(read("ok"), Verdict::Safe);
        assert_eq!(read("clean"), Verdict::Safe);
        assert_eq!(read("warning"), Verdict::Warn);
        assert_eq!(read(""), Verdict::Info);
        assert_eq!(read("n/a"), Verdict::Info);
        assert_eq!(read("na"), Verdict::Info);
        assert_eq!(read("success"), Verdict::Info);
        assert_eq!(read("not-found"), Verdict::NotFound);
        assert_eq!(read("unsafe"), Verdict::Unsafe);
    }

    #[test]
    fn anything_else_reads_as_info() {
        assert_eq!(read("catastrophic"), Verdict::Info);
    }
}
