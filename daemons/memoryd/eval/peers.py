#!/usr/bin/env python3
"""The reference rows of `scripts/bench recall`: what the systems an owner might pick instead
of memoryd find for LoCoMo's questions, on the same records and the same questions.

Each LoCoMo conversation is its own haystack (a question is asked only of the conversation it
is about, told by where its evidence turns are). Every record of the conversation is one
document; a session is one epoch log, and "±2 turns" never crosses it. Systems:

  bm25s, turns          BM25 (bm25s, its defaults: Lucene's BM25, k1 1.5, b 0.75, English
                        stop words) over the records
  bm25s, ±2 turns       the same over windows: a record's text with the two before and after it
                        in its session; a window found stands for its middle record
  MiniLM, exact cosine  all-MiniLM-L6-v2's sentence vectors (mean of the tokens, unit length),
                        every record against the question
  fluctlightdb          fluctlightdb's LoCoMo lane (its benchmarks/locomo_engine_maxsim.py):
                        the CHORUS field's MaxSim over MiniLM's per-token vectors of the record,
                        fused (RRF, lexical weight 0.7) with its BM25 over the ±2-turn window

MiniLM runs here as a plain numpy forward pass of the BERT encoder over the model directory
memoryd uses (no torch), so the token vectors are the ones memoryd's own sentence vectors are
the mean of.

Writes OUT as JSON lines: per system and question, in the order of questions.jsonl,
{"system", "q", "sample", "hits": [record texts, best first], "ms"}, `ms` the wall-clock of
that one query (the question's tokens and its search; not the indexing); then, per system,
{"system", "index_s"}: the time to index all the conversations. A system whose package is
missing is left out with a line on stderr; the others still run.

Usage: peers.py STATE_DIR MODEL_DIR OUT
       peers.py --vectors MODEL_DIR TEXTS OUT
  STATE_DIR  what eval/locomo.py wrote: sessions/<sample>/epoch-*.jsonl and questions.jsonl
  MODEL_DIR  all-MiniLM-L6-v2 (config.json, tokenizer.json, model.safetensors)
  --vectors  the sentence vector of each line of TEXTS as a JSON line of OUT (the bench checks
             them against memoryd's own)
"""
import json, math, os, struct, sys, time

# Hits per question: the bench scores the first 10.
DEPTH = 10
# A window is the record and this many records either side of it, in its session.
WINDOW = 2
# Tokens one record is cut to: the encoder's window (memoryd embeds longer records in several
# windows; fluctlightdb's lane cuts at this length).
MAX_TOKENS = 256
# Texts encoded together: a batch of 32 at the longest record is some 100 MB of attention
# scores, and sorted by length they waste little on padding.
BATCH = 32
# fluctlightdb's lane: the weight of the lexical ranking in the fusion and the salience every
# record is imprinted with, as its LoCoMo script passes them.
FL_W_BM = 0.7
FL_SALIENCE = 0.62
# The files read are the bench's own, but still bounded: no record file or model file larger.
MAX_LOG_BYTES = 64 * 1024 * 1024
MAX_WEIGHTS_BYTES = 512 * 1024 * 1024

BM25_TURNS = "bm25s, turns"
BM25_WINDOWS = "bm25s, ±2 turns"
MINILM = "MiniLM, exact cosine"
FLUCTLIGHT = "fluctlightdb 0.5.22"


def fail(why):
    sys.exit(f"peers.py: {why}")


def read_bounded(path, limit):
    size = os.path.getsize(path)
    if size > limit:
        fail(f"{path}: {size} bytes, more than {limit}")
    with open(path, "rb") as f:
        return f.read()


# --- all-MiniLM-L6-v2 in numpy ---------------------------------------------------------------

class MiniLM:
    """BERT's encoder as the model's config.json describes it (post-layer-norm, GELU), over the
    weights in model.safetensors."""

    def __init__(self, model_dir):
        import numpy as np
        from tokenizers import Tokenizer

        self.np = np
        cfg = json.loads(read_bounded(os.path.join(model_dir, "config.json"), 1 << 20))
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        # The file pads and cuts to 128; batches are padded here, and records cut at MAX_TOKENS.
        self.tok.no_padding()
        self.tok.no_truncation()
        self.w = self._weights(os.path.join(model_dir, "model.safetensors"))
        self.cls = self.tok.token_to_id("[CLS]")
        self.sep = self.tok.token_to_id("[SEP]")
        if self.cls is None or self.sep is None:
            fail(f"{model_dir}/tokenizer.json: no [CLS] or [SEP]")

    def _weights(self, path):
        np = self.np
        raw = read_bounded(path, MAX_WEIGHTS_BYTES)
        if len(raw) < 8:
            fail(f"{path}: cut short")
        (n,) = struct.unpack("<Q", raw[:8])
        if n > len(raw) - 8:
            fail(f"{path}: header of {n} bytes in a file of {len(raw)}")
        head = json.loads(raw[8 : 8 + n])
        body = memoryview(raw)[8 + n :]
        out = {}
        for name, t in head.items():
            if name == "__metadata__" or t.get("dtype") != "F32":
                continue
            a, b = t["data_offsets"]
            if not 0 <= a <= b <= len(body):
                fail(f"{path}: {name} outside the file")
            out[name] = np.frombuffer(body[a:b], dtype=np.float32).reshape(t["shape"])
        return out

    def _norm(self, x, p):
        np = self.np
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + self.eps) * self.w[p + ".weight"] + self.w[p + ".bias"]

    def _dense(self, x, p):
        # As one 2-D product: numpy hands that to BLAS, a batched one it loops over itself.
        w = self.w[p + ".weight"]
        y = x.reshape(-1, x.shape[-1]) @ w.T + self.w[p + ".bias"]
        return y.reshape(*x.shape[:-1], w.shape[0])

    def _gelu(self, x):
        # BERT's exact GELU, x·Φ(x); erf by Abramowitz and Stegun 7.1.26 (error below 1.5e-7),
        # numpy having none.
        np = self.np
        z = x / math.sqrt(2.0)
        s = np.sign(z)
        a = np.abs(z)
        t = 1.0 / (1.0 + 0.3275911 * a)
        poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
        erf = s * (1.0 - poly * np.exp(-a * a))
        return 0.5 * x * (1.0 + erf)

    def _ids(self, text):
        ids = self.tok.encode(text, add_special_tokens=False).ids[: MAX_TOKENS - 2]
        return [self.cls] + ids + [self.sep]

    def _encode(self, ids, keep):
        """The last layer for a batch: `ids` and `keep` (False for padding) are (texts, tokens)."""
        np = self.np
        w = self.w
        b, n = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
        x = x + w["embeddings.token_type_embeddings.weight"][0]
        x = self._norm(x, "embeddings.LayerNorm")
        d = x.shape[-1]
        hd = d // self.heads
        # Padding is never attended to.
        masked = np.where(keep, 0.0, -1e9).astype(np.float32)[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            q, k, v = (
                self._dense(x, p + f"attention.self.{m}").reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)
                for m in ("query", "key", "value")
            )
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + masked
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x = self._norm(self._dense(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = self._gelu(self._dense(x, p + "intermediate.dense"))
            x = self._norm(self._dense(h, p + "output.dense") + x, p + "output.LayerNorm")
        return x

    def hidden(self, text):
        """The last layer's vector of every token of `text`, [CLS] and [SEP] included."""
        ids = self.np.array([self._ids(text)])
        return self._encode(ids, ids >= 0)[0]

    def hidden_many(self, texts):
        """`hidden` of each text, computed in batches of texts of about the same length."""
        np = self.np
        ids = [self._ids(t) for t in texts]
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        out = [None] * len(texts)
        for at in range(0, len(order), BATCH):
            group = order[at : at + BATCH]
            n = max(len(ids[i]) for i in group)
            batch = np.zeros((len(group), n), dtype=np.int64)
            keep = np.zeros((len(group), n), dtype=bool)
            for r, i in enumerate(group):
                batch[r, : len(ids[i])] = ids[i]
                keep[r, : len(ids[i])] = True
            x = self._encode(batch, keep)
            for r, i in enumerate(group):
                out[i] = x[r, : len(ids[i])]
        return out

    def unit_rows(self, h):
        np = self.np
        return (h / (np.linalg.norm(h, axis=1, keepdims=True) + 1e-9)).astype(np.float32)

    def tokens(self, text):
        """Per-token vectors at unit length: what late interaction matches."""
        return self.unit_rows(self.hidden(text))

    def sentence(self, text):
        """The mean of the tokens at unit length: all-MiniLM-L6-v2's sentence vector."""
        np = self.np
        m = self.hidden(text).mean(0)
        return (m / (np.linalg.norm(m) + 1e-9)).astype(np.float32)


# --- the corpus --------------------------------------------------------------------------------

def conversations(state):
    """{sample: [sessions, each a list of record texts in order]}, from the epoch logs."""
    root = os.path.join(state, "sessions")
    out = {}
    for sample in sorted(os.listdir(root)):
        d = os.path.join(root, sample)
        sessions = []
        for name in sorted(os.listdir(d)):
            if not name.endswith(".jsonl"):
                continue
            texts = []
            for n, line in enumerate(read_bounded(os.path.join(d, name), MAX_LOG_BYTES).decode().splitlines()):
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    fail(f"{d}/{name}:{n + 1}: not JSON: {e}")
                content = rec.get("content") if isinstance(rec, dict) else None
                if isinstance(content, str) and content.strip():
                    texts.append(content)
            sessions.append(texts)
        out[sample] = sessions
    return out


def questions(state, convs):
    """[(text, sample)] in file order; a question's sample is the conversation it names, or
    the one holding most of its evidence turns (None when none does: it is asked of nothing)."""
    where = {}
    for sample, sessions in convs.items():
        for texts in sessions:
            for t in texts:
                where.setdefault(t, set()).add(sample)
    out = []
    for n, line in enumerate(read_bounded(os.path.join(state, "questions.jsonl"), MAX_LOG_BYTES).decode().splitlines()):
        try:
            q = json.loads(line)
            text, evidence = str(q["question"]), [str(e) for e in q["evidence"]]
        except (ValueError, KeyError, TypeError) as e:
            fail(f"questions.jsonl:{n + 1}: {e}")
        votes = {}
        for e in evidence:
            for s in where.get(e, ()):
                votes[s] = votes.get(s, 0) + 1
        sample = max(sorted(votes), key=lambda s: votes[s]) if votes else None
        # eval/locomo.py names it; the evidence is what tells it in a file written before.
        if isinstance(q.get("conversation"), str) and q["conversation"] in convs:
            sample = q["conversation"]
        out.append((text, sample))
    return out


def windows(sessions):
    """Each record's text with its ±WINDOW neighbours in the same session, in record order."""
    out = []
    for texts in sessions:
        for i in range(len(texts)):
            out.append("\n".join(texts[max(0, i - WINDOW) : i + WINDOW + 1]))
    return out


# --- the systems -------------------------------------------------------------------------------

class Bm25:
    def __init__(self, docs):
        import bm25s

        self.bm25s = bm25s
        self.index = bm25s.BM25()
        self.index.index(bm25s.tokenize(docs, show_progress=False), show_progress=False)
        self.n = len(docs)

    def ask(self, text):
        toks = self.bm25s.tokenize([text], return_ids=False, show_progress=False)
        # Words the corpus never has score nothing; a question of only those finds nothing.
        vocab = self.index.vocab_dict
        toks = [[t for t in toks[0] if t in vocab]]
        if not toks[0]:
            return []
        ids, scores = self.index.retrieve(toks, k=min(DEPTH, self.n), show_progress=False)
        return [int(i) for i, s in zip(ids[0], scores[0]) if s > 0]


def run(model, convs, qs, out):
    import numpy as np

    asked = {}  # sample -> [(question number, text)]
    for n, (text, sample) in enumerate(qs):
        asked.setdefault(sample, []).append((n, text))
    lines = []
    index_s = {}

    try:
        import bm25s  # noqa: F401

        have_bm25 = True
    except ImportError as e:
        print(f"peers.py: bm25s rows left out: {e}", file=sys.stderr)
        have_bm25 = False
    try:
        from fluctlightdb.brain import FluctlightBrain
    except ImportError as e:
        print(f"peers.py: fluctlightdb row left out: {e}", file=sys.stderr)
        FluctlightBrain = None

    def emit(system, n, sample, hits, ms):
        lines.append({"system": system, "q": n, "sample": sample, "hits": hits, "ms": ms})

    def add(system, seconds):
        index_s[system] = index_s.get(system, 0.0) + seconds

    systems = [MINILM] + ([BM25_TURNS, BM25_WINDOWS] if have_bm25 else [])
    systems += [FLUCTLIGHT] if FluctlightBrain is not None else []
    for n, text in asked.get(None, []):
        for s in systems:
            emit(s, n, None, [], 0.0)

    for sample, sessions in convs.items():
        docs = [t for texts in sessions for t in texts]
        wins = windows(sessions)
        mine = asked.get(sample, [])
        started = time.perf_counter()

        t0 = time.perf_counter()
        hidden = model.hidden_many(docs)
        encode_s = time.perf_counter() - t0
        means = np.stack([h.mean(0) for h in hidden])
        sent = means / (np.linalg.norm(means, axis=1, keepdims=True) + 1e-9)
        toks = [model.unit_rows(h) for h in hidden]
        add(MINILM, encode_s)

        for n, text in mine:
            t0 = time.perf_counter()
            qv = model.sentence(text)
            order = np.argsort(-(sent @ qv), kind="stable")[:DEPTH]
            emit(MINILM, n, sample, [docs[i] for i in order], (time.perf_counter() - t0) * 1000)

        if have_bm25:
            for system, corpus in [(BM25_TURNS, docs), (BM25_WINDOWS, wins)]:
                t0 = time.perf_counter()
                bm = Bm25(corpus)
                add(system, time.perf_counter() - t0)
                for n, text in mine:
                    t0 = time.perf_counter()
                    hits = bm.ask(text)
                    emit(system, n, sample, [docs[i] for i in hits], (time.perf_counter() - t0) * 1000)

        if FluctlightBrain is not None:
            t0 = time.perf_counter()
            brain = FluctlightBrain.connect_chorus()
            keys = [str(i) for i in range(len(docs))]
            brain.chorus_imprint_maxsim(
                [
                    {"memory_id": k, "content": w, "context": k, "token_vectors": t.tolist(), "salience": FL_SALIENCE}
                    for k, w, t in zip(keys, wins, toks)
                ]
            )
            add(FLUCTLIGHT, time.perf_counter() - t0 + encode_s)
            for n, text in mine:
                t0 = time.perf_counter()
                qt = model.tokens(text).tolist()
                got = brain.chorus_recall_maxsim([text], [qt], limit=DEPTH, w_bm=FL_W_BM)
                ms = (time.perf_counter() - t0) * 1000
                hits = []
                for h in (got[0] if got else [])[:DEPTH]:
                    k = str(h[0]) if isinstance(h, (list, tuple)) and h else ""
                    if k.isdigit() and int(k) < len(docs):
                        hits.append(docs[int(k)])
                emit(FLUCTLIGHT, n, sample, hits, ms)
        print(
            f"peers.py: {sample}: {len(docs)} records, {len(mine)} questions, {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )

    # Written aside and renamed: a run stopped part way leaves the answers kept before it.
    with open(out + ".tmp", "w") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
        for system, s in index_s.items():
            f.write(json.dumps({"system": system, "index_s": s}) + "\n")
    os.replace(out + ".tmp", out)


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "--vectors":
        model = MiniLM(args[1])
        with open(args[2]) as f, open(args[3], "w") as out:
            for line in f.read().splitlines():
                out.write(json.dumps([float(x) for x in model.sentence(line)]) + "\n")
        return
    if len(args) != 3:
        fail("usage: peers.py STATE_DIR MODEL_DIR OUT | peers.py --vectors MODEL_DIR TEXTS OUT")
    state, model_dir, out = args
    model = MiniLM(model_dir)
    convs = conversations(state)
    run(model, convs, questions(state, convs), out)


if __name__ == "__main__":
    main()
