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
    pub channels: toml::Table,
    pub server: toml::Table,
    pub commands: Commands,
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
