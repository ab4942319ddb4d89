//! `<home>/visual-workflow.toml` (SPEC §16): every key optional; unknown keys are ignored so a
//! newer config still loads. Secrets are never stored here, only the names of the environment
//! variables that hold them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Config {
    pub agent: AgentConfig,
    pub profiles: BTreeMap<String, Profile>,
    pub channels: ChannelsConfig,
    pub server: toml::Table,
    pub commands: Commands,
    pub store: StoreConfig,
    pub daemon: DaemonConfig,
    pub designs: DesignsConfig,
    /// `[limits]`: how far one origin's runs and one run's record may grow.
    pub limits: LimitsConfig,
    /// `[http]`: where http steps may connect (see `exec::egress`).
    pub http: HttpConfig,
    /// `[runs]`: what every design's runs do that the design does not say itself.
    pub runs: RunsConfig,
    /// `[secrets] NAME = "ENV_VAR"`: what `{{secrets.NAME}}` stands for, read from the
    /// environment when a step is sent, never stored.
    pub secrets: BTreeMap<String, String>,
    /// `[prices]`: what models cost, for the `cost` of agent steps and runs.
    pub prices: PricesConfig,
    /// `[telemetry]`: where runs go as OpenTelemetry traces.
    pub telemetry: TelemetryConfig,
    /// `[people.<name>]`: who answers gates, by name, with their chat identities.
    pub people: BTreeMap<String, Person>,
    /// `[gates]`: how gates take answers.
    pub gates: GatesConfig,
}

/// `[people.<name>]`: a person's ids on the chat platforms (`telegram = 777`, `slack = "U777"`).
/// A tap by one of them is recorded as the name (via the platform), so a gate's
/// `approvers.allowed` can name people rather than ids.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Person {
    #[serde(deserialize_with = "string_or_number")]
    pub telegram: Option<String>,
    #[serde(deserialize_with = "string_or_number")]
    pub slack: Option<String>,
}

/// `[gates]`: `known_names_only = true` refuses (403) an answer through the API, the CLI, MCP or
/// the pages whose `by` is not a name of `[people]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct GatesConfig {
    pub known_names_only: bool,
}

impl Config {
    /// The name `[people]` gives the user `id` of `platform` (`telegram`, `slack`), if any. A
    /// name with a `:` is never one (it could pass for another platform identity).
    pub fn person(&self, platform: &str, id: &str) -> Option<&str> {
        self.people
            .iter()
            .filter(|(name, _)| !name.contains(':') && !name.trim().is_empty())
            .find(|(_, p)| match platform {
                "telegram" => p.telegram.as_deref() == Some(id),
                "slack" => p.slack.as_deref() == Some(id),
                _ => false,
            })
            .map(|(name, _)| name.as_str())
    }
}

/// `[telemetry]`: `otlp_endpoint`, the base URL of an OTLP/HTTP receiver (a collector's
/// `http://host:4318`; traces go to its `/v1/traces`). Absent: the standard
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` variables say, and with
/// neither, no traces are sent.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    pub otlp_endpoint: Option<String>,
}

/// `[prices]`: `currency` (a label, e.g. `"USD"`) and `[prices."<model>"]` with
/// `input_per_mtok`, `output_per_mtok` and `cached_per_mtok` (per million tokens; cached input at
/// the input price when not given). A model without a table costs `null`, never a guess.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PricesConfig {
    pub currency: Option<String>,
    #[serde(flatten)]
    pub models: BTreeMap<String, vwf_core::usage::Price>,
}

/// `[http]`: the egress policy of http steps. The defaults deny loopback, link-local, private,
/// unique-local and unspecified addresses and every address of this host; `allow` entries open
/// some of them, `deny` entries close more (a deny wins over an allow). A design cannot widen it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// `"10.0.0.0/8"`, `"127.0.0.1:8080"`, `"[::1]:9000"`, `"internal.example"`, `"internal.example:443"`.
    pub allow: Vec<crate::egress::Rule>,
    pub deny: Vec<crate::egress::Rule>,
}

impl HttpConfig {
    pub fn policy(&self) -> crate::egress::Policy<'_> {
        crate::egress::Policy { allow: &self.allow, deny: &self.deny }
    }
}

/// `[runs]`: defaults for every design's runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunsConfig {
    /// The design a failed run starts when its own design names none (`on_failure`); a name
    /// that is not a design name stops the config's load.
    pub on_failure: Option<vwf_core::names::DesignName>,
    /// How long an idempotency key answers its first request's result, in hours (default 24).
    pub idempotency_hours: u64,
}

impl Default for RunsConfig {
    fn default() -> Self {
        RunsConfig { on_failure: None, idempotency_hours: vwf_core::limits::IDEMPOTENCY_HOURS_DEFAULT }
    }
}

/// `[limits]`: bounds on what runs may grow to (ranges in `vwf_core::limits`, checked at load),
/// and the rate limits steps share (`[limits.<name>]`, see [`vwf_core::rate`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct LimitsConfig {
    /// Runs one event or run may start, directly or through emits (default 100).
    pub runs_per_origin: u64,
    /// The most bytes one run record may hold (default 16 MiB).
    pub run_bytes: u64,
    /// `[limits.<name>]`: the rate limits steps name with `rate_limit`. (Any other key of
    /// `[limits]` is read as one and refused, so a misspelt bound is still an error.)
    #[serde(flatten)]
    pub rates: std::collections::BTreeMap<String, RateLimitConfig>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            runs_per_origin: vwf_core::limits::RUNS_PER_ORIGIN_DEFAULT,
            run_bytes: vwf_core::limits::RUN_BYTES_DEFAULT,
            rates: Default::default(),
        }
    }
}

/// `[limits.<name>]`: `per_second` or `per_minute` starts, plus `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    pub per_second: Option<u32>,
    pub per_minute: Option<u32>,
    #[serde(default)]
    pub burst: u32,
}

impl RateLimitConfig {
    pub fn rule(&self) -> Result<vwf_core::rate::Rule, String> {
        vwf_core::rate::Rule::new(self.per_second, self.per_minute, self.burst)
    }
}

/// `[designs]`: how designs are kept.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DesignsConfig {
    /// How many of a design's newest versions a save keeps (default: all). Versions a kept run
    /// refers to are kept whatever this says.
    pub keep_versions: Option<u64>,
}

/// `[daemon]`: what the daemon of this instance does.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DaemonConfig {
    /// Whether folder and watch triggers run on this machine (default true). They watch this
    /// machine's folders and commands, so with several instances on one database, turn them off
    /// on every instance but the one (per machine) that should run them.
    pub local_triggers: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig { local_triggers: true }
    }
}

/// `[store]`: where designs, runs and schedules are kept. No `url` (and no `VWF_DATABASE_URL`):
/// the files under the home, as always.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// `postgres://user@host/db`: the PostgreSQL store, shared by every instance pointed at it.
    /// A password is better given in `VWF_DATABASE_URL` than written here.
    pub url: Option<String>,
    /// Connections in the pool (default 16).
    pub pool_size: Option<u32>,
    /// How long one statement may run, in milliseconds (default 30000).
    pub statement_timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub backend: BackendKind,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub default_model: Option<String>,
    pub command: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig { backend: BackendKind::None, base_url: None, api_key_env: None, default_model: None, command: Vec::new() }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Profile {
    pub model: Option<String>,
    pub system: Option<String>,
    pub backend: Option<BackendKind>,
}

/// Which agent backend performs agent steps (`[agent] backend`, a profile's `backend`): read
/// once, when the config is loaded, so an unknown name stops the load instead of each step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendKind {
    /// Agent steps park for a person or a host agent.
    #[default]
    None,
    /// An OpenAI-compatible chat completions server.
    OpenAi,
    /// A local command that reads the prompt on standard input.
    Command,
}

impl BackendKind {
    pub fn parse(name: &str) -> Result<BackendKind, String> {
        match name.trim() {
            "none" => Ok(BackendKind::None),
            "openai" => Ok(BackendKind::OpenAi),
            "command" => Ok(BackendKind::Command),
            other => Err(format!("agent backend {other:?} is unknown: use \"openai\", \"command\" or \"none\"")),
        }
    }

    /// The config's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::None => "none",
            BackendKind::OpenAi => "openai",
            BackendKind::Command => "command",
        }
    }
}

impl<'de> Deserialize<'de> for BackendKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BackendKind::parse(&String::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// `[channels.*]` (SPEC §15, §16): where deliveries go. Only the names of environment variables
/// holding secrets are kept here (tokens, webhook URLs, signing secrets), never their values.
/// An absent table means the platform is not configured.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ChannelsConfig {
    pub telegram: Option<TelegramChannel>,
    pub slack: Option<SlackChannel>,
    pub discord: Option<DiscordChannel>,
    /// `[channels.webhook.<name>]`, target `webhook:<name>`.
    pub webhook: BTreeMap<String, WebhookChannel>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct TelegramChannel {
    /// The environment variable holding the bot token.
    pub token_env: Option<String>,
    /// The chat for `deliver: notification` (`123456`, `-100123:17585` with a topic, `@name`).
    #[serde(deserialize_with = "string_or_number")]
    pub home: Option<String>,
    /// Default `https://api.telegram.org`.
    pub api_base: Option<String>,
    /// How taps on a gate's buttons reach vwf: `poll` (default: `getUpdates` long polling by the
    /// server's daemon, no public address needed), `webhook` (Telegram posts them to
    /// `/channels/telegram/updates`, see `webhook_secret_env`) or `off`.
    pub answers: Option<String>,
    /// The environment variable holding the `secret_token` Telegram sends with every webhook
    /// update (`X-Telegram-Bot-Api-Secret-Token`); required for `answers = "webhook"`.
    pub webhook_secret_env: Option<String>,
    /// Telegram user ids who may answer gates by button (with a gate's own `approvers.allowed`,
    /// both must allow; with neither, nobody may).
    #[serde(deserialize_with = "strings_or_numbers")]
    pub allowed_users: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SlackChannel {
    /// The environment variable holding the bot token (`chat.postMessage`); wins over the webhook.
    pub token_env: Option<String>,
    /// The environment variable holding an incoming-webhook URL.
    pub webhook_url_env: Option<String>,
    /// The channel for `deliver: notification` (`#ops`, `C123`).
    #[serde(deserialize_with = "string_or_number")]
    pub home: Option<String>,
    /// Default `https://slack.com/api`.
    pub api_base: Option<String>,
    /// The environment variable holding the app's signing secret: interaction posts to
    /// `/channels/slack/interactions` are checked against it (`X-Slack-Signature`, v0).
    pub signing_secret_env: Option<String>,
    /// Slack user ids who may answer gates by button (as `[channels.telegram] allowed_users`).
    pub allowed_users: Vec<String>,
    /// Where the `response_url` of an interaction may point (default `https://hooks.slack.com`):
    /// vwf posts its message updates nowhere else.
    pub response_base: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DiscordChannel {
    /// `[channels.discord.webhooks] <name> = "<ENV VAR holding the webhook URL>"`.
    pub webhooks: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WebhookChannel {
    /// The URL the JSON is posted to (not a secret; a secret goes in `secret_env`).
    pub url: Option<String>,
    /// The environment variable holding the HMAC-SHA256 key: the signature of `<timestamp>.<body>`
    /// goes in `X-Vwf-Signature-256` (and, deprecated, that of the body alone in `X-Vwf-Signature`).
    pub secret_env: Option<String>,
}

/// User ids may be written as TOML numbers or strings.
fn strings_or_numbers<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(i64),
    }
    Ok(Vec::<Raw>::deserialize(d)?
        .into_iter()
        .map(|raw| match raw {
            Raw::Text(s) => s.trim().to_string(),
            Raw::Number(n) => n.to_string(),
        })
        .collect())
}

/// A chat id may be written as a TOML number (`home = 123456`) or a string.
fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(i64),
    }
    Ok(Option::<Raw>::deserialize(d)?.map(|raw| match raw {
        Raw::Text(s) => s,
        Raw::Number(n) => n.to_string(),
    }))
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Commands {
    pub enabled: bool,
    /// Environment variables a child (command step, watch trigger, command agent backend) gets
    /// from vwf's own environment, beyond the base set (`exec::process::BASE_ENV`). Variables the
    /// config names as secrets and `VWF_*` variables are never passed, listed here or not.
    pub pass_env: Vec<String>,
}

impl Default for Commands {
    fn default() -> Self {
        Commands { enabled: true, pass_env: Vec::new() }
    }
}

impl Config {
    pub fn path(home: &Path) -> PathBuf {
        home.join("visual-workflow.toml")
    }

    /// Loads the config; a missing file is the default config, a broken one is an error.
    pub fn load(home: &Path) -> Result<Config, String> {
        let path = Config::path(home);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let config: Config = toml::from_str(&text).map_err(|e| format!("{} is not a valid config: {e}", path.display()))?;
        let (low, high) = vwf_core::limits::KEEP_VERSIONS;
        if let Some(n) = config.designs.keep_versions.filter(|n| !(low..=high).contains(n)) {
            return Err(format!("{}: designs.keep_versions must be from {low} to {high}, got {n}", path.display()));
        }
        for (key, n, (low, high)) in [
            ("[limits] runs_per_origin", config.limits.runs_per_origin, vwf_core::limits::RUNS_PER_ORIGIN),
            ("[limits] run_bytes", config.limits.run_bytes, vwf_core::limits::RUN_BYTES),
            ("[runs] idempotency_hours", config.runs.idempotency_hours, vwf_core::limits::IDEMPOTENCY_HOURS),
        ] {
            if !vwf_core::limits::within(n, (low, high)) {
                return Err(format!("{}: {key} must be from {low} to {high}, got {n}", path.display()));
            }
        }
        if let Some((model, _)) = config.prices.models.iter().find(|(_, p)| !p.is_valid()) {
            return Err(format!("{}: [prices.{model:?}]: prices are amounts of at least 0", path.display()));
        }
        for (name, rate) in &config.limits.rates {
            if !vwf_core::rate::is_name(name) {
                return Err(format!("{}: [limits.{name:?}]: a limit's name is 1 to 64 letters, digits, '_', '-' or '.'", path.display()));
            }
            rate.rule().map_err(|why| format!("{}: [limits.{name}]: {why}", path.display()))?;
        }
        if let Some(endpoint) = &config.telemetry.otlp_endpoint
            && !url::Url::parse(endpoint).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        {
            return Err(format!("{}: [telemetry] otlp_endpoint must be an http or https URL, got {endpoint:?}", path.display()));
        }
        if let Some((name, _)) = config.secrets.iter().find(|(name, var)| !vwf_core::secrets::is_name(name) || var.trim().is_empty()) {
            return Err(format!(
                "{}: [secrets] {name:?}: a secret's name is letters, digits and '_' (not starting with a digit) and its value names an environment variable",
                path.display()
            ));
        }
        Ok(config)
    }

    pub fn has_agent_backend(&self) -> bool {
        self.agent.backend != BackendKind::None
    }

    /// Every environment variable the config names as holding a secret: the agent's key, the
    /// channels' tokens, webhook URLs and signing keys, the server's token and `[secrets]`.
    /// None of them reaches a child process (see `exec::process`).
    pub fn secret_vars(&self) -> std::collections::BTreeSet<String> {
        let mut vars: std::collections::BTreeSet<String> = self.secrets.values().cloned().collect();
        vars.extend(self.agent.api_key_env.clone());
        let c = &self.channels;
        if let Some(t) = &c.telegram {
            vars.extend(t.token_env.clone());
        }
        if let Some(s) = &c.slack {
            vars.extend(s.token_env.clone());
            vars.extend(s.webhook_url_env.clone());
        }
        if let Some(d) = &c.discord {
            vars.extend(d.webhooks.values().cloned());
        }
        vars.extend(c.webhook.values().filter_map(|w| w.secret_env.clone()));
        if let Some(toml::Value::String(v)) = self.server.get("token_env") {
            vars.insert(v.clone());
        }
        vars.retain(|v| !v.is_empty());
        vars
    }

    /// The values of `[secrets]` as they stand in the environment now: what a step's
    /// `{{secrets.NAME}}` becomes when it is sent.
    pub fn secret_values(&self) -> vwf_core::secrets::Secrets {
        let mut secrets = vwf_core::secrets::Secrets::default();
        for (name, var) in &self.secrets {
            match std::env::var(var) {
                Ok(value) if !value.is_empty() => secrets.insert(name, value),
                _ => secrets.missing(name, format!("its environment variable {var} is not set")),
            }
        }
        secrets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_is_default_and_unknown_keys_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert!(!c.has_agent_backend());
        assert!(c.commands.enabled);
        std::fs::write(Config::path(dir.path()), "[agent]\nbackend = \"none\"\nfuture = 1\n[commands]\nenabled = false\n").unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert!(!c.commands.enabled);
        std::fs::write(Config::path(dir.path()), "[agent]\nbackend = \"magic\"\n").unwrap();
        let e = Config::load(dir.path()).unwrap_err();
        assert!(e.contains("agent backend \"magic\" is unknown"), "{e}");
        std::fs::write(Config::path(dir.path()), "[profiles.p]\nbackend = \"magic\"\n").unwrap();
        let e = Config::load(dir.path()).unwrap_err();
        assert!(e.contains("agent backend \"magic\" is unknown"), "{e}");
        std::fs::write(Config::path(dir.path()), "not toml [").unwrap();
        assert!(Config::load(dir.path()).is_err());
    }

    #[test]
    fn limits_default_and_are_bounded_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert_eq!((c.limits.runs_per_origin, c.limits.run_bytes), (100, 16 * 1024 * 1024));
        std::fs::write(Config::path(dir.path()), "[limits]\nruns_per_origin = 10\nrun_bytes = 1048576\n").unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert_eq!((c.limits.runs_per_origin, c.limits.run_bytes), (10, 1024 * 1024));
        for (bad, key) in [
            ("runs_per_origin = 0", "runs_per_origin"),
            ("runs_per_origin = 1001", "runs_per_origin"),
            ("run_bytes = 1000", "run_bytes"),
            ("run_bytes = 2000000000", "run_bytes"),
        ] {
            std::fs::write(Config::path(dir.path()), format!("[limits]\n{bad}\n")).unwrap();
            let error = Config::load(dir.path()).unwrap_err();
            assert!(error.contains(&format!("[limits] {key} must be from")), "{bad}: {error}");
        }
        std::fs::write(Config::path(dir.path()), "[limits]\nrun_byte = 100000\n").unwrap();
        assert!(Config::load(dir.path()).is_err(), "a misspelt key is refused");
        std::fs::write(Config::path(dir.path()), "[limits]\nrun_bytes = \"16M\"\n").unwrap();
        assert!(Config::load(dir.path()).is_err(), "a number is a number");
        // Rate limits: one rate each, in range.
        std::fs::write(Config::path(dir.path()), "[limits]\nrun_bytes = 1048576\n[limits.openai]\nper_second = 20\nburst = 5\n").unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert_eq!(c.limits.rates["openai"].rule(), Ok(vwf_core::rate::Rule { limit: 25, period_ms: 1000 }));
        assert_eq!(c.limits.run_bytes, 1024 * 1024);
        for bad in ["per_second = 0", "per_second = 1\nper_minute = 1", "burst = 3", "per_minute = 20\nspeed = 1", "per_second = 20000"] {
            std::fs::write(Config::path(dir.path()), format!("[limits.x]\n{bad}\n")).unwrap();
            assert!(Config::load(dir.path()).is_err(), "{bad}");
        }
    }
}
