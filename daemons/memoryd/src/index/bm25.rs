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
//! This module owns the one piece of `unsafe` in the index: FTS5 registers auxiliary
//! functions through its C API only (`fts5_api`, reached by `SELECT fts5(?)` with a
//! pointer bound), and calls them with its C extension API. Every pointer used is one
//! FTS5 handed over for the duration of the call.

#![allow(unsafe_code)]

use rusqlite::ffi;
use std::ffi::{c_int, c_void, CStr};
use std::ptr;

/// The function's name in SQL: `bm25_by_phrase(docs)` where `bm25(docs)` would be.
pub(crate) const NAME: &CStr = c"bm25_by_phrase";

/// bm25's constants, as FTS5 has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Registers `bm25_by_phrase` on `conn`, as FTS5 registers its own `bm25`.
pub(crate) fn register(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    // SAFETY: `handle` is the open connection's own; the statement is finalised before
    // returning, and the `fts5_api` pointer it yields lives as long as the connection.
    unsafe {
        let db = conn.handle();
        let api = fts5_api_of(db)?;
        let create = (*api)
            .xCreateFunction
            .ok_or_else(|| missing("xCreateFunction"))?;
        let rc = create(
            api,
            NAME.as_ptr(),
            ptr::null_mut(),
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
    _args: *mut *mut ffi::sqlite3_value,
) {
    if n > 0 {
        // `bm25` reads arguments as column weights; the index weighs none.
        ffi::sqlite3_result_error(ctx, c"bm25_by_phrase takes no arguments".as_ptr(), -1);
        return;
    }
    // A panic must not cross into C; none is expected, and one is an error of the call.
    let scored = std::panic::catch_unwind(|| score(&*api, fts));
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
unsafe fn score(api: &ffi::Fts5ExtensionApi, fts: *mut ffi::Fts5Context) -> Result<f64, c_int> {
    let shared = shared(api, fts)?;
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
    for phrase in 0..phrases {
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
