//! Only a carrier for the `e2e` test binary; see `e2e/main.rs`.
