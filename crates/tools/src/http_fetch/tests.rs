//! Every server here listens on 127.0.0.1 only, serves a fixed number of connections and
//! then returns, so no test leaves a thread behind once its client is done.

use super::*;
use crate::{run_local, ToolOutput, FETCHED};
use proto::config::Tools;
use proto::{DataClass, Label};
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener, TcpStream};
use std::thread::{self, JoinHandle};

/// Starts a server on 127.0.0.1 that serves `connections` connections, one at a time,
/// calling `handle` with the request path. Returns the port and the server thread.
fn serve<F>(connections: usize, handle: F) -> (u16, JoinHandle<()>)
where
    F: Fn(&str, u16, &mut TcpStream) + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        for _ in 0..connections {
            let (mut stream, _) = listener.accept().unwrap();
            let path = read_request(&stream);
            handle(&path, port, &mut stream);
        }
    });
    (port, server)
}

/// Reads the request head and returns the path of its request line.
fn read_request(stream: &TcpStream) -> String {
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
    }
    first.split(' ').nth(1).unwrap_or("").to_string()
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[&str], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    // The client may already have gone (a refused redirect); that is fine.
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

fn redirect_to(location: String) -> impl Fn(&str, u16, &mut TcpStream) + Send + 'static {
    move |_, _, s| respond(s, "302 Found", &[&format!("Location: {location}")], "")
}

fn tools(allow_private: bool) -> Tools {
    let mut t = Tools::default();
    t.http_fetch.allow_private = allow_private;
    t
}

fn fetch_tool(url: &str, cfg: &Tools) -> ToolOutput {
    let args = serde_json::json!({ "url": url }).to_string();
    run_local("http_fetch", &args, cfg)
}

/// Allows the test server's 127.0.0.1 and judges every other address as in production,
/// so a redirect from the test server to another local address shows the refusal.
fn only_the_test_server(ip: IpAddr) -> Option<&'static str> {
    if ip == IpAddr::V4(Ipv4Addr::LOCALHOST) {
        None
    } else {
        addr::refusal(ip)
    }
}

fn assert_error(out: &ToolOutput, words: &[&str]) {
    assert!(
        out.content.starts_with("error: http_fetch "),
        "{}",
        out.content
    );
    for w in words {
        assert!(out.content.contains(w), "{w:?} not in {}", out.content);
    }
}

#[test]
fn a_file_url_is_refused() {
    let out = fetch_tool("file:///etc/passwd", &tools(true));
    assert_error(
        &out,
        &[
            "file:///etc/passwd",
            "scheme \"file\"",
            "only http and https",
        ],
    );
    assert!(!out.content.contains("root:"));
}

#[test]
fn other_schemes_and_bad_urls_are_refused() {
    assert_error(
        &fetch_tool("ftp://127.0.0.1/x", &tools(true)),
        &["scheme \"ftp\""],
    );
    assert_error(
        &fetch_tool("gopher://127.0.0.1/", &tools(true)),
        &["scheme"],
    );
    assert_error(
        &fetch_tool("example.org/page", &tools(true)),
        &["not a valid url"],
    );
    assert_error(&fetch_tool("http://", &tools(true)), &["not a valid url"]);
}

#[test]
fn loopback_is_refused_when_private_addresses_are_not_allowed() {
    // Refused before any connection: nothing listens on port 9, and nothing needs to.
    let out = fetch_tool("http://127.0.0.1:9/", &tools(false));
    assert_error(&out, &["127.0.0.1", "loopback", "allow_private"]);
    assert_eq!(out.label, FETCHED);
    assert_error(
        &fetch_tool("http://[::1]:9/", &tools(false)),
        &["::1", "loopback"],
    );
    assert_error(
        &fetch_tool("http://[::ffff:127.0.0.1]:9/", &tools(false)),
        &["loopback"],
    );
    assert_error(
        &fetch_tool("http://0.0.0.0:9/", &tools(false)),
        &["this-network"],
    );
}

#[test]
fn a_host_name_resolving_to_loopback_is_refused() {
    let out = fetch_tool("http://localhost:9/", &tools(false));
    assert_error(&out, &["host localhost resolves to", "loopback"]);
}

#[test]
fn a_page_is_fetched_with_label_public_untrusted() {
    let (port, server) = serve(1, |path, _, s| {
        assert_eq!(path, "/hello");
        respond(s, "200 OK", &["Content-Type: text/plain"], "hi there\n");
    });
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/hello"), &tools(true));
    server.join().unwrap();
    assert_eq!(out.content, "hi there\n");
    assert_eq!(out.label, Label::new(DataClass::Public, true));
}

#[test]
fn html_is_reduced_to_text() {
    let (port, server) = serve(1, |_, _, s| {
        let page = "<html><head><script>var x = 1;</script></head>\
                    <body><h1>Title</h1><p>First &amp; <i>second</i>.</p></body></html>";
        respond(
            s,
            "200 OK",
            &["Content-Type: text/html; charset=utf-8"],
            page,
        );
    });
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/"), &tools(true));
    server.join().unwrap();
    assert!(out.content.contains("Title"), "{}", out.content);
    assert!(out.content.contains("First & second."), "{}", out.content);
    assert!(!out.content.contains('<'), "{}", out.content);
    assert!(!out.content.contains("var x"), "{}", out.content);
}

/// The chosen behaviour for a body over `max_bytes`: the first `max_bytes` as text and a
/// `[truncated …]` line, not an error. The server writes until the client hangs up.
#[test]
fn a_page_that_never_ends_stops_at_max_bytes_with_truncated_content() {
    let (port, server) = serve(1, |_, _, s| {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n";
        let _ = s.write_all(head.as_bytes());
        let chunk = "endless line of text\n".repeat(1000);
        while s.write_all(chunk.as_bytes()).is_ok() {}
    });
    let mut cfg = tools(true);
    cfg.http_fetch.max_bytes = 64 * 1024;
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/"), &cfg);
    server.join().unwrap();
    assert!(out.content.starts_with("endless line of text\n"));
    let (body, note) = out.content.rsplit_once('\n').unwrap();
    assert_eq!(body.len(), 64 * 1024);
    assert_eq!(
        note,
        "[truncated: the page is longer than 65536 bytes (tools.http_fetch.max_bytes)]"
    );
    assert_eq!(out.label, FETCHED);
}

/// The chosen behaviour when the deadline passes mid-body: an error naming the timeout,
/// not the part that arrived. The server sends part of the body, then waits for the
/// client to hang up.
#[test]
fn a_page_that_stalls_stops_at_the_deadline_with_an_error() {
    let (port, server) = serve(1, |_, _, s| {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n";
        let _ = s.write_all(head.as_bytes());
        let _ = s.write_all(b"the start of a page that never comes");
        let mut sink = [0u8; 64];
        // Returns when the client closes the connection after its deadline.
        while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
    });
    let mut cfg = tools(true);
    cfg.http_fetch.timeout_s = 1;
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/"), &cfg);
    server.join().unwrap();
    assert_error(&out, &["no complete answer within 1 s", "timeout_s"]);
    assert!(!out.content.contains("the start of a page"));
}

#[test]
fn a_redirect_is_followed() {
    let (port, server) = serve(2, |path, port, s| match path {
        "/old" => redirect_to(format!("http://127.0.0.1:{port}/new"))(path, port, s),
        _ => respond(s, "200 OK", &["Content-Type: text/plain"], "moved here"),
    });
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/old"), &tools(true));
    server.join().unwrap();
    assert_eq!(out.content, "moved here");
}

#[test]
fn a_relative_redirect_is_resolved_against_the_page() {
    let (port, server) = serve(2, |path, _, s| match path {
        "/a/b" => respond(s, "301 Moved Permanently", &["Location: ../c"], ""),
        _ => respond(s, "200 OK", &[], &format!("at {path}")),
    });
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/a/b"), &tools(true));
    server.join().unwrap();
    assert_eq!(out.content, "at /c");
}

#[test]
fn a_redirect_to_a_private_address_is_refused() {
    for target in [
        "http://127.0.0.2:{port}/",
        "http://[::ffff:127.0.0.1]:{port}/",
    ] {
        let (port, server) = serve(1, move |_, port, s| {
            redirect_to(target.replace("{port}", &port.to_string()))("", port, s)
        });
        let cfg = tools(false).http_fetch;
        let url = format!("http://127.0.0.1:{port}/start");
        let e = fetch_with(&url, &cfg, only_the_test_server).unwrap_err();
        server.join().unwrap();
        assert!(matches!(e, FetchError::Address { .. }), "{e}");
        assert!(e.to_string().contains("loopback"), "{e}");
    }
}

#[test]
fn a_redirect_to_a_file_url_is_refused() {
    let (port, server) = serve(1, redirect_to("file:///etc/passwd".into()));
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/"), &tools(true));
    server.join().unwrap();
    assert_error(&out, &["file:///etc/passwd", "scheme \"file\""]);
}

fn chain(connections: usize) -> (u16, JoinHandle<()>) {
    serve(connections, |path, port, s| {
        let n: usize = path.trim_start_matches('/').parse().unwrap();
        if n < MAX_REDIRECTS + 1 {
            redirect_to(format!("http://127.0.0.1:{port}/{}", n + 1))(path, port, s)
        } else {
            respond(s, "200 OK", &[], "end of the chain")
        }
    })
}

#[test]
fn a_chain_of_max_redirects_is_followed() {
    // /1 → … → /6 is five redirects and six requests.
    let (port, server) = chain(MAX_REDIRECTS + 1);
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/1"), &tools(true));
    server.join().unwrap();
    assert_eq!(out.content, "end of the chain");
}

#[test]
fn a_redirect_chain_over_the_limit_is_refused() {
    // /0 → … → /6 would be six redirects; the sixth is not followed.
    let (port, server) = chain(MAX_REDIRECTS + 1);
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/0"), &tools(true));
    server.join().unwrap();
    assert_error(
        &out,
        &["/0: more than 5 redirects", "the last to http://127.0.0.1:"],
    );
    assert!(
        out.content.contains(&format!("{port}/6")),
        "{}",
        out.content
    );
}

#[test]
fn an_http_error_status_is_an_error_result() {
    let (port, server) = serve(1, |_, _, s| respond(s, "404 Not Found", &[], "gone"));
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/x"), &tools(true));
    server.join().unwrap();
    assert_error(&out, &["HTTP 404 Not Found", "/x"]);
    assert_eq!(out.label, FETCHED);
}

#[test]
fn a_binary_body_is_refused() {
    let (port, server) = serve(1, |_, _, s| {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 4\r\n\
                    Connection: close\r\n\r\n";
        let _ = s.write_all(head.as_bytes());
        let _ = s.write_all(b"\x89P\xffG");
    });
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/"), &tools(true));
    server.join().unwrap();
    assert_error(&out, &["not UTF-8", "image/png"]);
}

#[test]
fn a_connection_refused_is_an_error_result() {
    // Bind then drop, so the port is very likely closed; the message names the url.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/"), &tools(true));
    assert_error(&out, &[&format!("127.0.0.1:{port}")]);
}

#[test]
fn a_huge_timeout_does_not_overflow_the_clock() {
    let mut cfg = tools(false);
    cfg.http_fetch.timeout_s = u64::MAX;
    assert_error(&fetch_tool("http://127.0.0.1:9/", &cfg), &["loopback"]);
}

/// Regression: `http://en.wikipedia.org:PRIVATE@127.0.0.1/` went out as a Basic
/// `Authorization` header, data the owner reading the address would take for a host.
#[test]
fn a_url_with_a_user_name_or_password_is_refused_before_connecting() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    for url in [
        format!("http://en.wikipedia.org:PRIVATE@127.0.0.1:{port}/wiki/Tea"),
        format!("http://PRIVATE@127.0.0.1:{port}/"),
        format!("http://:PRIVATE@127.0.0.1:{port}/"),
    ] {
        let out = fetch_tool(&url, &tools(true));
        assert_error(&out, &["user name or password", "never sent"]);
    }
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        io::ErrorKind::WouldBlock,
        "nothing may connect"
    );
}

#[test]
fn a_redirect_to_a_url_with_a_password_is_refused() {
    let (port, server) = serve(1, |_, port, s| {
        redirect_to(format!("http://user:PRIVATE@127.0.0.1:{port}/next"))("", port, s)
    });
    let out = fetch_tool(&format!("http://127.0.0.1:{port}/"), &tools(true));
    server.join().unwrap();
    assert_error(&out, &["user name or password"]);
}
