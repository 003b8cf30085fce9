"""One-off measurement behind docs/memoryd.md, 'What a request may wait for': what the
vector side's once-per-index and once-per-model-change steps cost at ROWS rows (default a
million), with memoryd's vector tables, triggers and pragmas, a plain table standing in for
FTS5's content table (the steps read only its ids), in Python's own SQLite. Another model:
clearing codes and pieces and queueing every row, without the count triggers (as before they
were kept), with them, and with them set aside as `table::adopt` does now; the upgrade's
queueing of every row for its pieces (`SEED_PIECES`) without and with them. Each step runs
on a fresh copy of one filled database (about 2 GB at a million rows, in $TMPDIR/robust).
    python3 model_change.py [ROWS]
"""
import sqlite3, time, os, shutil, sys, random
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
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
