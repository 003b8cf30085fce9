//! Answers that are not Honcho's though they look like an outcome: a 404 from the list
//! route (Honcho lists a session it does not know as an empty page; a 404 is a proxy's
//! or a wrong url's). It may not have a batch posted again, nor pass for "no duplicates"
//! (docs/honcho.md, 'What Honcho's answers do').

use super::client::{CallError, Client};
use super::test_standin::{config, got, options, settle, was_posting, Expected, Logs};
use super::*;
use standins::honcho::{Fault, Standin, Stored, HANG};

fn turns(logs: &mut Logs, from: usize, n: usize) -> Vec<Expected> {
    (from..from + n)
        .flat_map(|i| logs.owner_turn(0, i, false))
        .collect()
}

fn reporter(state: &std::path::Path, server: &Standin) -> Reporter {
    Reporter::start_with(
        Arc::new(config(state, server)),
        options(AfterPost::Continue),
    )
    .unwrap()
}

/// Regression: a create answered 503 by a proxy after Honcho had stored it, then lists
/// answered 404 by that proxy: loopd read each 404 as "Honcho holds nothing" and posted
/// the batch again after each, so it was stored 3 times. A 404 from the list now fails
/// the round, which is retried; nothing is posted on its strength.
#[test]
fn a_404_from_the_list_after_an_uncertain_post_is_not_read_as_nothing_held() {
    let server = Standin::start();
    server.with(|st| {
        st.post_faults.push_back(Fault::StoreThen(503));
        st.list_faults.extend([Fault::Page(404), Fault::Page(404)]);
    });
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 2);
    let reporter = reporter(state.path(), &server);
    settle(&reporter, &server, "main", want.len());
    // A turn after it goes out as usual.
    want.extend(turns(&mut logs, 2, 1));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once");
        assert_eq!(got(st), want);
        assert_eq!(
            st.posts().len(),
            2,
            "the uncertain batch once: {:?}",
            st.seen
        );
        let lists: Vec<u16> = st
            .seen
            .iter()
            .filter(|s| s.list)
            .map(|s| s.status)
            .collect();
        assert_eq!(lists[..3], [404, 404, 200], "{lists:?}");
    });
    assert!(reporter.health().failures >= 3, "{:?}", reporter.health());
}

/// Regression: the look for duplicates after a post read a 404 from the list as "no
/// messages", so it found none and was not made again: a record Honcho held twice was
/// never warned about. A 404 leaves the look to be made after the next batch Honcho takes.
#[test]
fn a_404_from_the_list_is_not_read_as_no_duplicates() {
    let server = Standin::start();
    // The start lists (a post was cut short); the look after the post gets a 404.
    server.with(|st| st.list_faults.extend([Fault::Pass, Fault::Page(404)]));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 1);
    was_posting(state.path(), "main");
    let reporter = reporter(state.path(), &server);
    settle(&reporter, &server, "main", want.len());
    // A create that outlived every bound commits late: the owner's message is held twice.
    let record = server.with(|st| {
        assert_eq!(
            st.list_faults.len(),
            0,
            "the look got its 404: {:?}",
            st.seen
        );
        let mut copy: Stored = st.messages[0].clone();
        copy.id = "late".into();
        st.messages.push(copy.clone());
        copy.metadata["boxmaker_record"]
            .as_str()
            .unwrap()
            .to_string()
    });
    assert_eq!(reporter.health().duplicates, 0);
    want.extend(turns(&mut logs, 1, 1));
    settle(&reporter, &server, "main", want.len() + 1);
    let h = reporter.wait_for(HANG, |h| h.duplicates >= 1);
    assert_eq!(h.duplicates, 1, "{h:?}");
    server.with(|st| assert_eq!(st.duplicates(), vec![(record, 2)]));
}

/// A 404 from the list is a failure for every caller, `/forget`'s look-up by record too:
/// never an empty list.
#[test]
fn the_list_route_answering_404_is_a_failure_not_an_empty_list() {
    let server = Standin::start();
    server.with(|st| {
        st.list_faults
            .extend([Fault::Page(404), Fault::Status(404)])
    });
    let state = tempfile::tempdir().unwrap();
    let client = Client::new(&config(state.path(), &server).honcho);
    let e = client.recent("main", "main").unwrap_err();
    assert!(matches!(e, CallError::Status { status: 404, .. }), "{e:?}");
    let e = client
        .messages_by("main", message::RECORD_KEY, "main/0/x/owner")
        .unwrap_err();
    assert!(matches!(e, CallError::Status { status: 404, .. }), "{e:?}");
    // What Honcho itself answers for a session it has never seen.
    assert_eq!(client.recent("never-seen", "never-seen").unwrap(), vec![]);
}
