//! Stand-ins for the services boxmaker talks to, for tests only: loopd's unit tests drive
//! its `Reporter` as a library against them, and the end-to-end tests point the real
//! loopd at them. One copy serves both, so the two kinds of test cannot drift apart on
//! what the service does.

// This crate is test code that happens to be a library: a panic here is a test failing,
// which is the report a test wants, so it unwraps as tests do.
#![allow(clippy::unwrap_used)]

pub mod honcho;
