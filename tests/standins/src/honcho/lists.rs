//! Paged lists: a session's messages (filtered by metadata) and conclusions (newest
//! first, filtered by session, observer and observed), with FastAPI's paging rules.

use super::fastapi::invalid;
use super::state::{Conclusion, State};
use super::store::to_json;
use serde_json::{json, Value};

/// `page`, `size` and `reverse` of a list query, or the 422 FastAPI answers for bad ones.
fn paging(query: &str) -> Result<(usize, usize, bool), (u16, Value)> {
    let (mut page, mut size, mut reverse) = (1_i64, 50_i64, false);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("reverse", v)) => reverse = v == "true",
            Some(("page", v)) => page = v.parse().unwrap_or(0),
            Some(("size", v)) => size = v.parse().unwrap_or(0),
            _ => {}
        }
    }
    if page < 1 {
        return Err((
            422,
            invalid(
                json!(["query", "page"]),
                "greater_than_equal",
                "Input should be greater than or equal to 1",
                json!(page.to_string()),
                Some(json!({ "ge": 1 })),
            ),
        ));
    }
    if !(1..=100).contains(&size) {
        return Err((
            422,
            invalid(
                json!(["query", "size"]),
                if size < 1 {
                    "greater_than_equal"
                } else {
                    "less_than_equal"
                },
                "Input should be between 1 and 100",
                json!(size.to_string()),
                None,
            ),
        ));
    }
    Ok((page as usize, size as usize, reverse))
}

fn page_of(items: Vec<Value>, page: usize, size: usize) -> Value {
    let total = items.len();
    let chosen: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * size)
        .take(size)
        .collect();
    json!({
        "items": chosen,
        "total": total,
        "page": page,
        "size": size,
        "pages": total.div_ceil(size),
    })
}

pub(super) fn list(st: &mut State, session: &str, query: &str, body: &Value) -> (u16, Value) {
    let (page, size, reverse) = match paging(query) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let wanted = body["filters"]["metadata"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut items: Vec<Value> = st
        .messages
        .iter()
        .filter(|m| m.session == session)
        .filter(|m| wanted.iter().all(|(k, v)| m.metadata.get(k) == Some(v)))
        .map(to_json)
        .collect();
    if reverse {
        items.reverse();
    }
    (200, page_of(items, page, size))
}

pub(super) fn conclusions(st: &State, query: &str, body: &Value) -> (u16, Value) {
    let (page, size, reverse) = match paging(query) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let f = &body["filters"];
    let want = |key: &str, have: Option<&str>| f[key].as_str().is_none_or(|w| have == Some(w));
    let mut items: Vec<&Conclusion> = st
        .conclusions
        .iter()
        .filter(|c| !c.deleted)
        .filter(|c| want("session_id", c.session.as_deref()))
        .filter(|c| want("observer_id", Some(&c.observer)))
        .filter(|c| want("observed_id", Some(&c.observed)))
        .collect();
    // Newest first unless `reverse`; the stand-in's times are all in one form.
    items.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    if reverse {
        items.reverse();
    }
    let items = items
        .into_iter()
        .map(|c| {
            json!({
                "id": c.id,
                "content": c.content,
                "observer_id": c.observer,
                "observed_id": c.observed,
                "session_id": c.session,
                "level": c.level,
                "created_at": c.created_at,
            })
        })
        .collect();
    (200, page_of(items, page, size))
}
