"""HTTP endpoints given as URLs that may carry ``user:password@``: an exporter to record, a Prometheus to
export from.

The credentials become HTTP basic auth and are then gone: ``Endpoint.url`` (what is printed, stored in
a bundle, and put in any error) never holds them. Redirects are not followed, so the credentials go
to no other host.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field


class EndpointError(Exception):
    def __init__(self, message: str, body: bytes = b"", status: int | None = None):
        super().__init__(message)
        self.body = body  # the start of an error answer's body (Prometheus explains there)
        self.status = status  # the HTTP status of an error answer


@dataclass(frozen=True)
class Endpoint:
    url: str  # without user information
    authorization: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, text: str, password_file: str | None = None, password_flag: str | None = None) -> "Endpoint":
        """``http(s)://[user[:password]@]host[:port]/path``; a user without a password takes the password
        from ``password_file`` (its first line, given with ``password_flag``), so that it stays off the
        command line."""
        try:
            parts = urllib.parse.urlsplit(text)
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError:
            raise EndpointError(f"{_without_userinfo(text)} is not a URL") from None
        if "@" in parts.path + parts.query + parts.fragment:  # a password's '/', '?' or '#' ended the authority
            raise EndpointError(f"{_without_userinfo(text)}: an '@' after the host; percent-encode a '/', '?', "
                                "'#' or '@' in the password (%2F, %3F, %23, %40)")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EndpointError(f"{_without_userinfo(text)} is not an http:// or https:// URL")
        netloc = parts.netloc.rpartition("@")[2]
        url = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
        if parts.username is None:
            return cls(url)
        user = urllib.parse.unquote(parts.username)
        if parts.password is not None:
            password = urllib.parse.unquote(parts.password)
        elif password_file:
            password = _first_line(password_file)
        elif password_flag:
            raise EndpointError(f"{url}: a user without a password: add {password_flag}")
        else:
            raise EndpointError(f"{url}: a user without a password: give user:password@, percent-encoded")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return cls(url, f"Basic {token}")

    def get(self, timeout: float, limit: int, path: str = "") -> bytes:
        """The body of a GET, at most ``limit`` bytes; EndpointError with a message free of credentials."""
        request = urllib.request.Request(self.url + path)
        if self.authorization:
            request.add_header("Authorization", self.authorization)
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                body = response.read(limit + 1)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise EndpointError(f"HTTP {exc.code}: a redirect, which is not followed (give the final URL)") from None
            raise EndpointError(f"HTTP {exc.code} {exc.reason}", exc.read(4096), exc.code) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise EndpointError(str(getattr(exc, "reason", exc))) from None
        if len(body) > limit:
            raise EndpointError(f"the answer is larger than {limit} bytes")
        return body


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _without_userinfo(text: str) -> str:
    """The URL fit for a message: everything up to its last '@' left out (a password may hold a '/', which
    ends the authority where a parser looks)."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        return "the URL"
    return f"{scheme}://{rest.rpartition('@')[2]}"


def _first_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            line = f.readline().rstrip("\r\n")
    except OSError as exc:
        raise EndpointError(f"cannot read the password file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise EndpointError(f"the password file {path} is not UTF-8") from None
    if not line:
        raise EndpointError(f"the password file {path} is empty")
    return line
