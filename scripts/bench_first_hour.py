#!/usr/bin/env python3
"""The first hour of a new user, timed: `scripts/run-local` with lines piped in one at a
time, as a person would type them, for each model given. Prints per turn the seconds to
the reply's `.`, the tokens the model wrote (loopd's `turn done` log lines) and whether the
reply holds the fact it should; and the time to the prompt, cold (the first start in this
run) and warm (a second start right after).

    bench_first_hour.py BIN_DIR NAME=MODEL.gguf|NAME=default [...]

`default` runs run-local as a newcomer does, with no --model: the default chat model as
run-local serves it (tools off unless BOXMAKER_TOOLS=1).
"""
import os
import queue
import re
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A guard against a hang, not a speed limit: SmolLM2 rambling to the server's
# --n-predict on a loaded 2-core machine has taken minutes per turn.
TURN_TIMEOUT_S = 1800
START_TIMEOUT_S = 900

DENTIST_Q = "When is my dentist appointment, and with whom?"


def dentist(reply: str) -> bool:
    r = reply.lower()
    return "thursday" in r and "3" in r and "alvarez" in r


def meetings(reply: str) -> bool:
    r = reply.lower().replace(",", "")
    return bool(
        re.search(r"\b135\b", r)
        or re.search(r"2\s*(hours?|h)\s*(and\s*)?15", r)
        or re.search(r"\b2\.25\s*hours?", r)
    )


# (line typed, what its reply must hold, or None when any answer that is not an error will do)
SCRIPT = [
    ("/help", lambda r: "/quit" in r),
    ("my dentist appointment is on Thursday at 3pm with Dr. Alvarez", None),
    (DENTIST_Q, dentist),
    ("3 meetings of 45 minutes — how long in total?", meetings),
    ("/compact", None),
    (DENTIST_Q, dentist),
    ("/quit", lambda r: "bye" in r),
]


class Run:
    """One `scripts/run-local`, lines in on stdin, replies read off stdout."""

    def __init__(self, bin_dir: str, model: str):
        env = dict(os.environ, BOXMAKER_BIN_DIR=bin_dir)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [os.path.join(REPO, "scripts", "run-local")]
            + ([] if model == "default" else ["--model", model]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            bufsize=1,
        )
        self.out: "queue.Queue[str | None]" = queue.Queue()
        self.err: "queue.Queue[str | None]" = queue.Queue()
        for stream, q in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=pump, args=(stream, q), daemon=True).start()
        self.work = None
        # Where loopd's log stood as each turn began.
        self.offsets: "list[int]" = []

    def wait_ready(self) -> float:
        deadline = time.monotonic() + START_TIMEOUT_S
        said = []
        while True:
            line = self.err.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                raise SystemExit("run-local exited before its prompt:\n" + "".join(said))
            said.append(line)
            m = re.search(r"ready in .* logs in (\S+)", line)
            if m:
                self.work = m.group(1)
                return time.monotonic() - self.started

    def turn(self, line: str) -> "tuple[float, str]":
        self.offsets.append(os.path.getsize(os.path.join(self.work, "loopd.log")))
        t0 = time.monotonic()
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = []
        deadline = t0 + TURN_TIMEOUT_S
        while True:
            got = self.out.get(timeout=max(0.1, deadline - time.monotonic()))
            if got is None or got.rstrip("\n") == ".":
                break
            reply.append(got.rstrip("\n"))
        return time.monotonic() - t0, "\n".join(reply)

    def tokens(self) -> "list[str]":
        """Tokens predicted per turn, from loopd's `turn done` lines between one turn's
        start and the next's (read after the run: a line may follow the reply's `.`)."""
        with open(os.path.join(self.work, "loopd.log"), "rb") as f:
            log = f.read()
        ends = self.offsets[1:] + [len(log)]
        out = []
        for a, b in zip(self.offsets, ends):
            n = [int(x) for x in re.findall(rb"predicted (\d+) tokens", log[a:b])]
            out.append(str(sum(n)) if n else "–")
        return out

    def finish(self) -> float:
        """Seconds from here until run-local has exited (it stops everything it started)."""
        t0 = time.monotonic()
        self.proc.stdin.close()
        self.proc.wait(timeout=120)
        return time.monotonic() - t0


def pump(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def still_running(work: str) -> "list[str]":
    """Processes whose command line names this run's directory: anything left behind."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if work in l and "ps -eo" not in l]


def one_model(bin_dir: str, name: str, model: str):
    print(f"\n### first hour: {name}\n")
    cold = Run(bin_dir, model)
    cold_s = cold.wait_ready()
    print("| turn | seconds | tokens | holds the fact | reply (start) |")
    print("|---|---|---|---|---|")
    held, checked, rows = 0, 0, []
    for line, check in SCRIPT:
        secs, reply = cold.turn(line)
        ok = not reply.startswith("error:") if check is None else check(reply)
        if check is not None and not line.startswith("/"):
            checked += 1
            held += ok
        short = reply.replace("\n", " ⏎ ").replace("|", "\\|")[:90]
        fact = ("yes" if ok else "NO") if check is not None else ("ok" if ok else "error")
        rows.append((line, secs, fact, short))
        print(f"    {line[:40]}: {secs:.1f} s", file=sys.stderr, flush=True)
    quit_s = cold.finish()
    for (line, secs, fact, short), tokens in zip(rows, cold.tokens()):
        print(f"| `{line}` | {secs:.1f} | {tokens} | {fact} | {short} |")
    left = still_running(cold.work)
    warm = Run(bin_dir, model)
    warm_s = warm.wait_ready()
    warm.turn("/quit")
    warm.finish()
    print()
    print(f"time to prompt: cold {cold_s:.1f} s, warm {warm_s:.1f} s; "
          f"/quit to exit {quit_s:.1f} s; facts held {held}/{checked}; "
          f"left running after /quit: {len(left)}" + "".join(f"\n    {l}" for l in left))


def main():
    bin_dir = sys.argv[1]
    for arg in sys.argv[2:]:
        name, model = arg.split("=", 1)
        one_model(bin_dir, name, model)


if __name__ == "__main__":
    main()
