//! memoryd's numeric inner loops, in a crate of their own so that debug builds compile
//! them optimised (the workspace's `Cargo.toml` says so, as it does for `gemm`): the
//! encoder's dense products on weights packed at load (`packed`) and the elementwise
//! functions it applies (`math`). Unoptimised, the products' vector instructions are
//! each a function call, and a record would take seconds to embed.

pub mod math;
pub mod packed;
