//! Honcho after a secret read: the answer written under a secret context is passed over
//! for good (whatever its words), the owner's own messages and an ordinary turn still go.

use super::World;
use standins::honcho::Standin as Honcho;

#[test]
fn nothing_secret_is_posted_to_honcho_and_an_ordinary_turn_still_is() {
    let honcho = Honcho::start();
    let w = World::start(&format!("[honcho]\nurl = {:?}\n", honcho.url()));
    let key = w.file("secret/key.txt", "api key OCELOT9191\n");
    let mut c = w.client();
    let reply = c.ask(&format!("read {key}"));
    // The premise: the answer quotes the secret.
    assert!(reply.iter().any(|l| l.contains("OCELOT9191")), "{reply:?}");
    c.ask("/session plain");
    let ordinary = c.ask("hello there");
    assert!(!ordinary.is_empty());
    // Two owner messages and the ordinary answer.
    honcho.wait(|st| st.messages.len() >= 3);
    w.loopd.wait_log("passed over for good");
    honcho.with(|st| {
        let contents: Vec<&str> = st.messages.iter().map(|m| m.content.as_str()).collect();
        assert!(
            contents.iter().all(|m| !m.contains("OCELOT9191")),
            "{contents:?}"
        );
        assert!(contents.contains(&"hello there"), "{contents:?}");
        assert!(
            contents
                .iter()
                .any(|m| m.starts_with("Done.") && m.contains("hello there")),
            "the ordinary answer: {contents:?}"
        );
        assert!(
            contents.iter().any(|m| m.starts_with("read ")),
            "{contents:?}"
        );
    });
}

/// Regression: the Honcho reporter kept the owner's class it was started with, so a
/// reload that raised `channel.owner_class` (and left `[honcho]` alone) never reached it
/// and the owner's words, secret now, were still posted.
#[test]
fn a_reload_raising_the_owners_class_keeps_the_owners_words_from_honcho() {
    let honcho = Honcho::start();
    let table = format!("[honcho]\nurl = {:?}\n", honcho.url());
    let w = World::start(&table);
    let mut c = w.client();
    c.ask("hello there");
    honcho.wait(|st| st.messages.iter().any(|m| m.content == "hello there"));
    // The same config, the owner's class raised to secret.
    let tables = format!(
        "[tools.read_file]\nroots = [{:?}]\n\n[tools.http_fetch]\nallow_private = true\n\n{table}",
        w.files
    );
    crate::loopd::write_config(
        &w.fx,
        &w.llama.url,
        "retries = 1",
        "owner_class = \"secret\"",
        &tables,
    );
    w.loopd.signal(nix::sys::signal::Signal::SIGHUP);
    w.loopd.wait_log("reloaded configuration");
    c.ask("my card pin is 4471");
    w.loopd.wait_log("above honcho.max_class");
    honcho.with(|st| {
        let contents: Vec<&str> = st.messages.iter().map(|m| m.content.as_str()).collect();
        assert!(contents.iter().all(|m| !m.contains("4471")), "{contents:?}");
    });
}
