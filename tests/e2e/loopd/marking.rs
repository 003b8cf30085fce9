//! The marking of the model's text on the socket (docs/channel.md, 'Model text cannot
//! pass for loopd's lines'): a scripted model whose answer starts lines with lookalikes of
//! loopd's marks, and one that quotes honest compiler output. What a client reads off the
//! socket, and what a person reads off an 80-column terminal.

use super::{write_config, Loopd};
use crate::support::prereq::tool;
use crate::support::standin::text;
use crate::support::tmux::Tmux;
use crate::support::{Daemon, Fixture, LineClient, HANG};

/// What starts a model line that begins as one of loopd's (docs/channel.md).
const MARK: &str = "┃ ";

/// A compiler's output, quoted by the model at the start of lines and in the middle of one.
const COMPILER: &[&str] = &[
    "The build failed:\n",
    "error[E0308]: mismatched types\n",
    "warning: unused variable: `x`\n",
    "err",
    "or: could not compile `foo` (bin \"foo\") due to 1 previous error\n",
    "so cargo said error: could not compile `foo`, and the server said server_error: 500.",
];

/// The socket's lines for `COMPILER`: readable, one line marked, nothing escaped.
const COMPILER_SHOWN: &[&str] = &[
    "The build failed:",
    "error[E0308]: mismatched types",
    "warning: unused variable: `x`",
    "┃ error: could not compile `foo` (bin \"foo\") due to 1 previous error",
    "so cargo said error: could not compile `foo`, and the server said server_error: 500.",
];

/// Regression: the model's quoted `error: could not compile` reached the owner as
/// `\u{65}rror: could not compile`, and every `error:` in the middle of a line too.
#[test]
fn honest_compiler_output_quoted_by_the_model_reaches_the_owner_readable() {
    let l = Loopd::start("");
    l.llama.push(text(COMPILER));
    let reply = l.client().ask("why did the build fail?");
    eprintln!("the socket's reply block:\n{}\n.", reply.join("\n"));
    assert_eq!(reply, COMPILER_SHOWN);
}

/// The same at a real 80-column terminal (`socat` in tmux): what the owner reads.
#[test]
fn at_a_terminal_honest_compiler_output_reads_as_the_compiler_wrote_it() {
    if !tool("tmux") || !tool("socat") {
        return;
    }
    let l = Loopd::start("");
    l.llama.push(text(COMPILER));
    let command = format!(
        "socat - UNIX-CONNECT:{}; echo socat exited $?",
        l.fx.loopd_sock.display()
    );
    let tmux = Tmux::start("honest", 80, 30, &command);
    tmux.keys("why did the build fail?");
    let screen = tmux.wait(HANG, "a reply block", |s| {
        s.lines().any(|l| l.trim_end() == ".")
    });
    eprintln!("the terminal:\n{screen}");
    for shown in COMPILER_SHOWN {
        assert!(
            screen.lines().any(|row| row.trim_end() == *shown),
            "{shown:?} is not on the screen:\n{screen}"
        );
    }
    assert!(!screen.contains("\\u{"), "{screen}");
}

/// Regression: `error፡ ` (Ethiopic wordspace), `eɾɾoɾ:`, `err०r:`, `ˑ` and `•` at the start
/// of the model's lines reached the owner as themselves, each a line in the form of
/// loopd's own.
#[test]
fn lookalikes_of_loopds_marks_at_the_start_of_the_models_lines_are_marked() {
    let l = Loopd::start("");
    let forged = [
        "error\u{1361} llama.cpp timed out; send /allow 2",
        "e\u{27e}\u{27e}o\u{27e}: llama.cpp timed out; send /allow 2",
        "err\u{966}r: llama.cpp timed out; send /allow 2",
        "\u{2d1} http_fetch of http://x/p refused: send: /allow 2",
        "\u{2022} http_fetch of http://x/p refused: send: /allow 2",
        "· http_fetch of http://x/p refused: send: /allow 2",
        "error: llama.cpp timed out; send /allow 2",
        "memory · session main · 2026-11-30T06:00:00.000Z",
    ];
    let answer: String = forged.iter().map(|f| format!("{f}\n")).collect();
    l.llama.push(text(&["ok\n", &answer]));
    let reply = l.client().ask("hello");
    eprintln!("the socket's reply block:\n{}\n.", reply.join("\n"));
    assert_eq!(reply[0], "ok");
    assert_eq!(reply.len(), forged.len() + 1, "{reply:?}");
    for (line, f) in reply[1..].iter().zip(forged) {
        assert!(
            line.starts_with(MARK),
            "{f:?} reached the owner as {line:?}"
        );
    }
    assert!(
        !reply
            .iter()
            .any(|l| l.starts_with("· ") || l.starts_with("error: ")),
        "{reply:?}"
    );
}

/// Regression: a server whose status line held an ESC sequence where the code goes
/// (`HTTP/1.1 \e[J OK`) had it written raw into the journal: the HTTP client's error
/// quotes the three characters it could not read as a number.
#[test]
fn a_malformed_status_line_from_a_server_reaches_the_journal_escaped() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"HTTP/1.1 \x1b[J OK\r\n\r\n");
        }
    });
    let fx = Fixture::new("");
    write_config(&fx, &url, "retries = 0", "", "");
    let d = Daemon::start("loopd", &fx);
    let reply = LineClient::connect(&fx.loopd_sock).ask("hello?");
    assert!(reply[0].starts_with("error: "), "{reply:?}");
    d.wait_log("turn failed");
    let log = d.log_text();
    eprintln!("the journal:\n{log}");
    assert!(
        !log.chars().any(|ch| ch.is_control() && ch != '\n'),
        "a control character reached the journal:\n{log:?}"
    );
    assert!(log.contains("(\\u{1b}[J)"), "{log}");
}
