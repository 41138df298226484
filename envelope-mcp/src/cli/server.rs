//! The options that shape what a server serves: how long a call may run, how large a request
//! may be, how much of each tool is listed, and the wire its answers are written in.

use std::time::Duration;

use envelope_core::{Dialect, DialectSet};

use crate::{EnvelopeConfig, Listing};

/// What a server serves, from its command line.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerOptions {
    /// How long a call may run before it answers a retryable `deadline_exceeded` envelope
    /// (0: no limit).
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub call_timeout: u64,

    /// The largest request read, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::DEFAULT_MAX_REQUEST_BYTES)]
    pub max_request_bytes: usize,

    /// List every tool in full: the shaping controls in each input schema and the envelope's
    /// whole schema in each output schema (by default they are said once, in the instructions,
    /// and the output schemas type `data` with the envelope terse).
    #[arg(long)]
    pub full_listing: bool,

    /// The wire every answer is written in, unless a call asks for another with its `dialect`
    /// argument: `envelope` (the default), or a source contract's: `pincher`, `cos`, `tsa`,
    /// `frigg`. The listing's output schemas follow it.
    #[arg(long, value_name = "NAME", default_value = "envelope", value_parser = parse_dialect)]
    pub dialect: Dialect,

    /// The dialects a call may ask for with its `dialect` argument besides `--dialect`,
    /// comma-separated, or `all`. Each is added to every tool's output schema, since clients
    /// check an answer against it; none by default.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = parse_call_dialects)]
    pub call_dialects: Vec<DialectSet>,
}

impl ServerOptions {
    /// The call deadline: `None` for 0, which is none.
    pub fn call_timeout(&self) -> Option<Duration> {
        super::some_seconds(self.call_timeout)
    }

    /// How much of each tool `tools/list` spells out.
    pub fn listing(&self) -> Listing {
        if self.full_listing {
            Listing::Full
        } else {
            Listing::Lean
        }
    }

    /// The dialects a call may ask for besides `--dialect`.
    pub fn call_dialects(&self) -> DialectSet {
        self.call_dialects
            .iter()
            .flat_map(|set| set.iter())
            .collect()
    }

    /// `config` with these options applied.
    #[must_use]
    pub fn apply(&self, config: EnvelopeConfig) -> EnvelopeConfig {
        config
            .with_call_timeout(self.call_timeout())
            .with_max_request_bytes(self.max_request_bytes)
            .with_listing(self.listing())
            .with_dialect(self.dialect)
            .with_call_dialects(self.call_dialects().iter())
    }
}

/// Reads `--dialect`: a wire name, or the message naming every dialect.
pub fn parse_dialect(name: &str) -> Result<Dialect, String> {
    name.parse().map_err(|_| {
        format!(
            "`{name}` names no dialect; the dialects are {}",
            Dialect::names()
        )
    })
}

/// Reads one name of `--call-dialects`: a dialect, or `all`.
pub fn parse_call_dialects(name: &str) -> Result<DialectSet, String> {
    if name == "all" {
        return Ok(DialectSet::ALL);
    }
    parse_dialect(name).map(DialectSet::only)
}
