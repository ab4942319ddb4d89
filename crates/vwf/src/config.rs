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

impl StoreConfig {
    /// The PostgreSQL settings, if a database is configured: `VWF_DATABASE_URL` wins over `url`.
    pub fn postgres(&self, env_url: Option<String>) -> Result<Option<crate::store::PgSettings>, String> {
        let Some(url) = env_url.filter(|u| !u.trim().is_empty()).or_else(|| self.url.clone()) else { return Ok(None) };
        let mut settings = crate::store::PgSettings::new(url.trim());
        if let Some(n) = self.pool_size {
            if !(2..=1000).contains(&n) {
                return Err(format!("[store] pool_size must be from 2 to 1000, got {n}"));
            }
            settings.pool_size = n;
        }
        if let Some(ms) = self.statement_timeout_ms {
            if !(100..=3_600_000).contains(&ms) {
                return Err(format!("[store] statement_timeout_ms must be from 100 to 3600000, got {ms}"));
            }
            settings.statement_timeout = std::time::Duration::from_millis(ms);
        }
        Ok(Some(settings))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct AgentConfig {
    pub backend: String,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub default_model: Option<String>,
    pub command: Vec<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig { backend: "none".into(), base_url: None, api_key_env: None, default_model: None, command: Vec::new() }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Profile {
    pub model: Option<String>,
    pub system: Option<String>,
    pub backend: Option<String>,
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
    /// The environment variable holding the HMAC-SHA256 key; the hex signature of the body goes
    /// in `X-Vwf-Signature`.
    pub secret_env: Option<String>,
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
}

impl Default for Commands {
    fn default() -> Self {
        Commands { enabled: true }
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
        match config.agent.backend.as_str() {
            "none" | "openai" | "command" => Ok(config),
            other => Err(format!("{}: agent.backend is \"openai\", \"command\" or \"none\", got {other:?}", path.display())),
        }
    }

    pub fn has_agent_backend(&self) -> bool {
        self.agent.backend != "none"
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
        assert!(Config::load(dir.path()).unwrap_err().contains("agent.backend"));
        std::fs::write(Config::path(dir.path()), "not toml [").unwrap();
        assert!(Config::load(dir.path()).is_err());
    }
}
