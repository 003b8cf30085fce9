//! What `/forget` says of the files of a session that no epoch reads (docs/forgetting.md,
//! 'Files not searched'): named when they hold the words or cannot be read to tell.

use super::*;

/// Regression: a log past the current epoch with no head, and a file a new epoch set
/// aside (`epoch-000001.jsonl.stray-T`), hold records nobody replays or indexes, and
/// `/forget` passed over them without a word: it answered that nothing on the box held
/// words those files still held.
#[test]
fn a_headless_log_and_a_file_set_aside_are_named_as_not_searched() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    let said = user(&format!("stale: {SECRET}")).to_line();
    std::fs::write(dir.join(log_file_name(1)), &said).unwrap();
    std::fs::write(dir.join("epoch-000001.jsonl.stray-1700000000"), &said).unwrap();
    // Empty files hold no words, and a file set aside without the words is not a
    // copy of them: not named.
    std::fs::write(dir.join(log_file_name(2)), "").unwrap();
    std::fs::write(dir.join("empty.txt"), "").unwrap();
    std::fs::write(
        dir.join("epoch-000003.jsonl.stray-1700000001"),
        user("other words").to_line(),
    )
    .unwrap();
    let searched = crate::forget::find::find_all(
        &state.path().join("sessions"),
        "blue heron",
        DataClass::Private,
    )
    .unwrap();
    assert!(searched.found.is_empty());
    assert!(searched.unread.is_empty());
    let named: Vec<_> = searched
        .not_searched
        .iter()
        .map(|n| {
            assert_eq!(n.session, "main");
            (
                n.path.file_name().unwrap().to_str().unwrap().to_string(),
                n.why.clone(),
            )
        })
        .collect();
    assert_eq!(named.len(), 2, "{named:?}");
    assert_eq!(named[0].0, "epoch-000001.jsonl");
    assert!(named[0].1.contains("no head"), "{named:?}");
    assert_eq!(named[1].0, "epoch-000001.jsonl.stray-1700000000");
    assert!(named[1].1.contains("set aside"), "{named:?}");
}

/// Regression: a session directory that is a symbolic link was passed over without a
/// word, so `/forget` said every session was searched while the linked directory (which
/// loopd served and appended to) still held the text.
#[test]
fn a_session_directory_that_is_a_symbolic_link_is_named_as_not_searched() {
    let state = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let real = new_session(elsewhere.path());
    log(&real, 0, &[user(&format!("remember {SECRET}"))], "");
    let sessions = state.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::os::unix::fs::symlink(&real, sessions.join("linked")).unwrap();
    let searched =
        crate::forget::find::find_all(&sessions, "blue heron", DataClass::Private).unwrap();
    assert!(searched.found.is_empty());
    assert_eq!(searched.unread.len(), 1);
    assert_eq!(searched.unread[0].session, "linked");
    let error = searched.unread[0].error.to_string();
    assert!(
        error.contains(&sessions.join("linked").display().to_string())
            && error.contains("is a symbolic link; not followed"),
        "{error}"
    );
}

/// The files of session `main` under `state` named as not searched for `query`, by file
/// name, with why.
fn passed_over(state: &Path, query: &str) -> Vec<(String, String)> {
    let searched =
        crate::forget::find::find_all(&state.join("sessions"), query, DataClass::Private).unwrap();
    searched
        .not_searched
        .iter()
        .map(|n| {
            let name = n.path.file_name().unwrap().to_str().unwrap().to_string();
            (name, n.why.clone())
        })
        .collect()
}

const STRAY: &str = "epoch-000001.jsonl.stray-1700000000";

/// Regression: a file set aside was matched as one raw text, so words inside a tool
/// call's arguments, escaped twice on the line (after a `\n`, or a `\u00e9` the model
/// wrote itself), were missed there while the same record in an epoch log was found:
/// `/forget` said nothing held them while the copy stayed on the disk. Then a record line
/// indented by hand was still read as plain text.
#[test]
fn a_set_aside_copy_holding_words_escaped_in_a_tool_calls_arguments_is_named() {
    for (arguments, query) in [
        (r#"{"text":"line one\nblue heron"}"#, "blue heron"),
        (r#"{"text":"caf\u00e9 blue heron"}"#, "café heron"),
    ] {
        let record = proto::test_records::assistant_calling(&[("call-1", "write_file", arguments)]);
        let state = tempfile::tempdir().unwrap();
        let dir = new_session(state.path());
        log(&dir, 0, std::slice::from_ref(&record), "");
        assert_eq!(find(&dir, query, DataClass::Private).unwrap().len(), 1);

        let state = tempfile::tempdir().unwrap();
        let dir = new_session(state.path());
        log(&dir, 0, &[user("hello")], "");
        // The record among lines that are not records, indented (which every log reader
        // passes over, as JSON does), and without a last newline.
        let copy = format!("not a record\n \t{}", record.to_line().trim_end());
        std::fs::write(dir.join(STRAY), copy).unwrap();
        let named = passed_over(state.path(), query);
        assert_eq!(named.len(), 1, "{arguments}: {named:?}");
        assert_eq!(named[0].0, STRAY);
        assert!(named[0].1.starts_with("set aside"), "{named:?}");
        assert!(passed_over(state.path(), "green heron").is_empty());
    }
}

/// Regression: a copy in another encoding (UTF-16, or compressed) was read as text with
/// its bytes replaced, found not to hold the words, and passed over in silence. It is
/// named as what cannot be read to tell.
#[test]
fn a_set_aside_copy_that_is_not_utf8_text_is_named_as_not_read_to_tell() {
    let line = user(&format!("my code is {SECRET}")).to_line();
    let utf16: Vec<u8> = line.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let gzip_like = [0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe, b'\n'].to_vec();
    for bytes in [utf16, gzip_like] {
        let state = tempfile::tempdir().unwrap();
        let dir = new_session(state.path());
        log(&dir, 0, &[user("hello")], "");
        std::fs::write(dir.join(STRAY), bytes).unwrap();
        let named = passed_over(state.path(), "blue heron");
        assert_eq!(named.len(), 1, "{named:?}");
        assert!(
            named[0].1.starts_with("set aside") && named[0].1.contains("not UTF-8 text"),
            "{named:?}"
        );
    }
}

/// Regression: a set-aside file of one long line was searched whole, holding some fifty
/// times the line (a 64 MiB line, gigabytes). A line over the bound is not searched, and
/// the file is named as not read to tell.
#[test]
fn a_set_aside_file_with_a_line_over_the_bound_is_named_unread() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    let long = format!("{}\n", "x ".repeat(3 * 1024 * 1024));
    std::fs::write(dir.join(STRAY), long).unwrap();
    let named = passed_over(state.path(), "blue heron");
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(
        named[0].1.starts_with("set aside") && named[0].1.contains("a line over 4 MiB"),
        "{named:?}"
    );
}

/// The bytes this thread allocates and frees, so a test can see the most one call held
/// at once while other tests run on other threads.
mod counting {
    #![allow(unsafe_code)]
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn moved(by: isize) {
        // `try_with`: a thread being torn down still frees after its counters are gone.
        let _ = LIVE.try_with(|live| {
            let now = live.get().saturating_add(by);
            live.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
        });
    }

    fn size(n: usize) -> isize {
        isize::try_from(n).unwrap_or(isize::MAX)
    }

    struct Counting;

    // SAFETY: every call is passed to `System` as it came; only counters are kept beside.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                moved(size(layout.size()));
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                moved(size(layout.size()));
            }
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
            unsafe { System.dealloc(p, layout) };
            moved(-size(layout.size()));
        }

        unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let q = unsafe { System.realloc(p, layout, new_size) };
            if !q.is_null() {
                moved(size(new_size) - size(layout.size()));
            }
            q
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// What `f` returns, and the most bytes this thread held at once while it ran, above
    /// what it held before.
    pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
        let start = LIVE.with(Cell::get);
        PEAK.with(|peak| peak.set(start));
        let out = f();
        let peak = PEAK.with(Cell::get);
        (out, usize::try_from(peak - start).unwrap_or(0))
    }
}

/// Regression: a file that is no epoch's went through the query's matching whole, about
/// 50 times its size in memory (a 16 MiB set-aside log took 801 MiB, one of 64 MiB some
/// 3 GiB): one `/forget` could bring in the OOM killer. It is read one line at a time,
/// so what it holds at once is a line's cost, whatever the file's size.
#[test]
fn reading_a_set_aside_file_holds_one_lines_cost_not_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STRAY);
    // Records and plain lines, with the backslashes that cost the matching a second copy.
    let record = user(r"some words here\n and a backslash \ x").to_line();
    let plain = "a plain line, with a backslash \\ and 100% of it text\n";
    let mut text = String::new();
    while text.len() < 4 * 1024 * 1024 {
        text.push_str(&record);
        text.push_str(plain);
    }
    text.push_str(&user(SECRET).to_line());
    std::fs::write(&path, &text).unwrap();
    let (told, peak) = counting::peak_of(|| crate::forget::find::tell(&path, "blue heron"));
    // Read to its last line, which holds the words.
    assert_eq!(told, crate::forget::find::Told::Holds);
    assert!(
        peak < 512 * 1024,
        "{peak} bytes held at once reading {} bytes",
        text.len()
    );
}

/// Regression: the file listed was checked by name and then read by `std::fs::read`,
/// which follows a link and waits on a FIFO: one put at the name after the listing could
/// make `/forget` read any file (`/dev/zero`, without end) or hang the worker. The read
/// itself opens only a regular file, never through a link, never waiting.
#[test]
fn the_read_of_a_file_that_is_no_epochs_refuses_a_link_and_a_fifo() {
    use crate::forget::find::{tell, Told, Untold};
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("elsewhere.txt");
    std::fs::write(&target, user(SECRET).to_line()).unwrap();
    assert_eq!(tell(&target, "blue heron"), Told::Holds);
    let linked = dir.path().join(STRAY);
    std::os::unix::fs::symlink(&target, &linked).unwrap();
    assert_eq!(
        tell(&linked, "blue heron"),
        Told::Untold(Untold::NotRegular)
    );
    let endless = dir.path().join("epoch-000002.jsonl.stray-1700000000");
    std::os::unix::fs::symlink("/dev/zero", &endless).unwrap();
    assert_eq!(
        tell(&endless, "blue heron"),
        Told::Untold(Untold::NotRegular)
    );
    let fifo = dir.path().join("epoch-000003.jsonl.stray-1700000000");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert_eq!(tell(&fifo, "blue heron"), Told::Untold(Untold::NotRegular));
}

/// Regression: a file that could not be read to tell lost what it was: a set-aside log
/// over the bound was named only as "a file too large to read through". Both are said.
#[test]
fn a_file_not_read_to_tell_keeps_what_it_is_and_says_why_it_was_not_read() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    // Sparse: its size without its bytes on the disk.
    let file = std::fs::File::create(dir.join(STRAY)).unwrap();
    file.set_len(crate::forget::find::MAX_UNSEARCHED_READ + 1)
        .unwrap();
    std::fs::write(dir.join(log_file_name(2)), [0xff, b'\n']).unwrap();
    let named = passed_over(state.path(), "blue heron");
    assert_eq!(named.len(), 2, "{named:?}");
    assert_eq!(named[0].0, log_file_name(2));
    assert!(
        named[0].1.starts_with("a log with no head") && named[0].1.contains("not UTF-8 text"),
        "{named:?}"
    );
    assert_eq!(named[1].0, STRAY);
    let mib = crate::forget::find::MAX_UNSEARCHED_READ / (1024 * 1024);
    assert!(
        named[1].1.starts_with("set aside") && named[1].1.contains(&format!("over {mib} MiB")),
        "{named:?}"
    );
}

/// Regression: a file removed between the listing and its check was named as one that
/// could not be read; it is gone, with nothing of it left to forget.
#[test]
fn a_file_gone_since_the_listing_is_not_named() {
    let state = tempfile::tempdir().unwrap();
    let dir = new_session(state.path());
    log(&dir, 0, &[user("hello")], "");
    std::fs::write(dir.join(STRAY), user(SECRET).to_line()).unwrap();
    std::fs::write(dir.join(log_file_name(2)), user(SECRET).to_line()).unwrap();
    let listing = sessions::epochs::list(&dir).unwrap();
    assert_eq!(
        crate::forget::find::not_searched(&dir, &listing, "blue heron").len(),
        2
    );
    std::fs::remove_file(dir.join(STRAY)).unwrap();
    std::fs::remove_file(dir.join(log_file_name(2))).unwrap();
    assert_eq!(
        crate::forget::find::not_searched(&dir, &listing, "blue heron"),
        Vec::new()
    );
}
