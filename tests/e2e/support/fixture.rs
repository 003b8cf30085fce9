//! A private world for one test: a temporary directory holding the state directory, the
//! prompts, both socket paths and a config file pointing at them.

use std::path::PathBuf;
use tempfile::TempDir;

pub struct Fixture {
    pub dir: TempDir,
    pub config: PathBuf,
    pub state_dir: PathBuf,
    pub loopd_sock: PathBuf,
    pub memoryd_sock: PathBuf,
    pub prompts: PathBuf,
}

/// The starter prompts, written into every fixture so loopd finds them beside system.md.
const PROMPTS: &[(&str, &str)] = &[
    ("system.md", "You are a helpful assistant."),
    ("compact.md", "Summarise the conversation so far."),
    ("summarise.md", "Summarise this tool output."),
    (
        "heartbeat.md",
        "Anything to report? Answer HEARTBEAT_OK if not.",
    ),
];

impl Fixture {
    /// A fixture whose config holds the paths plus `extra` TOML (whole tables such as
    /// `"[llama]\nurl = …"`), appended after the paths.
    pub fn new(extra: &str) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("boxmaker-e2e")
            .tempdir()
            .unwrap();
        let root = dir.path().to_path_buf();
        let state_dir = root.join("state");
        let prompts = root.join("prompts");
        std::fs::create_dir_all(&state_dir).unwrap();
        std::fs::create_dir_all(&prompts).unwrap();
        for (name, text) in PROMPTS {
            std::fs::write(prompts.join(name), text).unwrap();
        }
        let fixture = Fixture {
            config: root.join("boxmaker.toml"),
            loopd_sock: root.join("loopd.sock"),
            memoryd_sock: root.join("memoryd.sock"),
            state_dir,
            prompts,
            dir,
        };
        fixture.write_config(extra);
        fixture
    }

    /// Rewrites the config with the fixture's paths and `extra`.
    pub fn write_config(&self, extra: &str) {
        let text = format!(
            "state_dir = {:?}\n\n[baseline]\nsystem = {:?}\n\n[memory]\nsocket = {:?}\n\n\
             [channel]\nsocket = {:?}\n\n{extra}\n",
            self.state_dir,
            self.prompts.join("system.md"),
            self.memoryd_sock,
            self.loopd_sock,
        );
        std::fs::write(&self.config, text).unwrap();
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}
