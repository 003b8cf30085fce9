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
