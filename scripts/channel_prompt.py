#!/usr/bin/env python3
"""The prompt `scripts/run-local` gives at a terminal: lines typed go to loopd's channel
socket, replies come back, and `you> ` is printed whenever a reply block has ended (its
`.` line), so the person sees when it is their turn. Run under rlwrap, which takes that
trailing `you> ` as the prompt and adds line editing and history around it.

Ends at once, exit status 0, when the input ends (Ctrl-D) or loopd closes the connection
after `/quit`: an answer still being written is dropped, the person asked to leave. When
loopd closes it otherwise (it stopped or crashed), it says so and ends with status 1.

A terminal passes a typed or pasted line of fewer than 4096 bytes, the newline included;
the rest of a longer one never reaches the prompt. A line of `TTY_LINE_MAX` bytes or more
may have been cut, so it is not sent: the person is told, and nothing goes to loopd
(docs/running.md).

    channel_prompt.py SOCKET
"""
import os
import selectors
import socket
import sys

PROMPT = b"you> "
# A reply block ends with a line holding only `.` (docs/channel.md).
BLOCK_END = b"\n.\n"
# The kernel's line buffer for a terminal in canonical mode holds 4096 bytes, the newline
# included: past that, what is typed or pasted is dropped until the newline.
TTY_LINE_MAX = 4095
# What the person says to leave: loopd's close after it is expected.
QUIT = b"/quit"


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
    at_terminal = os.isatty(sys.stdin.fileno())
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ, "in")
    sel.register(conn, selectors.EVENT_READ, "loopd")
    # The last bytes written, enough to see a block's end across two reads.
    tail = b"\n"
    # What was typed after the last newline, and the last whole line sent.
    partial = b""
    # `/quit` was sent (loopd reads a command's first word: `/quit now` quits too, and
    # lines pasted after it are never read): loopd's close is expected from then on.
    quit_sent = False
    while True:
        for key, _ in sel.select():
            if key.data == "in":
                typed = os.read(sys.stdin.fileno(), 65536)
                if not typed:
                    return 0
                partial += typed
                *lines, partial = partial.split(b"\n")
                send = b""
                for line in lines:
                    if at_terminal and len(line) >= TTY_LINE_MAX:
                        print(
                            f"run-local: that line reached the prompt cut at {TTY_LINE_MAX} bytes "
                            "(the terminal's limit for one line) and was not sent; send a long "
                            "text in parts, or pipe it: scripts/run-local < FILE",
                            file=sys.stderr,
                        )
                        out.write(PROMPT)
                        out.flush()
                        continue
                    send += line + b"\n"
                    words = line.split()
                    quit_sent = quit_sent or (bool(words) and words[0] == QUIT)
                # Piped input without a final newline is sent as it is.
                if not at_terminal and partial:
                    send += partial
                    partial = b""
                if not send:
                    continue
                try:
                    conn.sendall(send)
                except OSError:
                    pass  # loopd went away; its close is read next
            else:
                try:
                    got = conn.recv(65536)
                except OSError:
                    got = b""
                if not got:
                    if quit_sent:
                        return 0
                    out.flush()
                    print(
                        "\nrun-local: loopd closed the connection without being asked to "
                        "(it stopped or crashed); a line sent since the last reply may not "
                        "have been answered",
                        file=sys.stderr,
                    )
                    return 1
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
