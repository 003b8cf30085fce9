//! Bearer tokens: with `State::tokens` set, every route wants one, and a token scoped to
//! one session may use only that session's paths (and get or create that session). A refusal is Honcho's 401 detail.

use super::routes::setup_session;
use super::server::Request;
use super::state::State;

/// Whether the request's token may use this path: `Err` with Honcho's 401 detail.
pub(super) fn authorized(st: &State, req: &Request) -> Result<(), &'static str> {
    if st.tokens.is_empty() {
        return Ok(());
    }
    let Some(token) = req.auth.as_deref().and_then(|a| a.strip_prefix("Bearer ")) else {
        return Err("No access token provided");
    };
    let Some((_, scope)) = st.tokens.iter().find(|(t, _)| t == token) else {
        return Err("Invalid JWT");
    };
    match scope {
        None => Ok(()),
        Some(session) => match setup_session(&req.method, &req.target, &req.body).or_else(|| {
            let path = req.target.split('?').next().unwrap_or(&req.target);
            let parts: Vec<&str> = path.split('/').collect();
            (parts.get(4) == Some(&"sessions"))
                .then(|| parts.get(5).map(|s| s.to_string()))
                .flatten()
        }) {
            Some(s) if &s == session => Ok(()),
            _ => Err("JWT not permissioned for this resource"),
        },
    }
}
