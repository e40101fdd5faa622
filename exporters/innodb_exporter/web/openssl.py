"""What exporter-toolkit's TLS settings need and Python's ssl module does not offer, from the libssl it uses.

Python's ``ssl`` verifies every client certificate it asks for, and sets one elliptic curve at most. Go's
crypto/tls, which exporter-toolkit configures, can also ask for a certificate without verifying it
(``RequestClientCert``, ``RequireAnyClientCert``) and take a list of curves. Both are one libssl call on the
context (``SSL_CTX_set_verify`` with a callback that accepts the chain, ``SSL_CTX_set1_groups_list``), made
here through ctypes on the very SSL_CTX of an ``ssl.SSLContext``, in the libssl that ``_ssl`` is linked
against.

How the SSL_CTX is found: CPython's context object holds it right after the object header (``PySSLContext``
in Modules/_ssl.c, the same from 3.7 to 3.14). ``_ssl_ctx`` checks that pointer before any use: libssl must
report, for it, the verify mode and the options this context has set through the ssl module, two values
chosen for the check, on a scratch context once. On any mismatch (another Python, another layout) ``Unsupported`` is raised and the web
config that needs it is refused with the reason, never a crash.

The TLS handshake still proves that the client holds the certificate's key (CertificateVerify); only the
chain is not checked, which is exactly RequireAnyClientCert. ``client_allowed_sans`` is checked after the
handshake (web/config.py, ``WebConfig.allows``).
"""

from __future__ import annotations

import ctypes
import functools
import ssl
import sys

import _ssl

SSL_VERIFY_PEER, SSL_VERIFY_FAIL_IF_NO_PEER_CERT = 0x01, 0x02
SSL_CTRL_SET_GROUPS_LIST = 92  # SSL_CTX_set1_groups_list is this SSL_CTX_ctrl (ssl.h)

_VERIFY_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)


@_VERIFY_CALLBACK
def _accept_chain(preverify_ok: int, store_ctx) -> int:  # called by libssl for each certificate of the chain
    return 1


class Unsupported(Exception):
    """This Python's ssl module cannot be reached the way this module needs."""


def _libssl():
    lib = ctypes.CDLL(_ssl.__file__)  # dlsym on the module searches the libraries it is linked against
    try:
        lib.SSL_CTX_set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, _VERIFY_CALLBACK]
        lib.SSL_CTX_set_verify.restype = None
        lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
        lib.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_options.restype = ctypes.c_uint64
        lib.SSL_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_char_p]
        lib.SSL_CTX_ctrl.restype = ctypes.c_long
    except AttributeError as exc:
        raise Unsupported(f"libssl functions are not reachable from {_ssl.__file__}: {exc}") from None
    return lib


def _pointer(context: ssl.SSLContext) -> int:
    return ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value or 0


@functools.cache
def _libssl_checked() -> ctypes.CDLL:
    """libssl, once it has been seen to find the SSL_CTX of a scratch context where this module looks: the
    verify modes and options the ssl module set on it, read back through libssl."""
    lib = _libssl()
    scratch = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    wrong = Unsupported(f"the SSL_CTX of Python {sys.version.split()[0]} is not where this module looks")
    if not _pointer(scratch):
        raise wrong
    for mode, expected in ((ssl.CERT_OPTIONAL, SSL_VERIFY_PEER),
                           (ssl.CERT_REQUIRED, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT)):
        scratch.verify_mode = mode
        if lib.SSL_CTX_get_verify_mode(_pointer(scratch)) != expected:
            raise wrong
    scratch.options |= ssl.OP_NO_TICKET
    if lib.SSL_CTX_get_options(_pointer(scratch)) != scratch.options:
        raise wrong
    return lib


def _ssl_ctx(context: ssl.SSLContext) -> tuple[ctypes.CDLL, int]:
    """(libssl, the context's SSL_CTX pointer)."""
    return _libssl_checked(), _pointer(context)


def check() -> None:
    """Raises Unsupported when this Python's contexts cannot be reached (for the web config's checks)."""
    _libssl_checked()


def accept_any_client_certificate(context: ssl.SSLContext, required: bool) -> None:
    """Ask for a client certificate and accept any (its key is still proved); ``required``: refuse a client
    without one. The last call on ``context``'s verify mode: setting ``verify_mode`` again undoes it."""
    lib, address = _ssl_ctx(context)
    lib.SSL_CTX_set_verify(address, SSL_VERIFY_PEER | (SSL_VERIFY_FAIL_IF_NO_PEER_CERT if required else 0),
                           _accept_chain)


def set_groups(context: ssl.SSLContext, groups: list[str]) -> None:
    """The key exchange groups (curves) the context offers, OpenSSL's names, e.g. ["P-256", "X25519"]."""
    lib, address = _ssl_ctx(context)
    if lib.SSL_CTX_ctrl(address, SSL_CTRL_SET_GROUPS_LIST, 0, ":".join(groups).encode()) != 1:
        raise ssl.SSLError(f"libssl refused the groups {':'.join(groups)}")
