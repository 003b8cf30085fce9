"""One-off measurement behind docs/memoryd.md, 'What a request may wait for': what the
vector side's once-per-index and once-per-model-change steps cost at ROWS rows (default a
million), with memoryd's vector tables, triggers and pragmas, a plain table standing in for
FTS5's content table (the steps read only its ids), in Python's own SQLite. Another model:
clearing codes and pieces and queueing every row, without the count triggers (as before they
were kept), with them, and with them set aside as `table::adopt` does now; the upgrade's
queueing of every row for its pieces (`SEED_PIECES`) without and with them. Each step runs
on a fresh copy of one filled database (about 2 GB at a million rows, in $TMPDIR/robust).
With `slices` (the default), only what a model change costs now against before, on the
same database in the same run: clearing in one transaction (`adopt` before) against
`table::clear_slice`'s slices (each tick's time, and the whole clear's), and the first
model on an index with rows: every row queued at once (`SEED`) against slices.
    python3 model_change.py [ROWS] [all|slices] [SLICE...]
"""
import sqlite3, time, os, shutil, sys, random
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
MODE = sys.argv[2] if len(sys.argv) > 2 else "slices"
SLICES = [int(a) for a in sys.argv[3:]] or [1000]
D = os.environ.get("TMPDIR", "/tmp") + "/robust"
os.makedirs(D, exist_ok=True)
BASE = f"{D}/base.db"
TRIGGERS = """
CREATE TRIGGER embed_row_added AFTER INSERT ON docs_content BEGIN
    INSERT OR IGNORE INTO embed_queue (id) VALUES (new.id); END;
CREATE TRIGGER embed_row_dropped AFTER DELETE ON docs_content BEGIN
    DELETE FROM embed_queue WHERE id = old.id; DELETE FROM vecs WHERE id = old.id; END;
CREATE TRIGGER pieces_row_dropped AFTER DELETE ON docs_content BEGIN
    DELETE FROM vec_pieces WHERE id = old.id; END;
"""
COUNT_TRIGGERS = """
CREATE TRIGGER count_vec_added AFTER INSERT ON vecs BEGIN UPDATE embed_counts SET vecs = vecs + 1; END;
CREATE TRIGGER count_vec_dropped AFTER DELETE ON vecs BEGIN UPDATE embed_counts SET vecs = vecs - 1; END;
CREATE TRIGGER count_queued AFTER INSERT ON embed_queue BEGIN UPDATE embed_counts SET queued = queued + 1; END;
CREATE TRIGGER count_unqueued AFTER DELETE ON embed_queue BEGIN UPDATE embed_counts SET queued = queued - 1; END;
"""
SEED = """INSERT OR IGNORE INTO embed_queue (id)
    SELECT id FROM docs_content WHERE id NOT IN (SELECT id FROM vecs)"""
SEED_PIECES = """INSERT OR IGNORE INTO embed_queue (id)
    SELECT id FROM docs_content WHERE id NOT IN (SELECT id FROM vec_pieces)"""

def open_db(p):
    c = sqlite3.connect(p, isolation_level=None)
    for k, v in [("secure_delete", "ON"), ("cache_size", "-16384"), ("journal_mode", "WAL"), ("synchronous", "NORMAL")]:
        c.execute(f"PRAGMA {k} = {v}")
    return c

if not os.path.exists(BASE):
    c = open_db(BASE)
    c.executescript("""
    CREATE TABLE docs_content (id INTEGER PRIMARY KEY, c0, c1, c2, c3, c4, c5, c6, c7, c8);
    CREATE TABLE vecs (id INTEGER PRIMARY KEY, class INTEGER NOT NULL, code BLOB NOT NULL);
    CREATE TABLE embed_queue (id INTEGER PRIMARY KEY);
    CREATE TABLE embed_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE vec_pieces (id INTEGER PRIMARY KEY, pieces BLOB NOT NULL);
    CREATE TABLE embed_counts (id INTEGER PRIMARY KEY CHECK (id = 1), vecs INTEGER NOT NULL, queued INTEGER NOT NULL);
    INSERT INTO embed_meta VALUES ('model', 'old');
    """)
    rnd = random.Random(1)
    c.execute("BEGIN")
    text = "a chat-length line of about a hundred bytes, as a turn of conversation holds it, more or less"
    for i in range(1, N + 1):
        c.execute("INSERT INTO docs_content VALUES (?,?,?,?,?,?,?,?,?,?)", (i, text, "s", 0, "t", "k", "user", 1, 0, 1))
        c.execute("INSERT INTO vecs VALUES (?,1,?)", (i, rnd.randbytes(388)))
        c.execute("INSERT INTO vec_pieces VALUES (?,?)", (i, rnd.randbytes(29 * 48)))
    c.execute(f"INSERT INTO embed_counts VALUES (1, {N}, 0)")
    c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.close()

def run(name, counted, body, setup=None):
    p = f"{D}/run.db"
    shutil.copy(BASE, p)
    c = open_db(p)
    c.executescript(TRIGGERS + (COUNT_TRIGGERS if counted else ""))
    if setup: setup(c)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    t = time.perf_counter()
    c.execute("BEGIN")
    body(c)
    c.execute("COMMIT")
    dt = time.perf_counter() - t
    v, q = c.execute("SELECT vecs, queued FROM embed_counts").fetchone()
    cv = c.execute("SELECT count(*) FROM vecs").fetchone()[0]
    cq = c.execute("SELECT count(*) FROM embed_queue").fetchone()[0]
    print(f"| {name} | {dt:.2f} s | kept ({v}, {q}) counted ({cv}, {cq}) |", flush=True)
    c.close()
    os.remove(p)
    for s in ("-wal", "-shm"):
        if os.path.exists(p + s): os.remove(p + s)
    return dt

def adopt(c):
    c.execute("DELETE FROM vecs"); c.execute("DELETE FROM vec_pieces"); c.execute(SEED)

def adopt_cheap(c):
    c.execute("DROP TRIGGER count_vec_dropped"); c.execute("DROP TRIGGER count_queued")
    c.execute("DELETE FROM vecs"); c.execute("DELETE FROM vec_pieces")
    n = c.execute(SEED).rowcount
    c.execute("UPDATE embed_counts SET vecs = 0, queued = queued + ?", (n,))
    for stmt in COUNT_TRIGGERS.strip().split("\n"):
        if "count_vec_dropped" in stmt or "count_queued" in stmt:
            c.execute(stmt)

def no_pieces(c):
    c.execute("DROP TABLE vec_pieces")

def upgrade(c):
    c.execute("CREATE TABLE vec_pieces (id INTEGER PRIMARY KEY, pieces BLOB NOT NULL)")
    c.execute(SEED_PIECES)

# What `table.rs` does now: the count of codes passes over stale ones (at or below the
# clear's bound), `adopt` only sets the bound, and `clear_slice` clears a slice a tick.
BOUND = ("coalesce((SELECT CAST(value AS INTEGER) FROM embed_meta WHERE key = 'stale_up_to'), "
         "-9223372036854775807 - 1)")
COUNT_TRIGGERS_NOW = COUNT_TRIGGERS.replace(
    "CREATE TRIGGER count_vec_dropped AFTER DELETE ON vecs BEGIN",
    f"CREATE TRIGGER count_vec_dropped AFTER DELETE ON vecs WHEN old.id > {BOUND} BEGIN")
TICK = 0.025  # vectors::TICK: a slice a tick, the loop's other work between

def fresh(setup=None, triggers=COUNT_TRIGGERS):
    p = f"{D}/run.db"
    shutil.copy(BASE, p)
    c = open_db(p)
    c.executescript(TRIGGERS + triggers)
    if setup: setup(c)
    c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return c, p

def done(c, p):
    v, q = c.execute("SELECT vecs, queued FROM embed_counts").fetchone()
    cv = c.execute(f"SELECT count(*) FROM vecs WHERE id > {BOUND}").fetchone()[0]
    cq = c.execute("SELECT count(*) FROM embed_queue").fetchone()[0]
    c.close()
    os.remove(p)
    for s in ("-wal", "-shm"):
        if os.path.exists(p + s): os.remove(p + s)
    return f"kept ({v}, {q}) counted ({cv}, {cq})"

def take_index(c):
    """`adopt` now: the bound over every code and pieces, the model, no code counted."""
    c.execute("BEGIN")
    top = c.execute(f"SELECT max(coalesce((SELECT max(id) FROM vecs), {BOUND}), "
                    f"coalesce((SELECT max(id) FROM vec_pieces), {BOUND}), {BOUND})").fetchone()[0]
    c.execute("INSERT OR REPLACE INTO embed_meta VALUES ('stale_up_to', ?)", (str(top),))
    c.execute("INSERT OR REPLACE INTO embed_meta VALUES ('model', 'new')")
    c.execute("UPDATE embed_counts SET vecs = 0")
    c.execute("COMMIT")

def clear_slice(c, n):
    c.execute("BEGIN")
    row = c.execute("SELECT CAST(value AS INTEGER) FROM embed_meta WHERE key = 'stale_up_to'").fetchone()
    if row is None:
        c.execute("COMMIT"); return False
    top = row[0]
    below = c.execute("SELECT id FROM docs_content WHERE id <= ? ORDER BY id DESC LIMIT 1 OFFSET ?",
                      (top, n)).fetchone()
    bottom = below[0] if below else -(2 ** 63)
    c.execute("DELETE FROM vecs WHERE id > ? AND id <= ?", (bottom, top))
    c.execute("DELETE FROM vec_pieces WHERE id > ? AND id <= ?", (bottom, top))
    c.execute("INSERT OR IGNORE INTO embed_queue (id) SELECT id FROM docs_content WHERE id > ? AND id <= ?",
              (bottom, top))
    if below:
        c.execute("UPDATE embed_meta SET value = ? WHERE key = 'stale_up_to'", (str(below[0]),))
    else:
        c.execute("DELETE FROM embed_meta WHERE key = 'stale_up_to'")
    c.execute("COMMIT")
    return below is not None

def sliced(name, n, setup=None, first=take_index):
    c, p = fresh(setup, COUNT_TRIGGERS_NOW)
    t = time.perf_counter(); first(c); more = clear_slice(c, n); d0 = time.perf_counter() - t
    ticks = [d0]
    while more:
        t = time.perf_counter(); more = clear_slice(c, n); ticks.append(time.perf_counter() - t)
    work = sum(ticks)
    s = sorted(ticks)
    print(f"| {name}, slices of {n} | {work:.2f} s of work in {len(ticks)} ticks "
          f"(about {work + len(ticks) * TICK:.0f} s with a tick's wait between) | first tick "
          f"{d0 * 1000:.1f} ms, p50 {s[len(s) // 2] * 1000:.1f} ms, p99 {s[int(len(s) * 0.99)] * 1000:.1f} ms, "
          f"longest {s[-1] * 1000:.1f} ms | {done(c, p)} |", flush=True)

def first_model_setup(c):
    # An index that never had a model: no codes, no pieces, no queue.
    c.executescript("DROP TABLE vecs; DROP TABLE vec_pieces; DELETE FROM embed_meta;"
                    "CREATE TABLE vecs (id INTEGER PRIMARY KEY, class INTEGER NOT NULL, code BLOB NOT NULL);"
                    "CREATE TABLE vec_pieces (id INTEGER PRIMARY KEY, pieces BLOB NOT NULL);"
                    "UPDATE embed_counts SET vecs = 0, queued = 0;")
    c.executescript(TRIGGERS.replace("CREATE TRIGGER", "CREATE TRIGGER IF NOT EXISTS")
                    + COUNT_TRIGGERS_NOW.replace("CREATE TRIGGER", "CREATE TRIGGER IF NOT EXISTS"))

def first_model_mark(c):
    # As `table::create` does: the newest id by itself, then the bound (folded into one
    # INSERT ... SELECT, SQLite scanned the table for it: about 100 ms here).
    top = c.execute("SELECT max(id) FROM docs_content").fetchone()[0]
    if top is not None:
        c.execute("INSERT OR REPLACE INTO embed_meta (key, value) VALUES ('stale_up_to', ?)", (str(top),))

def first_model_seed(c):
    c.execute(SEED)

if MODE == "slices":
    la = os.getloadavg()[0]
    print(f"{N} rows, sqlite {sqlite3.sqlite_version}, load {la:.2f} at the start")
    print("| step | whole | ticks | counts after |\n|---|---|---|---|")
    for _ in range(2):
        t = run("another model, one transaction (adopt before)", True, adopt_cheap)
        for n in SLICES:
            sliced("another model, sliced (clear_slice now)", n)
    print(f"| first model, every row queued at once (SEED before) | | "
          f"{run('first model, SEED', True, first_model_seed, first_model_setup) * 1000:.0f} ms | |")
    for n in SLICES:
        sliced("first model, queued in slices (now)", n, first_model_setup, first_model_mark)
    print(f"load {os.getloadavg()[0]:.2f} at the end")
    sys.exit(0)

print(f"{N} rows, sqlite {sqlite3.sqlite_version}")
print("| step | time | counts after |\n|---|---:|---|")
run("another model (adopt): without count triggers (before)", False, adopt)
run("another model (adopt): with count triggers (now)", True, adopt)
run("another model (adopt): count triggers dropped in the transaction, counts set", True, adopt_cheap)
for _ in range(2):
    run("another model (adopt): with count triggers (now)", True, adopt)
    run("another model (adopt): count triggers dropped in the transaction, counts set", True, adopt_cheap)
run("upgrade's SEED_PIECES: without count triggers", False, upgrade, no_pieces)
run("upgrade's SEED_PIECES: with count triggers (now)", True, upgrade, no_pieces)

# A request's wake at the bound of one look, every row queued (the state right after the
# upgrade): the tick's SQL (the newest 320 queued ids joined to their rows, then the
# counts' row) against count(*) of both tables, as each wake's tick had it before.
c = open_db(BASE)
c.execute("INSERT OR IGNORE INTO embed_queue (id) SELECT id FROM docs_content")
def tick():
    c.execute("SELECT q.id, d.c6, d.c0 FROM embed_queue q LEFT JOIN docs_content d ON d.id = q.id "
              "ORDER BY q.id DESC LIMIT 320").fetchall()
    c.execute("SELECT vecs, queued FROM embed_counts WHERE id = 1").fetchone()
def count():
    c.execute("SELECT count(*) FROM vecs").fetchone()
    c.execute("SELECT count(*) FROM embed_queue").fetchone()
def p50(f, k=30):
    d = []
    for _ in range(k):
        t = time.perf_counter(); f(); d.append(time.perf_counter() - t)
    return sorted(d)[k // 2] * 1000
print(f"| a wake's tick SQL, every row queued, p50 of 30 | {p50(tick):.3f} ms | count(*) of both: {p50(count):.1f} ms |")
