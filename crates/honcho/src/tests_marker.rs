//! The post marker outlives the cursor's save (docs/honcho.md, 'Nothing lost, nothing
//! twice'): when Honcho already holds the batch at the cursor, a cursor that cannot be
//! stored (ENOSPC, EIO), or a `kill -9` / power cut before it is, must leave the marker,
//! or the next start believes no post was under way and posts the batch a second time.

use super::test_standin::{config, got, options, Expected, Logs};
use super::*;
use standins::honcho::{Standin, HANG};

#[test]
fn a_batch_honcho_holds_is_not_posted_again_when_the_cursor_could_not_be_stored() {
    let server = Standin::start();
    let state = tempfile::tempdir().unwrap();
    let mut logs = Logs::new(state.path(), "main");
    let want: Vec<Expected> = logs.owner_turn(0, 0, false);
    // A post was cut short after Honcho stored the batch: its marker is there.
    super::test_standin::was_posting(state.path(), "main");
    server.with(|st| {
        for (i, (peer, e)) in [("owner", &want[0]), ("assistant", &want[1])]
            .into_iter()
            .enumerate()
        {
            st.messages.push(standins::honcho::Stored {
                id: format!("held{i}"),
                session: "main".into(),
                peer_id: peer.into(),
                content: e.1.clone(),
                created_at: standins::honcho::now_utc(),
                metadata: serde_json::json!({
                    "boxmaker_record": format!("main/0/{}/{peer}", e.2),
                    "boxmaker_session": "main",
                }),
            });
        }
    });
    // The cursor cannot be stored this time (as on a full disk).
    let blocker = state.path().join("honcho").join("main.cursor.tmp");
    std::fs::create_dir_all(blocker.join("x")).unwrap();
    let cfg = config(state.path(), &server);
    let first = Reporter::start_with(Arc::new(cfg.clone()), options(AfterPost::Continue)).unwrap();
    first.poke("main");
    let h = first.wait_for(HANG, |h| h.failures >= 1);
    assert!(h.failures >= 1, "{h:?}");
    first.stop();
    assert!(
        crate::flight::was_posting(state.path(), "main"),
        "the marker is kept while the cursor is still before the batch"
    );
    // The disk has room again; loopd restarts.
    std::fs::remove_dir_all(&blocker).unwrap();
    let second = Reporter::start_with(Arc::new(cfg), options(AfterPost::Continue)).unwrap();
    super::test_standin::round(&second, "main");
    server.with(|st| {
        assert_eq!(st.duplicates(), vec![], "each message once: {:?}", got(st));
        assert!(st.posts().is_empty(), "posted again: {:?}", st.seen);
    });
}
