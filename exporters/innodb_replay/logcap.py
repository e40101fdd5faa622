"""A service's log kept within a size: ``python -m innodb_replay.logcap PATH MAX_BYTES`` copies its standard
input to PATH; when a write would take PATH past MAX_BYTES, PATH becomes PATH.1 (the previous PATH.1 goes)
and a new PATH starts, cut after the last whole line that fits. So however long a service runs and
whatever it writes, its log takes at most twice MAX_BYTES. It ends when the service closes its output
(the service exited), and keeps nothing but the log.
"""

from __future__ import annotations

import os
import signal
import sys

CHUNK = 64 * 1024


def copy(source: int, path: str, max_bytes: int) -> None:
    out = open(path, "ab")
    size = out.tell()
    try:
        while chunk := os.read(source, CHUNK):
            while size + len(chunk) > max_bytes:
                room = max_bytes - size
                cut = chunk.rfind(b"\n", 0, room) + 1 or (room if size == 0 else 0)  # a line longer than the cap is cut
                out.write(chunk[:cut])
                out.close()
                os.replace(path, path + ".1")
                out, size, chunk = open(path, "ab"), 0, chunk[cut:]
            out.write(chunk)
            out.flush()
            size += len(chunk)
    finally:
        out.close()


def main(argv=None) -> int:
    path, max_bytes = (argv or sys.argv[1:])[:2]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for `up` is not meant for the service's log
    copy(sys.stdin.fileno(), path, int(max_bytes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
