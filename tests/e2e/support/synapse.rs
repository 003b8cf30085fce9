//! A real Synapse (PyPI `matrix-synapse` in the venv, run through `scripts/synapse`) on
//! 127.0.0.1 with SQLite and a config written here: no federation, no URL previews, rate
//! limits out of the way unless a test sets one for its own account. One is shared by the
//! tests of a module ([`shared`]); a test that stops and starts it has its own
//! ([`Synapse::start`]). Accounts are registered with the shared secret (Synapse's admin
//! registration API, an HMAC-SHA1 of the nonce and the account), each test with names of
//! its own, so tests on one server never see each other's rooms. Without the venv or
//! Synapse a test says SKIPPED, or fails in CI (`support::prereq`).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

/// How long Synapse may take to start (schema made on first start, then listening).
/// Observed: about 3 s; the machine is shared, so the guard is generous.
const START_WITHIN: Duration = Duration::from_secs(90);

/// A call of the test's own (the phone's, the admin's) may take this long.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The shared secret accounts are registered with (loopback only, a throwaway server).
const SECRET: &str = "boxmaker-e2e-registration";

pub struct Synapse {
    pub url: String,
    port: u16,
    dir: tempfile::TempDir,
    child: Mutex<Option<Child>>,
    admin: OnceLock<Account>,
}

/// A registered account and its access token (one device each).
#[derive(Debug, Clone)]
pub struct Account {
    pub user_id: String,
    pub token: String,
    pub device_id: String,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Whether the venv holds Synapse; says SKIPPED (or fails in CI) when it does not.
fn installed() -> bool {
    let Some(venv) = super::prereq::venv() else {
        return false;
    };
    let found = Command::new(venv.join("bin").join("python"))
        .args(["-c", "import synapse.app.homeserver"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        super::prereq::missing(
            &format!("no Synapse in {}", venv.display()),
            "scripts/synapse install; scripts/test runs it",
        );
    }
    found
}

/// The Synapse the tests of a module share, started on first use and ended with the test
/// binary (it exits with its parent).
pub fn shared() -> Option<&'static Synapse> {
    static SERVER: OnceLock<Option<Synapse>> = OnceLock::new();
    SERVER.get_or_init(Synapse::start).as_ref()
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The config Synapse runs with. Read against Synapse's generated default: the listener
/// is the client API only, on 127.0.0.1; SQLite; no key servers and no federation; URL
/// previews off (the default too, said here because the library's docs rely on it); the
/// rate limits high, so only a test that sets its own sees a 429.
fn config(dir: &Path, port: u16) -> String {
    let d = dir.display();
    let high = "{per_second: 10000, burst_count: 10000}";
    format!(
        "server_name: \"localhost\"
pid_file: {d}/homeserver.pid
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {d}/homeserver.db
media_store_path: {d}/media
signing_key_path: {d}/signing.key
registration_shared_secret: \"{SECRET}\"
macaroon_secret_key: \"boxmaker-e2e-macaroon\"
form_secret: \"boxmaker-e2e-form\"
report_stats: false
trusted_key_servers: []
suppress_key_server_warning: true
federation_domain_whitelist: []
url_preview_enabled: false
enable_metrics: false
presence:
  enabled: false
rc_message: {high}
rc_registration: {high}
rc_login:
  address: {high}
  account: {high}
  failed_attempts: {high}
rc_joins:
  local: {high}
  remote: {high}
rc_invites:
  per_room: {high}
  per_user: {high}
  per_issuer: {high}
"
    )
}

impl Synapse {
    /// A Synapse of the caller's own, which `restart` can stop and start again on the same
    /// port and database. `None` (after SKIPPED, or a failure in CI) without Synapse.
    pub fn start() -> Option<Synapse> {
        if !installed() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        std::fs::write(dir.path().join("homeserver.yaml"), config(dir.path(), port)).unwrap();
        let s = Synapse {
            url: format!("http://127.0.0.1:{port}"),
            port,
            dir,
            child: Mutex::new(None),
            admin: OnceLock::new(),
        };
        s.run();
        Some(s)
    }

    /// Starts the process and waits (within `START_WITHIN`) for its log to say it listens
    /// and for `/_matrix/client/versions` to answer.
    fn run(&self) {
        let log_path = self.log_path();
        let mut child = Command::new(repo().join("scripts").join("synapse"))
            .arg("run")
            .arg(self.dir.path().join("homeserver.yaml"))
            // The shared server's directory is never dropped (it lives in a static): the
            // server removes it when the test binary has gone.
            .arg("--remove-dir-with-parent")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let want = format!("now listening on TCP port {}", self.port);
        std::thread::spawn(move || {
            let mut log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
                .unwrap();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(log, "{line}");
                if line.contains(&want) {
                    let _ = tx.send(());
                }
            }
        });
        *self.child.lock().unwrap() = Some(child);
        if rx.recv_timeout(START_WITHIN).is_err() {
            panic!(
                "synapse did not listen within {START_WITHIN:?}; its log: {}",
                self.log_path().display()
            );
        }
        let versions = matrix::Client::new(&self.url, "", "").versions();
        assert!(versions.is_ok(), "synapse answers: {versions:?}");
    }

    pub fn log_path(&self) -> PathBuf {
        std::env::temp_dir().join(format!("boxmaker-e2e-synapse-{}.log", self.port))
    }

    /// Kills the homeserver (as a crash or a power cut would) and waits for it to exit.
    pub fn stop(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with the same database.
    pub fn start_again(&self) {
        self.run();
    }

    /// Registers `name` (a localpart) with the shared secret.
    pub fn register(&self, name: &str, admin: bool) -> Account {
        let url = format!("{}/_synapse/admin/v1/register", self.url);
        let nonce = get_json(&url)["nonce"].as_str().unwrap().to_string();
        let password = format!("pw-{name}");
        let kind = if admin { "admin" } else { "notadmin" };
        let key =
            ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, SECRET.as_bytes());
        let msg = [nonce.as_str(), name, &password, kind].join("\0");
        let mac: String = ring::hmac::sign(&key, msg.as_bytes())
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let body = json!({"nonce": nonce, "username": name, "password": password,
                          "admin": admin, "mac": mac});
        let v = call(
            &self.url,
            "",
            "POST",
            "/_synapse/admin/v1/register",
            Some(body),
        )
        .unwrap();
        Account {
            user_id: v["user_id"].as_str().unwrap().to_string(),
            token: v["access_token"].as_str().unwrap().to_string(),
            device_id: v["device_id"].as_str().unwrap().to_string(),
        }
    }

    /// Three new accounts, named after `test` so tests sharing the server never meet:
    /// boxmaker's, the owner's phone and a stranger.
    pub fn cast(&self, test: &str) -> Cast {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let tag = format!("{test}{n}").to_ascii_lowercase();
        Cast {
            boxmaker: self.register(&format!("box-{tag}"), false),
            phone: self.register(&format!("phone-{tag}"), false),
            stranger: self.register(&format!("eve-{tag}"), false),
        }
    }

    /// A new access token for `account` (a new login, so a new device), as its owner
    /// would make one after the old token was revoked.
    pub fn login(&self, account: &Account) -> String {
        let local = account
            .user_id
            .trim_start_matches('@')
            .split(':')
            .next()
            .unwrap()
            .to_string();
        let body = json!({"type": "m.login.password",
                          "identifier": {"type": "m.id.user", "user": local},
                          "password": format!("pw-{local}")});
        let v = call(
            &self.url,
            "",
            "POST",
            "/_matrix/client/v3/login",
            Some(body),
        )
        .unwrap();
        v["access_token"].as_str().unwrap().to_string()
    }

    /// The library's client as `account`.
    pub fn client(&self, account: &Account) -> matrix::Client {
        matrix::Client::new(&self.url, &account.user_id, &account.token)
    }

    /// Sets `account`'s own message rate (Synapse's per-user override of `rc_message`,
    /// through the admin API): the 429 test's way to be limited on a shared server.
    pub fn limit_messages(&self, account: &Account, per_second: u64, burst: u64) {
        let admin = self
            .admin
            .get_or_init(|| self.register(&format!("admin-{}", self.port), true));
        let path = format!(
            "/_synapse/admin/v1/users/{}/override_ratelimit",
            matrix_seg(&account.user_id)
        );
        call(
            &self.url,
            &admin.token,
            "POST",
            &path,
            Some(json!({"messages_per_second": per_second, "burst_count": burst})),
        )
        .unwrap();
    }

    /// A request as `account` (the phone's side, which the library does not cover: rooms
    /// made, people invited).
    pub fn as_user(
        &self,
        account: &Account,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, (u16, Value)> {
        call(&self.url, &account.token, method, path, body)
    }

    /// The owner's phone makes a private room and invites `invite`; returns the room id.
    pub fn create_room(&self, owner: &Account, invite: &[&Account]) -> String {
        let ids: Vec<&str> = invite.iter().map(|a| a.user_id.as_str()).collect();
        let v = self
            .as_user(
                owner,
                "POST",
                "/_matrix/client/v3/createRoom",
                Some(json!({"preset": "private_chat", "invite": ids})),
            )
            .unwrap();
        v["room_id"].as_str().unwrap().to_string()
    }

    /// `account` joins `room`.
    pub fn join(&self, account: &Account, room: &str) {
        let path = format!("/_matrix/client/v3/rooms/{}/join", matrix_seg(room));
        self.as_user(account, "POST", &path, Some(json!({})))
            .unwrap();
    }

    /// `account` invites `user` into `room`.
    pub fn invite(&self, account: &Account, room: &str, user: &str) {
        let path = format!("/_matrix/client/v3/rooms/{}/invite", matrix_seg(room));
        self.as_user(account, "POST", &path, Some(json!({"user_id": user})))
            .unwrap();
    }

    /// `account` sends an `m.text` with a fresh transaction id; returns its event id.
    pub fn say(&self, account: &Account, room: &str, body: &str) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let txn = format!("phone{}", N.fetch_add(1, Ordering::SeqCst));
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{txn}",
            matrix_seg(room)
        );
        let v = self
            .as_user(
                account,
                "PUT",
                &path,
                Some(json!({"msgtype": "m.text", "body": body})),
            )
            .unwrap();
        v["event_id"].as_str().unwrap().to_string()
    }

    /// The room's events as `account` sees them, oldest first (the newest 100).
    pub fn events(&self, account: &Account, room: &str) -> Vec<Value> {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/messages?dir=b&limit=100",
            matrix_seg(room)
        );
        let v = self.as_user(account, "GET", &path, None).unwrap();
        let mut events = v["chunk"].as_array().cloned().unwrap_or_default();
        events.reverse();
        events
    }
}

/// A server of a test's own stops with it.
impl Drop for Synapse {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The accounts of one test.
pub struct Cast {
    pub boxmaker: Account,
    pub phone: Account,
    pub stranger: Account,
}

/// Percent-encodes a Matrix id as one path segment.
pub fn matrix_seg(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new().timeout(CALL_TIMEOUT).build()
}

fn get_json(url: &str) -> Value {
    read(agent().get(url).call().unwrap())
}

fn read(r: ureq::Response) -> Value {
    serde_json::from_reader(r.into_reader()).unwrap_or(Value::Null)
}

fn call(
    base: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value, (u16, Value)> {
    let mut req = agent().request(method, &format!("{base}{path}"));
    if !token.is_empty() {
        req = req.set("Authorization", &format!("Bearer {token}"));
    }
    let sent = match body {
        Some(b) => req
            .set("Content-Type", "application/json")
            .send_string(&b.to_string()),
        None => req.call(),
    };
    match sent {
        Ok(r) => Ok(read(r)),
        Err(ureq::Error::Status(code, r)) => Err((code, read(r))),
        Err(e) => panic!("{method} {path}: {e}"),
    }
}
