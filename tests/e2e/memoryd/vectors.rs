//! Recall by meaning: memoryd with `memory.embed_model` set embeds what it
//! indexes in the background and fuses both rankings. These need the embedding model
//! (scripts/setup-python unpacks it into the venv); without it they say SKIPPED, or fail
//! in CI (`support::prereq`).

use super::*;
use crate::support::prereq::embed_model;
use crate::support::HANG;
use nix::sys::signal::Signal;
use std::time::Instant;

/// The fixture's config with `memory.embed_model` set to `model`.
pub(super) fn with_model(fx: &Fixture, model: &Path) {
    let text = format!(
        "state_dir = {:?}\n\n[baseline]\nsystem = {:?}\n\n[memory]\nsocket = {:?}\nembed_model = {:?}\n\n\
         [channel]\nsocket = {:?}\n",
        fx.state_dir,
        fx.prompts.join("system.md"),
        fx.memoryd_sock,
        model,
        fx.loopd_sock,
    );
    std::fs::write(&fx.config, text).unwrap();
}

/// Polls `Status` until every indexed row has its vector.
pub(super) fn wait_embedded(fx: &Fixture) -> MemoryStatus {
    let deadline = Instant::now() + HANG;
    loop {
        let s = status(fx);
        if s.rows > 0 && s.vectors == s.rows && s.vectors_pending == 0 {
            return s;
        }
        assert!(s.vectors <= s.rows, "more vectors than rows: {s:?}");
        assert!(Instant::now() < deadline, "backfill stuck at {s:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_question_sharing_no_word_with_its_record_is_recalled_by_meaning() {
    let Some(model) = embed_model() else { return };
    let fx = Fixture::new("");
    with_model(&fx, &model);
    Epoch::start(&fx, "main")
        .add(&user("I'm allergic to penicillin"))
        .add(&user("the car needs new tyres before winter"))
        .add(&user("ticket 4471 is about the broken boiler"));
    let _d = Daemon::start("memoryd", &fx);
    wait_embedded(&fx);
    let hits = recall(&fx, "which medicine must I never take?");
    assert_eq!(
        hits.first().map(|h| h.text.as_str()),
        Some("I'm allergic to penicillin"),
        "{hits:?}"
    );
    // An exact code still wins over whatever is near in meaning.
    let hits = recall(&fx, "4471");
    assert_eq!(
        hits.first().map(|h| h.text.as_str()),
        Some("ticket 4471 is about the broken boiler"),
        "{hits:?}"
    );
}

#[test]
fn secret_text_is_never_embedded() {
    let Some(model) = embed_model() else { return };
    let fx = Fixture::new("");
    with_model(&fx, &model);
    Epoch::start(&fx, "main")
        .add(&user("my bank is on the high street"))
        .add(&tool_result(
            1,
            "read_file",
            "the vault combination",
            DataClass::Secret,
            false,
        ))
        .add(&assistant(
            "the vault combination is written on the blue card",
        ))
        .add(&user("where did I put the safe's code?"));
    let _d = Daemon::start("memoryd", &fx);
    let s = wait_embedded(&fx);
    // One row (the text before the secret tool result); the rest is secret and has
    // neither a text row nor a vector.
    assert_eq!((s.rows, s.vectors), (1, 1), "{s:?}");
    for hit in recall_at(&fx, "the code of the safe in the vault", DataClass::Secret) {
        assert!(!hit.text.contains("vault"), "{hit:?}");
        assert!(!hit.text.contains("safe"), "{hit:?}");
    }
    let bytes = index_bytes(&fx);
    assert!(!contains(&bytes, "blue card"));
}

#[test]
fn a_missing_model_falls_back_to_words_with_one_warning_naming_the_path() {
    let fx = Fixture::new("");
    let missing = fx.path().join("no-such-model");
    with_model(&fx, &missing);
    Epoch::start(&fx, "main").add(&user("tea at four with Maria"));
    let d = Daemon::start("memoryd", &fx);
    let line = d.wait_log("recall is by words only");
    assert!(line.contains(&missing.display().to_string()), "{line}");
    for _ in 0..3 {
        let hits = recall(&fx, "tea");
        assert_eq!(hits.len(), 1, "{hits:?}");
    }
    let s = status(&fx);
    assert_eq!((s.vectors, s.vectors_pending), (0, 0), "{s:?}");
    let warnings = d
        .log_text()
        .lines()
        .filter(|l| l.contains("embed_model"))
        .count();
    assert_eq!(warnings, 1, "{}", d.log_text());
}

/// Records in the backfill that is killed: enough batches that the kill lands between
/// the first stored batch and the last.
const BACKFILL: usize = 300;

#[test]
fn a_backfill_killed_with_sigkill_resumes_without_duplicates() {
    let Some(model) = embed_model() else { return };
    let fx = Fixture::new("");
    with_model(&fx, &model);
    let epoch = Epoch::start(&fx, "big");
    let mut text = String::new();
    for i in 0..BACKFILL {
        text.push_str(
            &user(&format!(
                "note {i}: the {} is in drawer {}",
                ["key", "pen", "map"][i % 3],
                i % 7
            ))
            .to_line(),
        );
    }
    epoch.raw(text.as_bytes());
    let mut doomed = Daemon::start("memoryd", &fx);
    let deadline = Instant::now() + HANG;
    loop {
        let s = status(&fx);
        if s.vectors > 0 {
            assert!(
                s.vectors_pending > 0,
                "the backfill finished before the kill: {s:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "backfill never started: {s:?}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    doomed.signal(Signal::SIGKILL);
    doomed.wait();

    let _d = Daemon::start("memoryd", &fx);
    let s = wait_embedded(&fx);
    assert_eq!(
        (s.rows, s.vectors),
        (BACKFILL as u64, BACKFILL as u64),
        "{s:?}"
    );
}

/// Copies the model directory `from` (one level of subdirectories) to `to`.
fn copy_model(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_model(&entry.path(), &target);
        } else {
            std::fs::create_dir_all(to).unwrap();
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Regression: a damaged model at the path cleared every stored vector before its load
/// failed (the fingerprint was path and size, compared before loading), so putting the
/// good model back embedded everything again; the error line carried a backtrace.
#[test]
fn a_damaged_model_keeps_the_stored_vectors_and_the_good_one_back_reuses_them() {
    let Some(model) = embed_model() else { return };
    let fx = Fixture::new("");
    let copy = fx.dir.path().join("model");
    copy_model(&model, &copy);
    with_model(&fx, &copy);
    Epoch::start(&fx, "main")
        .add(&user("the heron stood in the reeds"))
        .add(&assistant("a quiet bird at the water"));
    let mut d = Daemon::start("memoryd", &fx);
    let before = wait_embedded(&fx);
    assert!(d.stop().success());
    let weights = copy.join("model.safetensors");
    let good = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &good[..good.len() / 2]).unwrap();
    let mut d = Daemon::start("memoryd", &fx);
    let line = d.wait_log("recall is by words only");
    assert!(
        line.len() < 600 && !line.contains("backtrace"),
        "one line, no backtrace: {line}"
    );
    assert_eq!(status(&fx).vectors, before.vectors);
    assert!(d.stop().success());
    std::fs::write(&weights, &good).unwrap();
    let d = Daemon::start("memoryd", &fx);
    d.wait_log("embedding model loaded");
    let s = status(&fx);
    assert_eq!((s.vectors, s.vectors_pending), (before.vectors, 0));
    assert!(!d.log_text().contains("queued for embedding again"));
}

/// Regression: an index made before rows kept their word pieces had every vector
/// dropped at the upgrade, so until the backfill came back to a row it was found by its
/// words alone, and `Status` counted from none. Now every row keeps its vector while its
/// pieces are made again (oldest last), and is counted once throughout.
#[test]
fn an_index_made_before_pieces_keeps_its_vectors_while_they_are_made() {
    let Some(model) = embed_model() else { return };
    let fx = Fixture::new("");
    with_model(&fx, &model);
    let epoch = Epoch::start(&fx, "main");
    // The oldest row, so the backfill, newest first, comes to it last.
    let mut text = user("I'm allergic to penicillin").to_line();
    for i in 0..BACKFILL {
        text.push_str(&user(&format!("note {i}: the map is in drawer {}", i % 7)).to_line());
    }
    epoch.raw(text.as_bytes());
    let rows = BACKFILL as u64 + 1;
    let mut d = Daemon::start("memoryd", &fx);
    wait_embedded(&fx);
    assert!(d.stop().success());
    // As a memoryd made it before rows kept their pieces.
    let db = rusqlite::Connection::open(fx.state_dir.join("memory").join("index.sqlite")).unwrap();
    db.execute_batch("DROP TRIGGER pieces_row_dropped; DROP TABLE vec_pieces")
        .unwrap();
    drop(db);

    let d = Daemon::start("memoryd", &fx);
    d.wait_log("embedding model loaded");
    // The model has just loaded: the pieces' backfill has barely begun (a batch takes a
    // tenth of a second, the whole of it seconds).
    let s = status(&fx);
    assert_eq!(s.vectors, rows, "every vector kept: {s:?}");
    let hits = recall(&fx, "which medicine must I never take?");
    assert_eq!(
        hits.first().map(|h| h.text.as_str()),
        Some("I'm allergic to penicillin"),
        "found by its kept vector: {hits:?}"
    );
    let deadline = Instant::now() + HANG;
    loop {
        let s = status(&fx);
        assert_eq!(s.vectors, rows, "each row counted once: {s:?}");
        if s.vectors_pending == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "backfill stuck at {s:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!d.log_text().contains("queued for embedding again"));
}
