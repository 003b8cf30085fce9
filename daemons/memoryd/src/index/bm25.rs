//! `bm25_by_phrase`, the ranking function every search of the index scores with: FTS5's
//! own `bm25`, to the same constants and arithmetic and so to the same score (to the bit
//! where the C compiler does not fuse a multiply and an add, as on x86-64 by default;
//! within a rounding where it does), counting each phrase's instances in a row on their
//! own. Every search of the index uses it, so its scores are only ever compared with
//! each other.
//!
//! FTS5's `bm25` asks for a row's instances as one array in text order, which FTS5 builds
//! by merging every phrase's positions, comparing each instance with every phrase's next.
//! For a pasted document holding each of a question's words a hundred times, that merge
//! was the largest single cost of a recall among such documents (docs/memoryd.md, 'What
//! a recall costs'). bm25 needs only how many instances each phrase has, which each
//! phrase's own position list gives without the merge.
//!
//! A recall runs several statements scoring the same phrases (the search, the rows'
//! own scores, the neighbours' field and its scores), and each counted every phrase's
//! rows again at its first row, a walk of the phrase's whole list of rows: for the words
//! of a long session, most of what scoring a few candidates cost. Within a recall
//! (`Recall`) each phrase's rows are counted once a table; nothing writes the index
//! between a recall's statements, so the count is the one each would make. A statement
//! names its table and passes its expression (`bm25_by_phrase(docs, 'docs', ?1)`), so
//! its phrases can be told apart.
//!
//! This module owns the one piece of `unsafe` in the index: FTS5 registers auxiliary
//! functions through its C API only (`fts5_api`, reached by `SELECT fts5(?)` with a
//! pointer bound), and calls them with its C extension API. Every pointer used is one
//! FTS5 handed over for the duration of the call.

#![allow(unsafe_code)]

use rusqlite::ffi;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The function's name in SQL: `bm25_by_phrase(docs)` where `bm25(docs)` would be.
pub(crate) const NAME: &CStr = c"bm25_by_phrase";

/// bm25's constants, as FTS5 has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A phrase of one table of one connection: the connection's number (`register`), the
/// table's name as the statement gives it, and the phrase as the expression writes it,
/// quotes and prefix star included.
type PhraseKey = (usize, String, String);

thread_local! {
    /// The rows of each phrase counted in the recall under way on this thread, or `None`
    /// outside one. SQLite calls the function on the thread stepping the statement, and a
    /// recall's statements are stepped by the thread that holds its connection.
    static COUNTED: RefCell<Option<HashMap<PhraseKey, i64>>> = const { RefCell::new(None) };
}

/// Each connection's number, its function's user data, so two connections' tables of
/// one name never share a count.
static CONNECTIONS: AtomicUsize = AtomicUsize::new(1);

/// A recall under way on this thread: from `begin` until dropped, each phrase's rows are
/// counted once. No statement that writes may run meanwhile (a recall only reads).
/// One begun inside another leaves the counts to the outer one.
pub(crate) struct Recall {
    outermost: bool,
    /// Not `Send`: the counts are this thread's, and only this thread may end them.
    _here: std::marker::PhantomData<*const ()>,
}

impl Recall {
    pub(crate) fn begin() -> Recall {
        let outermost = COUNTED.with(|c| {
            let mut c = c.borrow_mut();
            let outermost = c.is_none();
            if outermost {
                *c = Some(HashMap::new());
            }
            outermost
        });
        Recall {
            outermost,
            _here: std::marker::PhantomData,
        }
    }
}

impl Drop for Recall {
    fn drop(&mut self) {
        if self.outermost {
            COUNTED.with(|c| *c.borrow_mut() = None);
        }
    }
}

/// The phrases of an FTS5 expression in the order FTS5 numbers them (left to right):
/// each `"…"` (a doubled quote inside stands for one) with its `*` when it is a prefix.
/// `None` for anything but quoted phrases joined by `AND`, `OR`, `NOT` and parentheses,
/// the only expressions the index writes: such a statement counts without the recall's
/// counts.
fn phrases_of(expr: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = expr;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '(' || c == ')');
        if rest.is_empty() {
            return Some(out);
        }
        if let Some(after) = rest.strip_prefix('"') {
            let mut end = None;
            let mut i = 0;
            let bytes = after.as_bytes();
            while i < bytes.len() {
                if bytes[i] == b'"' {
                    if bytes.get(i + 1) == Some(&b'"') {
                        i += 2;
                        continue;
                    }
                    end = Some(i);
                    break;
                }
                i += 1;
            }
            let end = end?;
            let star = after[end + 1..].starts_with('*');
            let len = 1 + end + 1 + usize::from(star);
            out.push(rest[..len].to_string());
            rest = &rest[len..];
            continue;
        }
        let word = rest
            .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
            .next()
            .unwrap_or("");
        if !matches!(word, "AND" | "OR" | "NOT") {
            return None;
        }
        rest = &rest[word.len()..];
    }
}

/// Registers `bm25_by_phrase` on `conn`, as FTS5 registers its own `bm25`.
pub(crate) fn register(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    let number = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: `handle` is the open connection's own; the statement is finalised before
    // returning, and the `fts5_api` pointer it yields lives as long as the connection.
    unsafe {
        let db = conn.handle();
        let api = fts5_api_of(db)?;
        let create = (*api)
            .xCreateFunction
            .ok_or_else(|| missing("xCreateFunction"))?;
        // The number travels as the pointer's value: nothing is pointed at or freed.
        let rc = create(
            api,
            NAME.as_ptr(),
            number as *mut c_void,
            Some(bm25_by_phrase),
            None,
        );
        check(rc)
    }
}

fn missing(what: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_ERROR),
        Some(format!("the sqlite library's fts5 has no {what}")),
    )
}

fn check(rc: c_int) -> rusqlite::Result<()> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None))
    }
}

/// The connection's `fts5_api`, as the FTS5 documentation gets it: `SELECT fts5(?1)` with
/// a pointer to the pointer bound as type `fts5_api_ptr`.
///
/// # Safety
/// `db` must be an open connection.
unsafe fn fts5_api_of(db: *mut ffi::sqlite3) -> rusqlite::Result<*mut ffi::fts5_api> {
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    check(ffi::sqlite3_prepare_v2(
        db,
        c"SELECT fts5(?1)".as_ptr(),
        -1,
        &mut stmt,
        ptr::null_mut(),
    ))?;
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut rc = ffi::sqlite3_bind_pointer(
        stmt,
        1,
        ptr::addr_of_mut!(api).cast::<c_void>(),
        c"fts5_api_ptr".as_ptr(),
        None,
    );
    if rc == ffi::SQLITE_OK {
        rc = ffi::sqlite3_step(stmt);
        if rc == ffi::SQLITE_ROW || rc == ffi::SQLITE_DONE {
            rc = ffi::SQLITE_OK;
        }
    }
    ffi::sqlite3_finalize(stmt);
    check(rc)?;
    // Version 2 is the first whose xCreateFunction takes this signature.
    if api.is_null() || (*api).iVersion < 2 {
        return Err(missing("api of version 2"));
    }
    Ok(api)
}

/// What a statement's rows share: the table's average row length and each phrase's
/// IDF, computed once at its first row, as `bm25` does.
struct Shared {
    avgdl: f64,
    idf: Vec<f64>,
}

unsafe extern "C" fn drop_shared(p: *mut c_void) {
    drop(Box::from_raw(p.cast::<Shared>()));
}

unsafe extern "C" fn count_row(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    user: *mut c_void,
) -> c_int {
    *user.cast::<i64>() += 1;
    ffi::SQLITE_OK
}

/// The FTS5 entry point: a row's score, or SQLite's error code.
unsafe extern "C" fn bm25_by_phrase(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) {
    if n != 0 && n != 2 {
        // `bm25` reads arguments as column weights; the index weighs none.
        ffi::sqlite3_result_error(
            ctx,
            c"bm25_by_phrase takes no arguments, or the table's name and the expression".as_ptr(),
            -1,
        );
        return;
    }
    // The table and the expression, when given: what tells the statement's phrases apart.
    let text = |i: usize| -> Option<&str> {
        let text = ffi::sqlite3_value_text(*args.add(i));
        if text.is_null() {
            None
        } else {
            CStr::from_ptr(text.cast()).to_str().ok()
        }
    };
    let named = if n == 2 { text(0).zip(text(1)) } else { None };
    // A panic must not cross into C; none is expected, and one is an error of the call.
    let scored = std::panic::catch_unwind(|| score(&*api, fts, named));
    match scored {
        Ok(Ok(score)) => ffi::sqlite3_result_double(ctx, score),
        Ok(Err(rc)) => ffi::sqlite3_result_error_code(ctx, rc),
        Err(_) => ffi::sqlite3_result_error_code(ctx, ffi::SQLITE_INTERNAL),
    }
}

/// Calls an extension API function that FTS5 may in principle leave out.
macro_rules! call {
    ($api:expr, $f:ident ( $($arg:expr),* )) => {
        match $api.$f {
            Some(f) => f($($arg),*),
            None => return Err(ffi::SQLITE_MISUSE),
        }
    };
}

/// `bm25` of the current row.
///
/// # Safety
/// `api` and `fts` are the ones FTS5 passed to this call.
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    named: Option<(&str, &str)>,
) -> Result<f64, c_int> {
    let shared = shared(api, fts, named)?;
    let mut n_tokens: c_int = 0;
    let rc = call!(api, xColumnSize(fts, -1, &mut n_tokens));
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    let d = f64::from(n_tokens);
    let mut score = 0.0;
    for (phrase, idf) in shared.idf.iter().enumerate() {
        let phrase = c_int::try_from(phrase).map_err(|_| ffi::SQLITE_RANGE)?;
        let freq = f64::from(frequency(api, fts, phrase)?);
        // The order of `bm25`'s own arithmetic, so every row scores to the bit.
        score += idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * d / shared.avgdl)));
    }
    Ok(-score)
}

/// Instances of `phrase` in the current row.
unsafe fn frequency(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    phrase: c_int,
) -> Result<u32, c_int> {
    let mut iter = ffi::Fts5PhraseIter {
        a: ptr::null(),
        b: ptr::null(),
    };
    let (mut col, mut off): (c_int, c_int) = (0, 0);
    let rc = call!(
        api,
        xPhraseFirst(fts, phrase, &mut iter, &mut col, &mut off)
    );
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    let mut n: u32 = 0;
    // The iterator sets the column to -1 past the last instance.
    while col >= 0 {
        n = n.saturating_add(1);
        call!(api, xPhraseNext(fts, &mut iter, &mut col, &mut off));
    }
    Ok(n)
}

/// The statement's `Shared`, computed at its first row and kept by FTS5 until the
/// statement is done with the query.
unsafe fn shared<'a>(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    named: Option<(&str, &str)>,
) -> Result<&'a Shared, c_int> {
    let kept = call!(api, xGetAuxdata(fts, 0)).cast::<Shared>();
    if !kept.is_null() {
        return Ok(&*kept);
    }
    let phrases = call!(api, xPhraseCount(fts));
    let (mut rows, mut tokens): (i64, i64) = (0, 0);
    let rc = call!(api, xRowCount(fts, &mut rows));
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    let rc = call!(api, xColumnTotalSize(fts, -1, &mut tokens));
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    #[allow(clippy::cast_precision_loss)]
    let (rows_f, tokens_f) = (rows as f64, tokens as f64);
    let mut idf = Vec::with_capacity(usize::try_from(phrases).unwrap_or(0));
    // The statement's phrases by name, when the recall under way may count them once:
    // as many as FTS5 numbers, or none.
    let connection = call!(api, xUserData(fts)) as usize;
    let names = named.and_then(|(table, expr)| {
        let phrases_named =
            phrases_of(expr).filter(|p| p.len() == usize::try_from(phrases).unwrap_or(usize::MAX));
        Some((table, phrases_named?))
    });
    for phrase in 0..phrases {
        let key = names.as_ref().and_then(|(table, names)| {
            let name = names.get(usize::try_from(phrase).ok()?)?;
            Some((connection, (*table).to_string(), name.clone()))
        });
        let counted = key.as_ref().and_then(|k| {
            COUNTED
                .try_with(|c| c.borrow().as_ref().and_then(|m| m.get(k).copied()))
                .ok()
                .flatten()
        });
        let hits = match counted {
            Some(hits) => hits,
            None => {
                let mut hits: i64 = 0;
                let rc = call!(
                    api,
                    xQueryPhrase(
                        fts,
                        phrase,
                        ptr::addr_of_mut!(hits).cast::<c_void>(),
                        Some(count_row)
                    )
                );
                if rc != ffi::SQLITE_OK {
                    return Err(rc);
                }
                if let Some(k) = key {
                    let _ = COUNTED.try_with(|c| {
                        if let Some(m) = c.borrow_mut().as_mut() {
                            m.insert(k, hits);
                        }
                    });
                }
                hits
            }
        };
        #[allow(clippy::cast_precision_loss)]
        let hits = hits as f64;
        // As `bm25`: a phrase in more than half the rows would weigh below zero.
        let value = ((rows_f - hits + 0.5) / (hits + 0.5)).ln();
        idf.push(if value <= 0.0 { 1e-6 } else { value });
    }
    let shared = Box::into_raw(Box::new(Shared {
        avgdl: tokens_f / rows_f,
        idf,
    }));
    let rc = call!(
        api,
        xSetAuxdata(fts, shared.cast::<c_void>(), Some(drop_shared))
    );
    if rc != ffi::SQLITE_OK {
        // FTS5 has called the destructor on failure.
        return Err(rc);
    }
    Ok(&*shared)
}

#[cfg(test)]
mod tests;
