//! Which route a request is (by method and path, as Starlette matches them: 404, 405, a
//! 307 for a trailing slash), the faults a test queued, and the answer.

use super::auth::authorized;
use super::fastapi::{detail, good_name, invalid};
use super::lists::{conclusions, list};
use super::server::Request;
use super::state::{Fault, Seen, State, PAGE};
use super::store::{create, peer};
use super::time::now_utc;
use serde_json::{json, Value};

/// The Honcho session of a messages-create path (with or without its trailing slash).
pub(super) fn create_session(target: &str) -> Option<String> {
    let path = target.split('?').next().unwrap_or(target);
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    match parts.as_slice() {
        ["", "v3", "workspaces", _, "sessions", s, "messages"] => Some(s.to_string()),
        _ => None,
    }
}

/// The Honcho session a request must set up first, as Honcho's create of messages and
/// its get-or-create of a session do: the create's path, or the `id` of a session
/// get-or-create.
pub(super) fn setup_session(method: &str, target: &str, body: &[u8]) -> Option<String> {
    if method != "POST" {
        return None;
    }
    if let Some(s) = create_session(target) {
        return Some(s);
    }
    let path = target.split('?').next().unwrap_or(target);
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        ["", "v3", "workspaces", _, "sessions"] => {
            let v: Value = serde_json::from_slice(body).ok()?;
            v["id"].as_str().map(str::to_string)
        }
        _ => None,
    }
}

/// How a request is answered.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Value,
    /// An HTML page sent instead of `body` (a [`Fault::Page`]).
    pub(super) page: Option<&'static str>,
    pub(super) retry_after: Option<u64>,
    pub(super) location: Option<String>,
    pub(super) seen: Seen,
}

/// The routes, by method and path (segments; `*` is any one segment).
const ROUTES: &[(&str, &str)] = &[
    ("POST", "/v3/workspaces/*/sessions"),
    ("POST", "/v3/workspaces/*/sessions/*/messages"),
    ("POST", "/v3/workspaces/*/sessions/*/messages/"),
    ("POST", "/v3/workspaces/*/sessions/*/messages/list"),
    ("GET", "/v3/workspaces/*/sessions/*/summaries"),
    ("POST", "/v3/workspaces/*/peers"),
    ("GET", "/v3/workspaces/*/peers/*/card"),
    ("PUT", "/v3/workspaces/*/peers/*/card"),
    ("POST", "/v3/workspaces/*/conclusions/list"),
    ("DELETE", "/v3/workspaces/*/conclusions/*"),
];

fn matches(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    p.len() == q.len() && p.iter().zip(&q).all(|(a, b)| *a == "*" || a == b)
}

pub(super) fn route(st: &mut State, req: &Request) -> Answer {
    let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
    let mut seen = Seen {
        method: req.method.clone(),
        path: path.to_string(),
        list: false,
        peer: false,
        session: false,
        authorization: req.auth.clone(),
        count: 0,
        status: 0,
    };
    let answer = |status: u16, body: Value, seen: Seen| Answer {
        status,
        body,
        page: None,
        retry_after: None,
        location: None,
        seen: Seen { status, ..seen },
    };
    // Starlette: a path no route has, whatever the method, is 404; a trailing slash the
    // route does not take is redirected; another method than the route's is 405.
    let found: Vec<&(&str, &str)> = ROUTES.iter().filter(|(_, p)| matches(p, path)).collect();
    if found.is_empty() {
        let other = if let Some(p) = path.strip_suffix('/') {
            p.to_string()
        } else {
            format!("{path}/")
        };
        if ROUTES.iter().any(|(_, p)| matches(p, &other)) {
            let mut a = answer(307, Value::Null, seen);
            a.location = Some(other);
            return a;
        }
        return answer(404, detail("Not Found"), seen);
    }
    if !found.iter().any(|(m, _)| *m == req.method) {
        return answer(405, detail("Method Not Allowed"), seen);
    }
    if let Err(why) = authorized(st, req) {
        return answer(401, detail(why), seen);
    }
    let raw: Value = if req.body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(&req.body) {
            Ok(v) => v,
            Err(_) => {
                let body = invalid(
                    json!(["body", 0]),
                    "json_invalid",
                    "JSON decode error",
                    json!({}),
                    Some(json!({ "error": "Expecting value" })),
                );
                return answer(422, body, seen);
            }
        }
    };
    let parts: Vec<&str> = path.split('/').collect();
    let mut retry_after = None;
    let mut page = None;
    let (status, body) = match (req.method.as_str(), &parts[3..]) {
        (
            "POST",
            [_, "sessions", session, "messages"] | [_, "sessions", session, "messages", ""],
        ) => {
            seen.count = raw["messages"].as_array().map_or(0, Vec::len);
            match st.post_faults.front().copied() {
                Some(f @ (Fault::Status(_) | Fault::Limited(_) | Fault::Page(_))) => {
                    st.post_faults.pop_front();
                    let (s, a, r) = fault_answer(f);
                    (retry_after, page) = (r, fault_page(f));
                    (s, a)
                }
                Some(Fault::Pass) => {
                    st.post_faults.pop_front();
                    create(st, session, &raw)
                }
                Some(f @ Fault::StoreThenPage(s)) => {
                    st.post_faults.pop_front();
                    match create(st, session, &raw) {
                        (201, _) => {
                            page = fault_page(f);
                            (s, Value::Null)
                        }
                        refused => refused,
                    }
                }
                _ => create(st, session, &raw),
            }
        }
        ("POST", [_, "sessions", session, "messages", "list"]) => {
            seen.list = true;
            match st.list_faults.pop_front() {
                Some(Fault::Pass) | None => list(st, session, query, &raw),
                Some(f) => {
                    let (s, a, r) = fault_answer(f);
                    (retry_after, page) = (r, fault_page(f));
                    (s, a)
                }
            }
        }
        ("POST", [_, "sessions"]) => {
            seen.session = true;
            session_get_or_create(st, &raw)
        }
        ("GET", [_, "sessions", session, "summaries"]) => {
            let short = st.summaries.get(*session).map(|s| {
                json!({ "content": s, "message_id": "m", "summary_type": "short", "created_at": now_utc(), "token_count": 1 })
            });
            (
                200,
                json!({ "id": session, "short_summary": short, "long_summary": null }),
            )
        }
        ("POST", [_, "peers"]) => {
            seen.peer = true;
            match st.peer_faults.pop_front() {
                Some(Fault::Pass) | None => peer(st, &raw),
                Some(f) => {
                    let (s, a, r) = fault_answer(f);
                    (retry_after, page) = (r, fault_page(f));
                    (s, a)
                }
            }
        }
        ("GET", [_, "peers", p, "card"]) => (200, json!({ "peer_card": st.cards.get(*p) })),
        ("PUT", [_, "peers", p, "card"]) => match raw["peer_card"].as_array() {
            Some(lines) if lines.iter().all(Value::is_string) => {
                let lines: Vec<String> = lines
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.replace('\0', ""))
                    .collect();
                st.cards.insert(p.to_string(), lines.clone());
                (200, json!({ "peer_card": lines }))
            }
            _ => (
                422,
                invalid(
                    json!(["body", "peer_card"]),
                    "list_type",
                    "Input should be a valid list",
                    raw["peer_card"].clone(),
                    None,
                ),
            ),
        },
        ("POST", [_, "conclusions", "list"]) => {
            seen.list = true;
            conclusions(st, query, &raw)
        }
        ("DELETE", [_, "conclusions", id]) => {
            match st
                .conclusions
                .iter_mut()
                .find(|c| c.id == *id && !c.deleted)
            {
                Some(c) => {
                    c.deleted = true;
                    (204, Value::Null)
                }
                None => (
                    404,
                    detail(&format!(
                        "Document {id} not found or does not belong to workspace {}",
                        parts[3]
                    )),
                ),
            }
        }
        _ => (404, detail("Not Found")),
    };
    let mut a = answer(status, body, seen);
    a.retry_after = retry_after;
    a.page = page;
    a
}

/// Honcho's get-or-create of a session with its peers (`SessionCreate`: `id`, `peers`):
/// 201 when new, 200 when it was there; the peers named are added to it.
fn session_get_or_create(st: &mut State, body: &Value) -> (u16, Value) {
    let Some(name) = body["id"].as_str().filter(|n| good_name(n)) else {
        return (
            422,
            invalid(
                json!(["body", "id"]),
                "missing",
                "Field required",
                body.clone(),
                None,
            ),
        );
    };
    let named: Vec<String> = body["peers"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    for p in &named {
        if !st.peers.iter().any(|(n, _)| n == p) {
            st.peers.push((p.clone(), json!({})));
        }
    }
    let status = if st.sessions.contains_key(name) {
        200
    } else {
        201
    };
    let members = st.sessions.entry(name.to_string()).or_default();
    for p in named {
        if !members.contains(&p) {
            members.push(p);
        }
    }
    (
        status,
        json!({ "id": name, "workspace_id": "ws", "is_active": true, "metadata": {}, "configuration": {}, "created_at": now_utc() }),
    )
}

/// The HTML page a fault answers with instead of a body, if it does.
fn fault_page(f: Fault) -> Option<&'static str> {
    matches!(f, Fault::Page(_) | Fault::StoreThenPage(_)).then_some(PAGE)
}

/// The status and body of a fault, and its `Retry-After`.
fn fault_answer(f: Fault) -> (u16, Value, Option<u64>) {
    match f {
        Fault::Status(s) | Fault::StoreThen(s) => (s, detail("stand-in fault"), None),
        Fault::Page(s) | Fault::StoreThenPage(s) => (s, Value::Null, None),
        Fault::Pass => (500, detail("stand-in: a pass as a fault"), None),
        Fault::Limited(secs) => (429, detail("rate limited"), Some(secs)),
        Fault::LateCommit(_) => (500, detail("stand-in: a late commit as a fault"), None),
        Fault::AnswerThenCommit(s, ..) => (s, detail("stand-in: answered before the commit"), None),
    }
}
