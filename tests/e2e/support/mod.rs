//! What every end-to-end test needs: the built binaries, a private state directory and
//! config, a notify socket to hear `READY=1` on, and daemons that are killed when a test
//! ends however it ends.

pub mod channel;
pub mod compromised;
pub mod daemon;
pub mod fixture;
pub mod frames;
pub mod notify;
pub mod prereq;
pub mod real_llama;
pub mod records;
pub mod relay;
pub mod standin;
pub mod synapse;
pub mod tmux;
pub mod tool_llama;

pub use channel::LineClient;
pub use daemon::Daemon;
pub use fixture::Fixture;
pub use notify::NotifySocket;

use std::path::PathBuf;
use std::time::Duration;

/// How long any wait in a test may take before the test fails as hung. This is a guard
/// against hangs, not a speed assertion: the machine is shared and may be slow.
pub const HANG: Duration = Duration::from_secs(60);

/// A workspace binary, built by the test command before this test ran. Test executables
/// live in `target/<profile>/deps/`; the binaries sit one level up.
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is missing: build the binaries first (cargo build --workspace --bins)",
        path.display()
    );
    path
}
