#!/usr/bin/env python3
"""Turns LoCoMo-Plus into session logs for `scripts/bench recall --set locomo-plus`.

LoCoMo-Plus (github.com/xjtuleeyf/Locomo-Plus: 401 "cue" dialogues, each a line or two in
which someone says something about themselves, and a "trigger" said weeks or months later that
only makes sense with the cue in mind; the relation between them is causal, state, goal or
value) places each cue into one of LoCoMo's ten conversations. Its data is not committed here:
it is read from a clone given by BOXMAKER_LOCOMO_PLUS (a checkout or a bare git directory),
pinned by commit and by the sha256 of the two files used.

The placement is the one the set's own data/unified_input.py makes (through its
build_conv.build_context), written out again here:

- cue number i goes into LoCoMo conversation i mod 10, in the order of locomo_plus.json;
- its speakers A and B become the conversation's first and second speaker;
- the trigger is said a week after the conversation's last session; the cue is said the
  time_gap before it (build_conv.parse_time_gap: "a"/"an" or a number word or digits before
  week(s)/month(s)/year(s), 7/30/365 days each; a gap it cannot read, like "several months
  later", is no gap at all);
- the cue is a session of its own, placed among the conversation's sessions by its time
  (a stable sort: after any session of the same time).

Unlike the set's prompt, where each cue gets a copy of its conversation, all of a
conversation's cues (about 40) are placed in one history, as one owner's memory would hold
them, and the trigger is not logged: it is the question asked of that history. A hit answers
when it is one of the cue's turns (logged "Name: text", as eval/locomo.py logs LoCoMo's turns).

Writes under OUT, as eval/locomo.py does:
  sessions/<sample>/epoch-NNNNNN.head.json, .jsonl   the sessions and cues in time order
  questions.jsonl   {"question": the trigger's text, "category": the relation type,
                     "evidence": [the cue's turn texts], "conversation": sample}

Usage: locomo_plus.py OUT   (BOXMAKER_LOCOMO_PLUS names the clone)
"""
import hashlib, json, os, re, subprocess, sys
from datetime import datetime, timedelta, timezone

COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
SHA256 = {
    "data/locomo_plus.json": "af2fc6e5e0e88735e28d8dd1ef474b718861a73beb21779809e3b9e1a4fe3d23",
    "data/locomo10.json": "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4",
}
HOWTO = ("git clone https://github.com/xjtuleeyf/Locomo-Plus && git -C Locomo-Plus checkout "
         f"{COMMIT[:7]}, then BOXMAKER_LOCOMO_PLUS=$PWD/Locomo-Plus")

NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a": 1, "an": 1}
UNIT_DAYS = {"week": 7, "month": 30, "year": 365}


def read(clone, path):
    """A file of the pinned commit: from the clone's git when it has one, else its work tree."""
    git = subprocess.run(["git", f"--git-dir={git_dir(clone)}", "show", f"{COMMIT}:{path}"],
                         capture_output=True) if git_dir(clone) else None
    if git is not None and git.returncode == 0:
        data = git.stdout
    elif os.path.exists(os.path.join(clone, path)):
        data = open(os.path.join(clone, path), "rb").read()
    else:
        sys.exit(f"{clone}: no {path} at commit {COMMIT[:7]} ({HOWTO})")
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256[path]:
        sys.exit(f"{clone}: {path} has sha256 {digest}, expected {SHA256[path]} (commit {COMMIT[:7]})")
    return json.loads(data)


def git_dir(clone):
    for d in (os.path.join(clone, ".git"), clone):
        if os.path.exists(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects")):
            return d
    return None


def gap_days(gap):
    m = re.search(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a|an)\b\s*"
                  r"(week|weeks|month|months|year|years)\b", gap.lower().strip())
    if not m:
        return 0
    num, unit = m.groups()
    count = int(num) if num.isdigit() else NUMBERS.get(num, 0)
    return count * UNIT_DAYS[unit.rstrip("s")]


def turns(dialogue, a, b):
    """The A:/B: lines of a dialogue, as (speaker name, text)."""
    out = []
    for line in dialogue.split("\n"):
        line = line.strip()
        if line.startswith("A:"):
            out.append((a, line[2:].strip()))
        elif line.startswith("B:"):
            out.append((b, line[2:].strip()))
    return out


def when(s):
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def stamp(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def main():
    out = sys.argv[1]
    clone = os.environ.get("BOXMAKER_LOCOMO_PLUS")
    if not clone:
        sys.exit(f"BOXMAKER_LOCOMO_PLUS is not set ({HOWTO})")
    plus = read(clone, "data/locomo_plus.json")
    locomo = read(clone, "data/locomo10.json")
    cues = {}
    for i, item in enumerate(plus):
        cues.setdefault(i % len(locomo), []).append(item)
    questions = []
    for n, sample in enumerate(locomo):
        conv = sample["conversation"]
        name = sample["sample_id"]
        a, b = conv["speaker_a"], conv["speaker_b"]
        events = []  # (time, [(speaker, text, blip caption)], cue number or None)
        s = 1
        while f"session_{s}" in conv:
            events.append((when(conv[f"session_{s}_date_time"]),
                           [(t["speaker"], t["text"], t.get("blip_caption")) for t in conv[f"session_{s}"]], None))
            s += 1
        query_time = events[-1][0] + timedelta(days=7)
        for k, item in enumerate(cues.get(n, [])):
            cue_time = query_time - timedelta(days=gap_days(item["time_gap"]))
            events.append((cue_time, [(sp, t, None) for sp, t in turns(item["cue_dialogue"], a, b)], k))
        events.sort(key=lambda e: e[0])
        d = os.path.join(out, "sessions", name)
        os.makedirs(d)
        evidence = {}
        for epoch, (start, said, cue) in enumerate(events):
            head = {
                "epoch": epoch, "started": stamp(start),
                "system": "You are a helpful assistant for one owner.", "tools": [],
                "carry": None if epoch == 0 else "Summary of the earlier conversation.",
                "carry_label": {"class": "private", "untrusted": False},
                "reason": "start" if epoch == 0 else "threshold", "summary_source": "model",
            }
            with open(os.path.join(d, f"epoch-{epoch:06}.head.json"), "w") as f:
                json.dump(head, f)
            with open(os.path.join(d, f"epoch-{epoch:06}.jsonl"), "w") as f:
                for i, (speaker, text, caption) in enumerate(said):
                    t = stamp(start + timedelta(minutes=i + 1))
                    content = f"{speaker}: {text}" + (f" [shares a photo: {caption}]" if caption else "")
                    if cue is not None:
                        evidence.setdefault(cue, []).append(content)
                    if speaker == a:
                        r = {"type": "user", "time": t, "content": content, "origin": "owner"}
                    else:
                        r = {"type": "assistant", "time": t, "content": content, "tool_calls": []}
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
        for k, item in enumerate(cues.get(n, [])):
            (_, query), = turns(item["trigger_query"], a, b)
            questions.append({"question": query, "category": item["relation_type"],
                              "evidence": evidence[k], "conversation": name})
    with open(os.path.join(out, "questions.jsonl"), "w") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
