//! The start-up check of a llama.cpp server against what loopd needs (docs/turn.md,
//! docs/config.md), as warnings that each name their fix: the slots (`GET /slots`) and
//! whether the served chat template can do tool calls (`GET /props`). The rules are pure,
//! so they are unit tests; the worker fetches and logs the findings.

use super::Client;
use proto::config::Config;
use serde_json::Value;

/// What `GET /props` says the served chat template can do with tools
/// (`chat_template_caps`, docs/llama-api.md "Tools"). `None`: the server does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolSupport {
    /// The template renders the tool schemas into the prompt (`supports_tools`).
    pub tools: Option<bool>,
    /// The template renders the model's tool calls in the history, which llama.cpp needs
    /// to parse them out of the answer and to replay them (`supports_tool_calls`).
    pub tool_calls: Option<bool>,
}

impl ToolSupport {
    /// From a `/props` answer.
    pub fn from_props(props: &Value) -> ToolSupport {
        let caps = &props["chat_template_caps"];
        ToolSupport {
            tools: caps["supports_tools"].as_bool(),
            tool_calls: caps["supports_tool_calls"].as_bool(),
        }
    }
}

impl Client {
    /// What the served chat template can do with tools, from `GET /props`.
    pub fn tool_support(&self) -> Result<ToolSupport, super::ProbeError> {
        self.props().map(|p| ToolSupport::from_props(&p))
    }

    /// The `/props` findings, one warning line each with its fix; a server that cannot
    /// be asked gives none (the slots check already says it is not answering).
    pub fn tool_findings(&self) -> Vec<String> {
        match self.tool_support() {
            Ok(support) => tool_findings(&support),
            Err(_) => Vec::new(),
        }
    }
}

/// The fix named in every tool-template finding.
const TEMPLATE_FIX: &str = "start llama-server with --jinja and a model whose chat template supports tools (Qwen2.5/Qwen3 and other Hermes-style templates do), or give it such a template with --chat-template-file";

/// What is wrong with the tool support a server's `/props` reported.
pub fn tool_findings(support: &ToolSupport) -> Vec<String> {
    match (support.tools, support.tool_calls) {
        (Some(true), Some(true)) => Vec::new(),
        (None, None) => vec![format!(
            "GET /props has no chat_template_caps (an older llama.cpp, or --jinja off), so whether the model can call read_file, http_fetch and recall is unknown; {TEMPLATE_FIX}"
        )],
        (tools, calls) => {
            let mut missing = Vec::new();
            if tools != Some(true) {
                missing.push("supports_tools");
            }
            if calls != Some(true) {
                missing.push("supports_tool_calls");
            }
            vec![format!(
                "the served chat template cannot do tool calls (/props chat_template_caps: {} not true): the tool schemas are dropped from the prompt or the calls are never parsed, so the model will never call read_file, http_fetch or recall; {TEMPLATE_FIX}",
                missing.join(", ")
            )]
        }
    }
}

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
    fn a_template_that_can_call_tools_is_fine() {
        let props = serde_json::json!({"chat_template_caps": {
            "supports_tools": true, "supports_tool_calls": true}});
        assert!(tool_findings(&ToolSupport::from_props(&props)).is_empty());
    }

    #[test]
    fn smollm2s_own_template_is_named_with_the_fix() {
        // What this build's /props says for SmolLM2's template (docs/llama-api.md).
        let props = serde_json::json!({"chat_template_caps": {
            "supports_tools": false, "supports_tool_calls": false,
            "supports_system_role": true}});
        let f = tool_findings(&ToolSupport::from_props(&props));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].contains("supports_tools, supports_tool_calls"),
            "{}",
            f[0]
        );
        assert!(f[0].contains("--chat-template-file"), "{}", f[0]);
    }

    #[test]
    fn a_server_that_does_not_say_is_named_too() {
        let f = tool_findings(&ToolSupport::from_props(&serde_json::json!({})));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("--jinja"), "{}", f[0]);
    }

    #[test]
    fn a_context_that_differs_from_expect_is_named() {
        let f = findings(&[(0, 4096), (1, 4096)], &cfg(2048));
        assert_eq!(f.len(), 2);
        assert!(f[0].contains("expect.n_ctx is 2048"));
    }
}
