use super::*;

fn text(t: &str) -> Vec<Piece> {
    vec![Piece::Text(t.into())]
}

const PRIVATE: Label = Label {
    class: DataClass::Private,
    untrusted: false,
};

#[test]
fn what_waits_what_was_tried_and_what_was_delivered_survive_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let mut inbox = Inbox::load(dir.path()).unwrap();
    let (a, saved) = inbox.add("main", Kind::Heartbeat, text("news"), PRIVATE, false, None);
    saved.unwrap();
    let (b, _) = inbox.add(
        "main",
        Kind::Reminder,
        text("tea"),
        PRIVATE,
        true,
        Some("reminder 1".into()),
    );
    let tainted = Label {
        class: DataClass::Private,
        untrusted: true,
    };
    let (c, _) = inbox.add("other", Kind::Heartbeat, text("x"), tainted, false, None);
    assert!(inbox.has_source("reminder 1"));
    let mut again = Inbox::load(dir.path()).unwrap();
    assert_eq!(again.waiting("main"), vec![a.clone(), b.clone()]);
    assert!(
        again.get(b.n).unwrap().tried,
        "queued for a client, not yet written"
    );
    assert!(again.get(c.n).unwrap().untrusted);
    assert_eq!(again.unnotified().len(), 3);
    again.notified(a.n).unwrap();
    again.delivered(&[a.n, b.n]).unwrap();
    let again = Inbox::load(dir.path()).unwrap();
    assert!(again.waiting("main").is_empty());
    assert_eq!(again.waiting("other"), vec![c]);
    let last: Vec<u64> = again.last("main").iter().map(|m| m.n).collect();
    assert_eq!(last, vec![a.n, b.n]);
}

/// Regression: a beat that set a reminder (held for `/allow`) and said more was folded
/// away whole by the beats after it, its `· ` line with it, so beats a page steered could
/// hide the reminder line from the owner. Folded, a message keeps its reminder lines, and
/// those remainders are bounded too.
#[test]
fn a_folded_heartbeat_keeps_its_reminder_lines_and_the_remainders_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut inbox = Inbox::load(dir.path()).unwrap();
    let held = Piece::Must("reminder 4 held for /allow 4: MODEL-SET-GAMMA".into());
    let (first, _) = inbox.add(
        "main",
        Kind::Heartbeat,
        vec![Piece::Text("a page says hi".into()), held.clone()],
        PRIVATE,
        false,
        None,
    );
    for n in 0..MAX_WAITING_HEARTBEATS {
        let (_, saved) = inbox.add(
            "main",
            Kind::Heartbeat,
            text(&format!("spam {n}")),
            PRIVATE,
            false,
            None,
        );
        saved.unwrap();
    }
    let waiting = inbox.waiting("main");
    assert_eq!(waiting.len(), MAX_WAITING_HEARTBEATS + 1);
    assert_eq!(waiting[0].n, first.n);
    assert_eq!(
        waiting[0].pieces,
        vec![held.clone()],
        "its reminder line waits"
    );
    assert_eq!(inbox.folded("main"), 1);
    let again = Inbox::load(dir.path()).unwrap();
    assert_eq!(again.waiting("main")[0].pieces, vec![held], "and on disk");
    // A page steering every beat into setting a reminder: bounded all the same.
    for n in 0..3 * MAX_WAITING_MUST_ONLY {
        let line = Piece::Must(format!("reminder {n} set"));
        let (_, saved) = inbox.add(
            "main",
            Kind::Heartbeat,
            vec![Piece::Text("x".into()), line],
            PRIVATE,
            false,
            None,
        );
        saved.unwrap();
    }
    let waiting = inbox.waiting("main");
    assert_eq!(
        waiting.len(),
        MAX_WAITING_HEARTBEATS + MAX_WAITING_MUST_ONLY
    );
    assert_eq!(
        inbox.folded("main"),
        1 + 3 * MAX_WAITING_MUST_ONLY as u64,
        "each beat folded counted once"
    );
}

/// Regression: a heartbeat message cut at `MAX_MESSAGE_BYTES` lost the reminder line
/// after its long answer ("write 9000 characters, then set a reminder").
#[test]
fn a_cut_message_keeps_its_reminder_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut inbox = Inbox::load(dir.path()).unwrap();
    let line = Piece::Must("reminder 7 held for /allow 7".into());
    let long = Piece::Text("x".repeat(MAX_MESSAGE_BYTES + 808));
    let (m, _) = inbox.add(
        "main",
        Kind::Heartbeat,
        vec![long, line.clone()],
        PRIVATE,
        false,
        None,
    );
    assert!(m.pieces.contains(&line), "{:?}", m.pieces.last());
    assert!(matches!(&m.pieces[1], Piece::Activity(cut) if cut.starts_with("[cut here")));
    let many: Vec<Piece> = (0..1000)
        .map(|n| Piece::Must(format!("reminder {n} set for tomorrow")))
        .collect();
    let (m, _) = inbox.add("main", Kind::Heartbeat, many, PRIVATE, false, None);
    let bytes: usize = m
        .pieces
        .iter()
        .map(|p| match p {
            Piece::Must(t) => t.len(),
            _ => 0,
        })
        .sum();
    assert!(bytes <= MAX_MUST_BYTES + 100, "bounded: {bytes}");
    assert!(matches!(m.pieces.last(), Some(Piece::Must(t)) if t.starts_with("more reminders")));
}

/// Regression: past 100 waiting messages the oldest was dropped, whatever it was, so a
/// flood of heartbeats pushed the owner's reminder out. Heartbeats are folded on their
/// own; reminders all wait.
#[test]
fn heartbeats_are_folded_on_their_own_and_never_push_a_reminder_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut inbox = Inbox::load(dir.path()).unwrap();
    let (kids, _) = inbox.add(
        "main",
        Kind::Reminder,
        text("pick up the kids"),
        PRIVATE,
        false,
        None,
    );
    for n in 0..500 {
        let (_, saved) = inbox.add(
            "main",
            Kind::Heartbeat,
            text(&format!("beat {n}")),
            PRIVATE,
            false,
            None,
        );
        saved.unwrap();
    }
    let waiting = inbox.waiting("main");
    assert_eq!(waiting[0], kids);
    let beats: Vec<&Message> = waiting
        .iter()
        .filter(|m| m.kind == Kind::Heartbeat)
        .collect();
    assert_eq!(beats.len(), MAX_WAITING_HEARTBEATS);
    assert_eq!(beats[0].pieces, text("beat 495"), "the newest wait");
    assert_eq!(inbox.folded("main"), 495);
    let (folded, saved) = inbox.release("main", &[kids.n]);
    saved.unwrap();
    assert_eq!(folded, 495);
    assert_eq!(inbox.folded("main"), 0, "shown once");
    inbox.delivered(&[kids.n]).unwrap();
    for n in 0..50 {
        let (_, saved) = inbox.add(
            "main",
            Kind::Heartbeat,
            text(&n.to_string()),
            PRIVATE,
            false,
            None,
        );
        saved.unwrap();
    }
    assert!(
        inbox.last("main").iter().any(|m| m.n == kids.n),
        "/inbox still shows it"
    );
    for n in 0..600 {
        inbox.push(
            "main",
            Kind::Reminder,
            text(&n.to_string()),
            PRIVATE,
            false,
            None,
        );
    }
    inbox.trim();
    assert_eq!(
        inbox.waiting_reminders(),
        600,
        "no waiting reminder is dropped"
    );
}

#[test]
fn a_long_message_is_cut_and_a_streamed_one_joined() {
    let dir = tempfile::tempdir().unwrap();
    let mut inbox = Inbox::load(dir.path()).unwrap();
    let (long, _) = inbox.add(
        "main",
        Kind::Heartbeat,
        text(&"é".repeat(MAX_MESSAGE_BYTES)),
        PRIVATE,
        false,
        None,
    );
    assert_eq!(long.pieces.len(), 2);
    let streamed = vec![
        Piece::Text("It ".into()),
        Piece::Text("rained.".into()),
        Piece::Activity("read_file {}".into()),
        Piece::Text("Dry now.".into()),
    ];
    let (m, _) = inbox.add("main", Kind::Heartbeat, streamed, PRIVATE, false, None);
    assert_eq!(
        m.pieces,
        vec![
            Piece::Text("It rained.".into()),
            Piece::Activity("read_file {}".into()),
            Piece::Text("Dry now.".into()),
        ]
    );
}

#[test]
fn removed_messages_are_gone_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut inbox = Inbox::load(dir.path()).unwrap();
    let (a, _) = inbox.add(
        "main",
        Kind::Reminder,
        text("pin 4471"),
        PRIVATE,
        false,
        None,
    );
    let (_, saved) = inbox.add("main", Kind::Reminder, text("tea"), PRIVATE, false, None);
    saved.unwrap();
    assert_eq!(inbox.remove(&[a.n]).unwrap(), 1);
    let file = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
    assert!(!file.contains("4471"), "{file}");
    assert!(file.contains("tea"));
}

/// Found by a kill -9 campaign: with the disk full, a heartbeat's message was added in
/// memory, the write failed, and nothing wrote it again unless another change came; the
/// inbox now says it holds more than its file, and writes it again when asked.
#[test]
fn a_failed_write_is_known_and_written_again_when_the_disk_allows() {
    let dir = tempfile::tempdir().unwrap();
    let mut inbox = Inbox::load(dir.path()).unwrap();
    // A directory where the file goes: every write of it fails.
    let blocker = dir.path().join(FILE);
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("x"), "x").unwrap();
    let (m, saved) = inbox.add(
        "main",
        Kind::Heartbeat,
        text("news"),
        Label::PUBLIC,
        false,
        None,
    );
    assert!(saved.is_err());
    assert!(inbox.unsaved());
    assert!(inbox.save_again().is_err());
    std::fs::remove_dir_all(&blocker).unwrap();
    inbox.save_again().unwrap();
    assert!(!inbox.unsaved());
    let again = Inbox::load(dir.path()).unwrap();
    assert_eq!(again.get(m.n).map(|m| m.pieces.clone()), Some(text("news")));
}
