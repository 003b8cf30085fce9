//! Reading Honcho's answers: each bounded, a create's checked against what was sent, a
//! failure kept as it came (docs/honcho.md, "What Honcho's answers do").

use super::*;
/// A string field of a json object.
pub(super) fn field(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_string)
}

/// An answer read within [`MAX_RESPONSE_BYTES`] as json.
pub(super) fn read_json(resp: ureq::Response, url: &str) -> Result<Value, CallError> {
    let mut text = String::new();
    resp.into_reader()
        .take(MAX_RESPONSE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| CallError::Transport(format!("{url}: reading the answer: {e}")))?;
    if text.len() as u64 > MAX_RESPONSE_BYTES {
        return Err(CallError::Transport(format!(
            "{url}: answer longer than {MAX_RESPONSE_BYTES} bytes"
        )));
    }
    serde_json::from_str(&text)
        .map_err(|e| CallError::Transport(format!("{url}: answer is not json: {e}")))
}

/// One message of a create's answer: only what ties it to what was sent is read; its
/// content and the rest are skipped.
#[derive(serde::Deserialize)]
struct CreatedMessage {
    id: String,
    metadata: CreatedMetadata,
}

#[derive(serde::Deserialize)]
struct CreatedMetadata {
    /// `message::ID_KEY` (an attribute cannot name the constant).
    #[serde(rename = "boxmaker_id")]
    id: String,
}

/// Whether `resp` to the create of `batch` is Honcho's success: [`CREATED`], and a json
/// list of the messages created, one per message sent, each with its id and the
/// `boxmaker_id` sent, in order; the body read within `limit` bytes.
pub(super) fn created(
    resp: ureq::Response,
    url: &str,
    batch: &[Outgoing],
    limit: u64,
) -> Result<(), CallError> {
    let status = resp.status();
    // Looked at, never shown: a server that is not Honcho can put anything there.
    let html = resp.content_type().eq_ignore_ascii_case("text/html");
    let mut bytes = Vec::new();
    let read_limit = if status == CREATED {
        limit
    } else {
        MAX_ERROR_BODY_BYTES
    };
    resp.into_reader()
        .take(read_limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CallError::Transport(format!("{url}: reading the answer: {e}")))?;
    let unconfirmed = |why: String| CallError::Unconfirmed { status, why };
    // In words that never quote the answer (docs/honcho.md, 'What Honcho's answers do').
    let described = || {
        let len = bytes.len() as u64;
        if len > read_limit {
            format!("a body of more than {read_limit} bytes")
        } else if html {
            format!("an HTML page of {len} bytes")
        } else {
            body_kind(&String::from_utf8_lossy(&bytes))
        }
    };
    if status != CREATED || bytes.len() as u64 > read_limit {
        return Err(unconfirmed(described()));
    }
    let Ok(list) = serde_json::from_slice::<Vec<CreatedMessage>>(&bytes) else {
        return Err(unconfirmed(described()));
    };
    if list.len() != batch.len() {
        return Err(unconfirmed(format!(
            "a list of {} messages for {} sent",
            list.len(),
            batch.len()
        )));
    }
    let matching = list
        .iter()
        .zip(batch)
        .all(|(got, sent)| !got.id.is_empty() && got.metadata.id == sent.id);
    if !matching {
        return Err(unconfirmed(
            "a list of messages that are not the ones sent".into(),
        ));
    }
    Ok(())
}

/// The `items` of a page answer, and its `pages`, read within [`MAX_RESPONSE_BYTES`].
pub(super) fn read_page(resp: ureq::Response, url: &str) -> Result<(Vec<Value>, u64), CallError> {
    let mut page = read_json(resp, url)?;
    let pages = page.get("pages").and_then(Value::as_u64).unwrap_or(1);
    match page.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => Ok((items, pages)),
        _ => Err(CallError::Transport(format!(
            "{url}: answer has no `items` list"
        ))),
    }
}

/// Keeps a non-2xx answer's status, `Retry-After` and the start of its body.
pub(super) fn judge(status: u16, resp: ureq::Response) -> CallError {
    let retry_after = resp.header("Retry-After").and_then(retry_after);
    let mut bytes = Vec::new();
    // A body that cannot be read leaves the status alone to tell what happened.
    let _ = resp
        .into_reader()
        .take(MAX_ERROR_BODY_BYTES)
        .read_to_end(&mut bytes);
    CallError::Status {
        status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        retry_after,
    }
}
