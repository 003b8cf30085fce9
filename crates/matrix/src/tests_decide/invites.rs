//! Which invites are accepted: only an owner's, by the exact user id, and never on the
//! strength of stripped state another server wrote.

use super::*;

#[test]
fn invites_are_accepted_only_from_an_owner_by_the_exact_user_id() {
    let mut m = Machine::new(ME, &owners(), Some("s0".into()));
    let invite = |sender: &str| {
        json!({"invite_state": {"events": [
            {"type": "m.room.member", "state_key": ME, "sender": sender, "content": {"membership": "invite"}},
            {"type": "m.room.name", "state_key": "", "sender": sender, "content": {"name": "me"}}
        ]}})
    };
    let s = sync(
        "s1",
        json!({}),
        json!({
            "!a:example.org": invite(OWNER),
            // The owner's localpart on another server, and the owner's id with a suffix.
            "!b:example.org": invite("@me:evil.org"),
            "!c:example.org": invite("@me:example.org.evil"),
            // No inviter said: not an owner's.
            "!d:example.org": {"invite_state": {"events": []}},
        }),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(
        d.actions,
        vec![
            Action::Accept {
                room: "!a:example.org".into()
            },
            Action::Reject {
                room: "!b:example.org".into()
            },
            Action::Reject {
                room: "!c:example.org".into()
            },
            Action::Reject {
                room: "!d:example.org".into()
            },
        ]
    );
}

/// Over federation the invite's stripped state is the inviting server's, unsigned, with
/// the real invite event appended by loopd's homeserver; a forged member event naming the
/// owner as sender, put first, does not make a stranger's invite an owner's.
#[test]
fn review_an_invite_whose_stripped_state_names_an_owner_first_is_still_the_strangers() {
    let mut m = Machine::new(ME, &owners(), Some("s0".into()));
    let s = sync(
        "s1",
        json!({}),
        json!({
            "!evil:evil.org": {"invite_state": {"events": [
                // Forged by the inviting server (stripped state carries no signature).
                {"type": "m.room.member", "state_key": ME, "sender": OWNER, "content": {"membership": "invite"}},
                {"type": "m.room.name", "state_key": "", "sender": "@eve:evil.org", "content": {"name": "x"}},
                // The invite event itself, appended by loopd's homeserver.
                {"type": "m.room.member", "state_key": ME, "sender": "@eve:evil.org", "content": {"membership": "invite"}}
            ]}}
        }),
    );
    let d = m.decide(&s, &Extra::default());
    assert_eq!(
        d.actions,
        vec![Action::Reject {
            room: "!evil:evil.org".into()
        }]
    );
}
