//! End-to-end tests: the real binaries, started as a user or systemd would start them, on
//! real sockets, files and signals. One test binary with a module per area, as ripgrep
//! keeps its integration tests. The test command builds the workspace's binaries first;
//! `support::bin` finds them beside this test's own executable.

// Tests state their expectations with unwrap/expect: a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod compact;
mod forget;
mod foundation;
mod heartbeat;
mod inject;
mod layering;
#[cfg(feature = "bench")]
mod load;
mod loopd;
mod matrix;
mod memoryd;
mod newcomer;
mod promise;
mod prompt;
mod reload;
mod remind;
mod support;
mod system;
mod tty;
