//! What a long history, a huge record and a log changed under memoryd's feet must not do:
//! empty an answer, count a record twice, keep text the log no longer holds, or make
//! memoryd read a file through a symbolic link.

use super::*;

fn texts(hits: &[Hit]) -> Vec<&str> {
    let mut t: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    t.sort_unstable();
    t
}

/// Replaces the log at `log` atomically (new file, fsync, rename), as forgetting does.
fn replace(log: &Path, records: &[Record]) {
    let tmp = log.with_extension("jsonl.tmp");
    let mut f = std::fs::File::create(&tmp).unwrap();
    for r in records {
        f.write_all(r.to_line().as_bytes()).unwrap();
    }
    f.sync_all().unwrap();
    std::fs::rename(&tmp, log).unwrap();
}

/// Regression: one record over 1 MiB made every recall it matched answer nothing, since
/// the answer dropped hits from the end until it fitted and the huge one was first.
#[test]
fn a_record_over_a_mebibyte_comes_back_clipped_beside_the_other_hits() {
    let fx = Fixture::new("");
    let huge = format!("walrus {}", "tusk ".repeat(400_000));
    Epoch::start(&fx, "main")
        .add(&assistant(&huge))
        .add(&user("a small walrus"));
    let _d = Daemon::start("memoryd", &fx);
    let hits = recall(&fx, "walrus");
    assert_eq!(
        hits.len(),
        2,
        "{:?}",
        texts(&hits).iter().map(|t| t.len()).collect::<Vec<_>>()
    );
    let big = hits
        .iter()
        .find(|h| h.text.starts_with("walrus tusk"))
        .unwrap();
    assert!(big.text.len() < 64 * 1024, "{}", big.text.len());
    let chars = huge.chars().count();
    assert!(
        big.text
            .ends_with(&format!("… [clipped: the record had {chars} characters]")),
        "{}",
        &big.text[big.text.len() - 80..]
    );
    assert!(hits.iter().any(|h| h.text == "a small walrus"));
}

/// Regression: only the size was compared with the offset indexed, so a log rewritten in
/// place at the same size kept its old rows (a scrubbed password was still recalled).
#[test]
fn a_log_rewritten_in_place_at_the_same_size_is_read_again() {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    epoch.add(&user("my bank password is hunter2"));
    epoch.add(&assistant("noted, the bank"));
    let _d = Daemon::start("memoryd", &fx);
    assert_eq!(recall(&fx, "hunter2").len(), 1);
    let before = std::fs::read(&epoch.log).unwrap();
    let after = String::from_utf8(before.clone())
        .unwrap()
        .replace("hunter2", "xxxxxxx");
    assert_eq!(after.len(), before.len());
    // In place: same inode, same size.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&epoch.log)
        .unwrap();
    f.write_all(after.as_bytes()).unwrap();
    f.sync_all().unwrap();
    assert!(recall(&fx, "hunter2").is_empty());
    assert_eq!(
        texts(&recall(&fx, "bank")),
        vec!["my bank password is xxxxxxx", "noted, the bank"]
    );
    assert_eq!(status(&fx).rows, 2);
}

/// Regression: a longer file renamed over a log lost the old rows and indexed none of the
/// new ("not valid json"), since reading went on from the old offset.
#[test]
fn a_longer_or_shorter_file_renamed_over_a_log_replaces_its_rows_once() {
    let fx = Fixture::new("");
    let epoch = Epoch::start(&fx, "main");
    epoch
        .add(&user("the old heron"))
        .add(&assistant("an old reply"));
    let d = Daemon::start("memoryd", &fx);
    assert_eq!(recall(&fx, "heron").len(), 1);
    assert_eq!(status(&fx).rows, 2);
    replace(
        &epoch.log,
        &[
            user("a new heron, longer than the one before it"),
            assistant("a new reply"),
            user("and one more heron line"),
        ],
    );
    assert_eq!(
        texts(&recall(&fx, "heron")),
        vec![
            "a new heron, longer than the one before it",
            "and one more heron line"
        ]
    );
    assert_eq!(status(&fx).rows, 3);
    let line = d.wait_log("was replaced by another file");
    assert!(
        line.contains("epoch-000000.jsonl") && !line.contains("heron"),
        "{line}"
    );
    replace(&epoch.log, &[user("only a short heron")]);
    assert_eq!(texts(&recall(&fx, "heron")), vec!["only a short heron"]);
    assert_eq!(status(&fx).rows, 1);
}

/// Regression: a symlinked log was followed (memoryd parsed /etc/passwd through one), and
/// a symlinked session directory was passed over without a word.
#[test]
fn symlinked_logs_and_session_directories_are_refused_with_a_line_naming_them() {
    let fx = Fixture::new("");
    let outside = fx.dir.path().join("outside");
    // A session directory elsewhere, linked in.
    Epoch::begin(&outside, "real", 0, Label::PUBLIC).add(&user("linked session kestrel"));
    let sessions = fx.state_dir.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::os::unix::fs::symlink(outside.join("sessions/real"), sessions.join("linked")).unwrap();
    // A log linked to a file elsewhere.
    let target = fx.dir.path().join("elsewhere.jsonl");
    std::fs::write(&target, user("linked log kestrel").to_line()).unwrap();
    let main = Epoch::start(&fx, "main");
    std::os::unix::fs::symlink(&target, &main.log).unwrap();
    Epoch::start(&fx, "fine").add(&user("a real kestrel"));
    let d = Daemon::start("memoryd", &fx);
    assert_eq!(texts(&recall(&fx, "kestrel")), vec!["a real kestrel"]);
    let line = d.wait_log(&format!(
        "{} is a symbolic link",
        sessions.join("linked").display()
    ));
    assert!(line.contains("not followed"), "{line}");
    d.wait_log(&format!("{} is a symbolic link", main.log.display()));
}
