//! Answers that are not Honcho's though they look like an outcome: a 404 from the list
//! route (Honcho lists a session it does not know as an empty page; a 404 is a proxy's
//! or a wrong url's) and a 2xx to a create other than Honcho's 201 with the messages it
//! created (a proxy's maintenance page). Neither may move the cursor or have a batch
//! posted again (docs/honcho.md, 'What Honcho's answers do').

use super::client::{CallError, Client};
use super::test_standin::{config, got, options, round, settle, was_posting, Expected, Logs};
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

/// Regression: any 2xx to a create was taken as "stored", so a proxy's maintenance page
/// answered with 200 moved the cursor past a batch Honcho never got: the turn was lost,
/// silently. Only Honcho's 201 with the messages it created counts; anything else is
/// settled as a post whose answer was lost (the fence, the window, a list).
#[test]
fn a_200_html_page_to_a_create_is_not_taken_as_stored() {
    let server = Standin::start();
    server.with(|st| st.post_faults.push_back(Fault::Page(200)));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let mut want = turns(&mut logs, 0, 2);
    let reporter = reporter(state.path(), &server);
    reporter.poke("main");
    let h = reporter.wait_for(HANG, |h| h.failures >= 1);
    assert!(
        h.last_error
            .as_deref()
            .is_some_and(|e| e.contains("honcho answered 200")
                && e.contains("an HTML page of")
                && !e.contains("Maintenance")),
        "{h:?}"
    );
    want.extend(turns(&mut logs, 2, 1));
    settle(&reporter, &server, "main", want.len());
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once");
        assert_eq!(got(st), want, "every record, in order");
        assert!(st.seen.iter().any(|s| s.session), "fenced: {:?}", st.seen);
        assert!(st.seen.iter().any(|s| s.list), "listed: {:?}", st.seen);
    });
}

/// The same page hiding a create that went through: the list finds the batch held, and
/// it is not posted again.
#[test]
fn a_page_hiding_a_create_that_went_through_is_not_posted_again() {
    let server = Standin::start();
    server.with(|st| st.post_faults.push_back(Fault::StoreThenPage(200)));
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want = turns(&mut logs, 0, 2);
    let reporter = reporter(state.path(), &server);
    settle(&reporter, &server, "main", want.len());
    round(&reporter, "main");
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once");
        assert_eq!(got(st), want);
        assert_eq!(st.posts().len(), 1, "posted once: {:?}", st.seen);
        assert!(st.seen.iter().any(|s| s.list), "listed: {:?}", st.seen);
    });
}
