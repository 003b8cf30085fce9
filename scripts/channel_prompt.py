#!/usr/bin/env python3
"""The prompt `scripts/run-local` gives at a terminal: lines typed go to loopd's channel
socket, replies come back, and `you> ` is printed whenever a reply block has ended (its
`.` line), so the person sees when it is their turn. Run under rlwrap, which takes that
trailing `you> ` as the prompt and adds line editing and history around it.

Ends at once, exit status 0, when loopd closes the connection (after `/quit`) or the
input ends (Ctrl-D): an answer still being written is dropped, the person asked to leave.

    channel_prompt.py SOCKET
"""
import os
import selectors
import socket
import sys

PROMPT = b"you> "
# A reply block ends with a line holding only `.` (docs/channel.md).
BLOCK_END = b"\n.\n"


def main() -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(sys.argv[1])
    except OSError as e:
        print(f"run-local: cannot connect to loopd at {sys.argv[1]}: {e.strerror}", file=sys.stderr)
        return 1
    out = sys.stdout.buffer
    out.write(PROMPT)
    out.flush()
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ, "in")
    sel.register(conn, selectors.EVENT_READ, "loopd")
    # The last bytes written, enough to see a block's end across two reads.
    tail = b"\n"
    while True:
        for key, _ in sel.select():
            if key.data == "in":
                typed = os.read(sys.stdin.fileno(), 65536)
                if not typed:
                    return 0
                try:
                    conn.sendall(typed)
                except OSError:
                    return 0  # loopd went away; its close is read next or never
            else:
                try:
                    got = conn.recv(65536)
                except OSError:
                    got = b""
                if not got:
                    return 0
                out.write(got)
                tail = (tail + got)[-len(BLOCK_END):]
                if tail == BLOCK_END:
                    out.write(PROMPT)
                out.flush()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
