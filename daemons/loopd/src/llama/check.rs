//! The start-up check of a llama.cpp server against what loopd needs (SPEC §4, §9), as
//! warnings that each name their fix. Pure, so the rules are unit tests; the worker
//! fetches `/slots` and logs the findings.

use proto::config::Config;

/// The slots loopd uses: `slots.main` for the conversation, `slots.background` for tool
/// summaries. More only divide the server's memory, or share one KV pool.
pub const SLOTS_NEEDED: usize = 2;

/// What is wrong with a server whose `/slots` gave `slots` (`(id, n_ctx)` each), one
/// line per finding with what to change.
pub fn findings(slots: &[(u64, u64)], cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let n = slots.len();
    let all_same = slots.windows(2).all(|w| w[0].1 == w[1].1);
    if n > SLOTS_NEEDED {
        // llama-server without --parallel starts four slots over one unified KV cache
        // ("setting n_parallel = 4 and kv_unified = true"): each slot reports the whole
        // context, and background work or any other client can evict the conversation.
        let unified = if n == 4 && all_same {
            "; four slots of equal size are what llama-server starts when --parallel is not given, over one unified KV cache where any slot's work can evict the conversation"
        } else {
            ""
        };
        out.push(format!(
            "{n} slots, loopd uses {SLOTS_NEEDED}{unified}; start llama-server with --parallel 2 (and without --kv-unified) and -c set to twice expect.n_ctx"
        ));
    }
    for (id, n_ctx) in slots {
        if *n_ctx != cfg.expect.n_ctx {
            out.push(format!(
                "slot {id} has n_ctx {n_ctx}, but expect.n_ctx is {}; set expect.n_ctx to the context of one slot (llama-server's -c divided by --parallel)",
                cfg.expect.n_ctx
            ));
        }
    }
    for want in [cfg.slots.main, cfg.slots.background] {
        if !slots.iter().any(|(id, _)| *id == u64::from(want)) {
            out.push(format!(
                "no slot {want}; it will pick a slot itself, so background work may evict the conversation; start llama-server with --parallel 2"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(n_ctx: u64) -> Config {
        let mut c = Config::default();
        c.expect.n_ctx = n_ctx;
        c
    }

    #[test]
    fn two_slots_of_the_expected_size_are_fine() {
        assert!(findings(&[(0, 2048), (1, 2048)], &cfg(2048)).is_empty());
    }

    #[test]
    fn llama_cpps_default_four_unified_slots_are_named_with_the_fix() {
        let f = findings(&[(0, 8192), (1, 8192), (2, 8192), (3, 8192)], &cfg(8192));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("unified KV cache"), "{}", f[0]);
        assert!(f[0].contains("--parallel 2"), "{}", f[0]);
    }

    #[test]
    fn one_slot_misses_the_background_slot() {
        let f = findings(&[(0, 4096)], &cfg(4096));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("no slot 1"), "{}", f[0]);
    }

    #[test]
    fn a_context_that_differs_from_expect_is_named() {
        let f = findings(&[(0, 4096), (1, 4096)], &cfg(2048));
        assert_eq!(f.len(), 2);
        assert!(f[0].contains("expect.n_ctx is 2048"));
    }
}
