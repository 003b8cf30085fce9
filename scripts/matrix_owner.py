#!/usr/bin/env python3
"""The owner's side of a Matrix conversation with boxmaker, for scripts/systemd-e2e:
accounts registered on a throwaway Synapse, a room made and boxmaker invited, a message
sent and boxmaker's answer read back. Standard library only, so it runs with the host's
python3 whatever the venv holds.

  matrix_owner.py register URL SECRET_FILE LOCALPART TOKEN_FILE
      registers LOCALPART with Synapse's shared-secret admin API, writes its access
      token alone to TOKEN_FILE (mode 0600) and prints its user id
  matrix_owner.py room URL TOKEN_FILE BOX_USER_ID --within SECONDS
      makes a private room, invites BOX_USER_ID, waits until it has joined and prints
      the room id
  matrix_owner.py say URL TOKEN_FILE ROOM BOX_USER_ID TEXT --within SECONDS
      sends TEXT as m.text, waits for an m.text from BOX_USER_ID after it and prints
      its body

Every HTTP call has a timeout and every wait a deadline; the waits are paced by the
owner's own /sync long-poll, which returns as soon as the room changes. A failure exits
non-zero with one line on stderr saying what was not seen.
"""

import argparse
import hashlib
import hmac
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# One request's bound (a long-poll adds its own timeout to this).
CALL_TIMEOUT = 30
# How long one /sync may hold the request open: short, so a deadline is kept closely.
POLL_MS = 5000


def die(msg: str) -> None:
    print(f"matrix_owner: {msg}", file=sys.stderr)
    sys.exit(1)


def seg(s: str) -> str:
    """A Matrix id as one percent-encoded path segment."""
    return urllib.parse.quote(s, safe="")


def call(base: str, method: str, path: str, token: str = "", body=None, timeout=CALL_TIMEOUT):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        # The path only: a query could carry a sync position, never a token, but the
        # body of an error is the homeserver's words and is worth seeing.
        die(f"{method} {path.split('?')[0]}: HTTP {e.code}: {e.read(300).decode(errors='replace')}")
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        die(f"{method} {path.split('?')[0]}: {e}")


def read_token(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def register(args) -> None:
    secret = read_token(args.secret_file).encode()
    nonce = call(args.url, "GET", "/_synapse/admin/v1/register")["nonce"]
    # The password is never used again (the token is what logs in), but the MAC covers it.
    password = secrets.token_urlsafe(24)
    msg = b"\0".join([nonce.encode(), args.localpart.encode(), password.encode(), b"notadmin"])
    mac = hmac.new(secret, msg, hashlib.sha1).hexdigest()
    body = {"nonce": nonce, "username": args.localpart, "password": password,
            "admin": False, "mac": mac}
    got = call(args.url, "POST", "/_synapse/admin/v1/register", body=body)
    # Created 0600 from the start: the token is a password.
    fd = os.open(args.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(got["access_token"] + "\n")
    print(got["user_id"])


def events(url: str, token: str, room: str) -> list:
    """The room's newest 100 events as the owner sees them, oldest first."""
    got = call(url, "GET", f"/_matrix/client/v3/rooms/{seg(room)}/messages?dir=b&limit=100", token)
    return list(reversed(got.get("chunk", [])))


def wait_for(url: str, token: str, room: str, within: float, what: str, want):
    """The first event `want` takes from the room's events, within `within` seconds."""
    deadline = time.monotonic() + within
    since = None
    # The sync only paces the loop, so it asks for as little as it can.
    flt = seg(json.dumps({"presence": {"not_types": ["*"]}, "account_data": {"not_types": ["*"]},
                          "room": {"timeline": {"limit": 1}, "ephemeral": {"not_types": ["*"]}}}))
    while True:
        found = want(events(url, token, room))
        if found is not None:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            seen = [(e.get("sender"), e.get("type"), e.get("content", {}).get("msgtype"))
                    for e in events(url, token, room)]
            die(f"{what}: not within {within:g} s; the room holds {seen}")
        poll = int(min(left, POLL_MS / 1000) * 1000)
        path = f"/_matrix/client/v3/sync?timeout={poll}&filter={flt}"
        if since:
            path += f"&since={seg(since)}"
        since = call(url, "GET", path, token, timeout=CALL_TIMEOUT + poll / 1000)["next_batch"]


def room(args) -> None:
    token = read_token(args.token_file)
    made = call(args.url, "POST", "/_matrix/client/v3/createRoom", token,
                {"preset": "private_chat", "invite": [args.box]})
    room_id = made["room_id"]

    def joined(evs):
        for e in evs:
            if (e.get("type") == "m.room.member" and e.get("state_key") == args.box
                    and e.get("content", {}).get("membership") == "join"):
                return e
        return None

    wait_for(args.url, token, room_id, args.within, f"{args.box} joining {room_id}", joined)
    print(room_id)


def say(args) -> None:
    token = read_token(args.token_file)
    txn = f"e2e{secrets.token_hex(8)}"
    sent = call(args.url, "PUT",
                f"/_matrix/client/v3/rooms/{seg(args.room)}/send/m.room.message/{txn}", token,
                {"msgtype": "m.text", "body": args.text})
    mine = sent["event_id"]

    def answer(evs):
        after = False
        for e in evs:
            if e.get("event_id") == mine:
                after = True
            elif (after and e.get("sender") == args.box and e.get("type") == "m.room.message"
                  and e.get("content", {}).get("msgtype") == "m.text"):
                return e
        return None

    e = wait_for(args.url, token, args.room, args.within, f"an m.text from {args.box}", answer)
    print(e["content"].get("body", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("register")
    r.add_argument("url")
    r.add_argument("secret_file")
    r.add_argument("localpart")
    r.add_argument("token_file")
    r.set_defaults(run=register)
    m = sub.add_parser("room")
    m.add_argument("url")
    m.add_argument("token_file")
    m.add_argument("box")
    m.add_argument("--within", type=float, required=True)
    m.set_defaults(run=room)
    s = sub.add_parser("say")
    s.add_argument("url")
    s.add_argument("token_file")
    s.add_argument("room")
    s.add_argument("box")
    s.add_argument("text")
    s.add_argument("--within", type=float, required=True)
    s.set_defaults(run=say)
    args = ap.parse_args()
    args.url = args.url.rstrip("/")
    args.run(args)


if __name__ == "__main__":
    main()
