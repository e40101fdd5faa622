"""Request framing as RFC 9112 lets a server insist on it, checked on the raw bytes before h11 reads them.

h11 parses requests leniently where the RFC allows a choice, and here every choice goes the strict way,
because a lenient server behind a proxy that frames differently is how requests are smuggled:

- line endings: CRLF only; a bare LF ends nothing (RFC 9112 2.2 allows either), it is a 400;
- obsolete line folding (a field line starting with SP or HTAB) is a 400, not joined (5.2 allows either);
- Content-Length: one field, digits only (no list, not even of equal values);
- Content-Length and Transfer-Encoding together: 400 (6.1, 6.3: "ought to be handled as an error");
- Transfer-Encoding in an HTTP/1.0 request: 400 (6.1: the framing is faulty);
- Transfer-Encoding whose last coding is not chunked: 400 (6.3); chunked after another coding: 501;
- chunked bodies: a chunk-size line ends in CRLF, has at most 16 hex digits (no integer overflow, 7.1) and
  4 KiB of extensions, and announces no more than the body may still hold (413 at once, before its data);
  no trailer fields (nothing this exporter serves reads them).

Every such answer closes the connection (the server's ``_Reject`` default), so nothing pipelined after a
badly framed request is read as a request. Go's net/http, which exporter-toolkit serves with, is more
lenient on bare LF, obs-fold and Content-Length with Transfer-Encoding; docs/http.md compares them.
"""

from __future__ import annotations

import re

import h11

_BLANK_LINE = re.compile(rb"\n\r?\n")  # where h11 ends a head, whatever the line endings
_BARE_LF = re.compile(rb"(?<!\r)\n")
_DIGITS = re.compile(rb"[ \t]*[0-9]+[ \t]*")
_HEX = re.compile(rb"[0-9A-Fa-f]*")
MAX_CHUNK_SIZE_DIGITS = 16  # as Go's net/http: 64 bits
MAX_CHUNK_LINE = 4096  # a chunk-size line with its extensions


class BadFraming(h11.RemoteProtocolError):
    """A request this server refuses for its framing; the message is ours (no bytes of the request)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message, error_status_hint=status)


def check_head(buffer: bytes) -> None:
    """Raises BadFraming for the request head at the start of ``buffer`` (h11's unread bytes) once it is
    complete; an incomplete head passes (h11 bounds its size and the server its time)."""
    end = _BLANK_LINE.search(buffer)
    if end is None:
        return
    head = buffer[:end.end()]
    if _BARE_LF.search(head):
        raise BadFraming("a line of the request head ends in a bare LF, not CRLF")
    request_line, *fields = head[:-4].split(b"\r\n")
    lengths, codings = [], []
    for line in fields:
        if line[:1] in (b" ", b"\t"):
            raise BadFraming("obsolete line folding (a header line starting with a space or tab) is not accepted")
        name, _, value = line.partition(b":")
        name = name.lower()
        if name == b"content-length":
            lengths.append(value)
        elif name == b"transfer-encoding":
            codings += [c.strip().lower() for c in value.split(b",")]
    if len(lengths) > 1:
        raise BadFraming("more than one Content-Length")
    if lengths and not _DIGITS.fullmatch(lengths[0]):
        raise BadFraming("Content-Length is not a number")
    if codings:
        if lengths:
            raise BadFraming("both Content-Length and Transfer-Encoding")
        if request_line.endswith(b" HTTP/1.0"):
            raise BadFraming("Transfer-Encoding in an HTTP/1.0 request")
        if codings[-1] != b"chunked":
            raise BadFraming("the last transfer coding is not chunked")
        if codings != [b"chunked"]:
            raise BadFraming("transfer codings other than chunked are not supported", 501)


class ChunkedBody:
    """Follows a chunked body through h11's events, and checks each chunk-size line before h11 reads it.

    Before each ``h.next_event()`` the server asks ``check(h.trailing_data[0])``: True when h11 may go on,
    False when the next chunk-size line is not all there yet (read more first, so that h11 never sees half
    of one); BadFraming when it is wrong. ``seen(event)`` follows the events h11 gives.
    """

    def __init__(self, max_bytes: int):
        self.left = max_bytes  # what the body may still hold
        self._at_line = True  # the next bytes are a chunk-size line (after the CRLF of a chunk's data)
        self._after_data = False

    def check(self, buffer: bytes) -> bool:
        if not self._at_line:
            return True
        start = 2 if self._after_data else 0
        if buffer[:start] != b"\r\n"[:len(buffer[:start])]:
            raise BadFraming("chunk data is not followed by CRLF")
        line_end = buffer.find(b"\n", start)
        line = buffer[start:] if line_end < 0 else buffer[start:line_end + 1]
        digits = _HEX.match(line).group()
        if len(digits) > MAX_CHUNK_SIZE_DIGITS:
            raise BadFraming(f"a chunk size of more than {MAX_CHUNK_SIZE_DIGITS} hex digits")
        if line_end < 0:
            if len(line) > MAX_CHUNK_LINE:
                raise BadFraming(f"a chunk-size line over {MAX_CHUNK_LINE} bytes")
            return False
        if not line.endswith(b"\r\n") or b"\r" in line[:-2]:
            raise BadFraming("a chunk-size line does not end in CRLF")
        if not digits:
            raise BadFraming("a chunk-size line without a size")
        size = int(digits, 16)
        if size > self.left:
            raise BadFraming(f"the body would be over {self.left} bytes", 413)
        if size == 0:
            trailer = buffer[line_end + 1:line_end + 3]
            if len(trailer) < 2:
                return False
            if trailer != b"\r\n":
                raise BadFraming("trailer fields are not accepted")
        self.left -= size
        self._at_line = False
        return True

    def seen(self, event) -> None:
        if isinstance(event, h11.Data) and event.chunk_end:
            self._at_line, self._after_data = True, True
