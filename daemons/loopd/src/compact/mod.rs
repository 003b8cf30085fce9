//! Compaction: starting a new epoch whose head carries a summary of the old one.

pub mod policy;
