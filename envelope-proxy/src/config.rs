//! The proxy's configuration file (TOML): the upstream it fronts and how each of the upstream's
//! tools is served (tier, scopes, budget).
//!
//! [`EXAMPLE_CONFIG`] shows every key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use envelope_core::Tier;
use serde::Deserialize;

/// A configuration with every key, each explained: what `docs/PROXY.md` shows, and what the
/// tests parse.
pub const EXAMPLE_CONFIG: &str = r#"# The upstream: a command spoken to over stdio, or a streamable-HTTP URL (`url = "..."`),
# not both. `-- COMMAND` or `--upstream-url` on the command line take its place.
[upstream]
command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
# Variables set for the command besides the proxy's own environment, each read from
# `env:NAME` or `file:PATH`: a secret never sits in this file.
env_from = { GITHUB_TOKEN = "env:UPSTREAM_GITHUB_TOKEN" }
# The largest message read from the upstream; a longer answer is refused as it streams by.
max_message_bytes = 8_388_608
# How long one call to the upstream may take.
call_timeout_seconds = 60
# Pass the upstream's standard error through to the proxy's (the default), or drop it.
stderr = true
# The MCP revision spoken to the upstream: "2025-11-25" (the default: `initialize`, and the
# upstream may agree on an older one), or "2026-07-28" (`server/discover`, for an upstream that
# speaks it: what it asks of a client comes as `InputRequiredResult`, asked of the client of
# the call and sent back; its log messages reach the client of the call that asked for them,
# while that call is the one in flight;
# a resource watched is watched upstream by a subscription stream of its own).
revision = "2025-11-25"

# What a tool not named under [tools] gets.
[defaults]
tier = "standard"
scopes = ["docs:read"]

# Per tool, by the upstream's name for it.
[tools.read_text_file]
tier = "lite"

[tools.write_file]
tier = "heavy"
scopes = ["docs:write"]
# Its own response budget, in token-normalized characters.
budget = 4000

# Neither listed nor callable through the proxy.
[tools.move_file]
hidden = true

# Where the answers of tools that are not read-only are kept, so their pages are served without
# calling them again: all answers together, the oldest evicted first, and one answer (the rows
# after this bound are not kept, and the last page says so).
[store]
max_bytes = 33_554_432
max_answer_bytes = 8_388_608
# Replicas behind one address keep the answers in one Redis instead, so a page one issued,
# another serves (they must share the paging key too: `--continuation-key-file`). Redis bounds
# them all with its own `maxmemory` and eviction policy (`allkeys-lru`).
# redis_url = "redis://127.0.0.1:6379/0"
# ttl_seconds = 3600
"#;

/// The largest message read from the upstream unless configured: 8 MiB. A longer one is
/// refused with a typed error as it streams by, never held whole.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 8 << 20;

/// How long a call to the upstream may take unless configured, before it answers a retryable
/// `transient` error.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The tier a tool gets when the configuration names none: `standard`.
pub const DEFAULT_TIER: Tier = Tier::Standard;

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML, or not the configuration's shape.
    #[error("`{path}` is not a valid configuration: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said, with where.
        message: String,
    },
    /// The configuration contradicts itself or names no upstream.
    #[error("{0}")]
    Invalid(String),
}

/// The whole configuration (wire names as in the file: `upstream`, `defaults`, `tools`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// The server the proxy fronts.
    #[serde(default)]
    pub upstream: UpstreamConfig,
    /// What a tool the file does not name gets.
    #[serde(default)]
    pub defaults: ToolDefaults,
    /// Per tool, by the upstream's name for it.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
    /// Where the answers of tools that are not read-only are kept for their pages.
    #[serde(default)]
    pub store: StoreConfig,
}

/// `[store]`: where the answers are kept, and the bounds.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// `max_bytes`: all answers kept together in memory, the oldest evicted first. Redis
    /// bounds its own (`maxmemory`).
    pub max_bytes: Option<usize>,
    /// `max_answer_bytes`: one answer; the rows after it are not kept.
    pub max_answer_bytes: Option<usize>,
    /// `redis_url`: keep the answers in Redis (`redis://host:port/db`), shared by replicas,
    /// rather than in this process.
    pub redis_url: Option<String>,
    /// `ttl_seconds`: how long Redis keeps a call's answers after its last.
    pub ttl_seconds: Option<u64>,
}

/// `[upstream]`: one command over stdio, or one streamable-HTTP URL.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// `command`: the program and its arguments, spoken to over stdio.
    #[serde(default)]
    pub command: Vec<String>,
    /// `url`: a streamable-HTTP MCP endpoint.
    pub url: Option<String>,
    /// `env_from`: variables set for the command, each read from `env:NAME` (the proxy's own
    /// environment) or `file:PATH` (the file's contents, a trailing newline dropped). Secrets
    /// never sit in the configuration itself.
    #[serde(default)]
    pub env_from: BTreeMap<String, String>,
    /// `max_message_bytes`: the largest message read from the upstream.
    pub max_message_bytes: Option<usize>,
    /// `call_timeout_seconds`: how long one call to the upstream may take.
    pub call_timeout_seconds: Option<u64>,
    /// `stderr`: pass the upstream's standard error through to the proxy's (default), or drop
    /// it (`false`).
    pub stderr: Option<bool>,
    /// `revision`: the protocol revision spoken to the upstream ([`Revision`]).
    #[serde(default)]
    pub revision: Revision,
}

/// `[upstream] revision`: the MCP revision the proxy speaks to its upstream. Whatever it is, the
/// proxy's own clients speak any revision the proxy serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum Revision {
    /// `"2025-11-25"` (the default): the `initialize` handshake, and the upstream agrees on
    /// that revision or an older one. What it asks of a client during a call (sampling,
    /// elicitation) it asks as requests of its own, relayed to the client of the call.
    #[default]
    #[serde(rename = "2025-11-25")]
    Initialize,
    /// `"2026-07-28"`: `server/discover` and metadata on every request (the caller's own
    /// capabilities among it), for an upstream that speaks that revision (one that does not
    /// refuses to start). What it asks of a client during a call it answers with an
    /// `InputRequiredResult`; the proxy asks the client of the call (in whatever revision that
    /// client speaks) and calls again with the answers.
    #[serde(rename = "2026-07-28")]
    Discover,
}

/// `[defaults]`: what a tool not named under `[tools]` gets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDefaults {
    /// `tier`: `lite`, `standard` or `heavy` ([`DEFAULT_TIER`] when absent).
    pub tier: Option<Tier>,
    /// `scopes`: the OAuth scopes every tool needs unless it names its own.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// `[tools.NAME]`: how one upstream tool is served.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// `tier`: its complexity tier.
    pub tier: Option<Tier>,
    /// `scopes`: the OAuth scopes a caller's token must grant, all of them, to call it
    /// (replacing the defaults').
    pub scopes: Option<Vec<String>>,
    /// `budget`: its response budget in token-normalized characters, overriding the server's.
    pub budget: Option<usize>,
    /// `hidden`: not listed nor callable through the proxy.
    #[serde(default)]
    pub hidden: bool,
}

impl ProxyConfig {
    /// Reads the configuration at `path`.
    pub fn load(path: &Path) -> Result<ProxyConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        ProxyConfig::parse(&text).map_err(|message| ConfigError::Parse {
            path: path.to_owned(),
            message,
        })
    }

    /// Reads a configuration from TOML text; the parser's message on failure.
    pub fn parse(text: &str) -> Result<ProxyConfig, String> {
        toml::from_str(text).map_err(|error| error.to_string())
    }

    /// How the tool the upstream calls `name` is served: its own entry, else the defaults.
    pub fn tool(&self, name: &str) -> ResolvedTool {
        let own = self.tools.get(name);
        ResolvedTool {
            tier: own
                .and_then(|tool| tool.tier)
                .or(self.defaults.tier)
                .unwrap_or(DEFAULT_TIER),
            scopes: own
                .and_then(|tool| tool.scopes.clone())
                .unwrap_or_else(|| self.defaults.scopes.clone()),
            budget: own.and_then(|tool| tool.budget),
            hidden: own.is_some_and(|tool| tool.hidden),
        }
    }

    /// The upstream to connect to: exactly one of a command and a URL.
    pub fn target(&self) -> Result<Target, ConfigError> {
        match (self.upstream.command.split_first(), &self.upstream.url) {
            (Some(_), Some(_)) => Err(ConfigError::Invalid(
                "the upstream is a command or a URL, not both".to_owned(),
            )),
            (Some((program, args)), None) => Ok(Target::Command {
                program: program.clone(),
                args: args.to_vec(),
            }),
            (None, Some(url)) => Ok(Target::Url(url.clone())),
            (None, None) => Err(ConfigError::Invalid(
                "name an upstream: `-- COMMAND [ARGS...]`, `--upstream-url URL`, or `[upstream]` \
                 in the configuration"
                    .to_owned(),
            )),
        }
    }

    /// The environment the upstream command gets besides the proxy's own, each value read
    /// from where `env_from` says.
    pub fn upstream_env(&self) -> Result<Vec<(String, String)>, ConfigError> {
        self.upstream
            .env_from
            .iter()
            .map(|(name, source)| Ok((name.clone(), read_secret(name, source)?)))
            .collect()
    }

    /// The largest message read from the upstream.
    pub fn max_message_bytes(&self) -> usize {
        self.upstream
            .max_message_bytes
            .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES)
            .max(1)
    }

    /// The revision spoken to the upstream.
    pub fn revision(&self) -> Revision {
        self.upstream.revision
    }

    /// How long one call to the upstream may take.
    pub fn call_timeout(&self) -> Duration {
        self.upstream
            .call_timeout_seconds
            .map_or(DEFAULT_CALL_TIMEOUT, |seconds| {
                Duration::from_secs(seconds.max(1))
            })
    }
}

/// How one upstream tool is served, its entry and the defaults resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedTool {
    /// Its tier.
    pub tier: Tier,
    /// The scopes a caller needs.
    pub scopes: Vec<String>,
    /// Its own budget, if any.
    pub budget: Option<usize>,
    /// Left out of the listing and refused.
    pub hidden: bool,
}

/// Where the upstream is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A program spoken to over its standard input and output.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A streamable-HTTP endpoint.
    Url(String),
}

/// The value `source` names for the variable `name`: `env:NAME` or `file:PATH`.
fn read_secret(name: &str, source: &str) -> Result<String, ConfigError> {
    if let Some(var) = source.strip_prefix("env:") {
        return std::env::var(var).map_err(|_| {
            ConfigError::Invalid(format!(
                "`{name}` is to come from the environment variable `{var}`, which is not set \
                 (or not UTF-8)"
            ))
        });
    }
    if let Some(path) = source.strip_prefix("file:") {
        let text = std::fs::read_to_string(path).map_err(|error| {
            ConfigError::Invalid(format!("`{name}` cannot be read from `{path}`: {error}"))
        })?;
        return Ok(text.strip_suffix('\n').unwrap_or(&text).to_owned());
    }
    Err(ConfigError::Invalid(format!(
        "`{name}` must come from `env:NAME` or `file:PATH`, not a value written in the \
         configuration"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_gets_its_own_entry_else_the_defaults() {
        let config = ProxyConfig::parse(
            r#"
            [upstream]
            command = ["server", "--root", "/srv"]
            [defaults]
            tier = "lite"
            scopes = ["files:read"]
            [tools.write_file]
            tier = "heavy"
            scopes = ["files:write"]
            budget = 4000
            "#,
        )
        .expect("parses");
        assert_eq!(
            config.tool("write_file"),
            ResolvedTool {
                tier: Tier::Heavy,
                scopes: vec!["files:write".to_owned()],
                budget: Some(4000),
                hidden: false,
            }
        );
        assert_eq!(config.tool("read_file").tier, Tier::Lite);
        assert_eq!(config.tool("read_file").scopes, ["files:read"]);
        assert_eq!(
            config.target().expect("a command"),
            Target::Command {
                program: "server".to_owned(),
                args: vec!["--root".to_owned(), "/srv".to_owned()],
            }
        );
    }

    #[test]
    fn the_example_parses_as_documented() {
        let config = ProxyConfig::parse(EXAMPLE_CONFIG).expect("the example parses");
        assert!(matches!(config.target(), Ok(Target::Command { .. })));
        assert_eq!(config.tool("write_file").budget, Some(4000));
        assert_eq!(config.tool("list_directory").scopes, ["docs:read"]);
        assert!(config.tool("move_file").hidden);
    }

    #[test]
    fn a_misspelt_key_and_an_inline_secret_are_refused() {
        let misspelt = ProxyConfig::parse("[tools.x]\nteir = \"lite\"\n").expect_err("refused");
        assert!(misspelt.contains("teir"), "{misspelt}");
        let config = ProxyConfig::parse(
            "[upstream]\ncommand = [\"s\"]\nenv_from = { TOKEN = \"hunter2\" }\n",
        )
        .expect("parses");
        let error = config
            .upstream_env()
            .expect_err("an inline value is refused");
        assert!(error.to_string().contains("env:NAME"), "{error}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    #[test]
    fn an_upstream_is_one_command_or_one_url() {
        assert!(ProxyConfig::default().target().is_err());
        let both = ProxyConfig::parse("[upstream]\ncommand = [\"s\"]\nurl = \"http://x/mcp\"\n")
            .expect("parses");
        assert!(both.target().is_err());
    }
}
