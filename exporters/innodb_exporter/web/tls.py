"""The web config's ``tls_server_config`` made into a server ``ssl.SSLContext``, with the meaning Go's crypto/tls
gives it in exporter-toolkit (docs/http.md has the table of every option).

- Certificates and keys from files or inline PEM (``cert``/``key``; a file wins over the inline text, as in the
  toolkit). Inline PEM is loaded through an anonymous in-memory file (memfd): nothing is written to disk.
- ``client_auth_type``: ``VerifyClientCertIfGiven`` and ``RequireAndVerifyClientCert`` verify against
  ``client_ca_file``/``client_ca``, or against the system's roots when neither is set (Go's x509 does the
  same; SSL_CERT_FILE and SSL_CERT_DIR move them for both). ``RequestClientCert`` and
  ``RequireAnyClientCert`` ask for a certificate without verifying its chain, which Python's ssl module
  cannot do by itself: web/openssl.py sets it on the context through libssl.
- ``client_allowed_sans``: checked right after the handshake (``client_refusal``), on the certificate's DNS,
  e-mail, IP and URI SANs, exact strings, as the toolkit's VerifyPeerCertificate does in the handshake; a
  refused client has its connection closed before any request is read. With no certificate to check (an
  optional one not sent), the connection is refused too: the toolkit panics there and drops it.
- Versions TLS10 to TLS13 (below TLS12 needs OpenSSL's security level 0, which is set then), cipher suites
  by Go's names (TLS 1.3 suites are not configurable, in Go as in OpenSSL), curves by Go's names.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import warnings

from . import openssl

TLS_VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1, "TLS12": ssl.TLSVersion.TLSv1_2,
                "TLS13": ssl.TLSVersion.TLSv1_3}
# Go's tls.CipherSuites() (exporter-toolkit takes no other name) and OpenSSL's names for them. The three
# TLS 1.3 suites are accepted and have no effect, as in Go.
CIPHER_SUITES = {
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
# Go's net/http refuses, at start, HTTP/2 with a TLS 1.2 suite list lacking both of these (RFC 7540 9.2.2).
HTTP2_REQUIRED_CIPHERS = ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
CURVES = {"CurveP256": "P-256", "CurveP384": "P-384", "CurveP521": "P-521", "X25519": "X25519"}
CLIENT_AUTH_TYPES = ("NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
                     "RequireAndVerifyClientCert")
UNVERIFIED = ("RequestClientCert", "RequireAnyClientCert")  # need web/openssl.py


def server_context(web) -> ssl.SSLContext:
    """A server context for ``web`` (a WebConfig) from its files as they are now. Raises ssl.SSLError,
    OSError or ValueError when they cannot be used, openssl.Unsupported when this Python cannot do it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.options |= ssl.OP_NO_RENEGOTIATION  # a client could make the server redo handshakes for free
    context.set_alpn_protocols(["http/1.1"])  # a client offering h2 learns at once that we speak HTTP/1.1
    low, high = TLS_VERSIONS[web.min_version], TLS_VERSIONS[web.max_version]
    ciphers = [CIPHER_SUITES[name] for name in web.cipher_suites if CIPHER_SUITES[name]]
    if web.cipher_suites and not ciphers:  # only TLS 1.3 names: no TLS 1.2 suite is left, as in Go
        low = max(low, ssl.TLSVersion.TLSv1_3)
    with warnings.catch_warnings():  # TLS 1.0 and 1.1 are deprecated (RFC 8996); config.py warns the operator
        warnings.simplefilter("ignore", DeprecationWarning)
        context.minimum_version, context.maximum_version = low, high
    # TLS 1.0 and 1.1 sign the handshake with SHA-1, which OpenSSL allows only at security level 0.
    level = ":@SECLEVEL=0" if low < ssl.TLSVersion.TLSv1_2 else ""
    if ciphers or level:
        context.set_ciphers(":".join(ciphers or ["DEFAULT"]) + level)
    _load_chain(context, web)
    if web.curve_preferences:
        openssl.set_groups(context, [CURVES[name] for name in web.curve_preferences])
    auth = web.client_auth_type
    if auth in ("VerifyClientCertIfGiven", "RequireAndVerifyClientCert"):
        context.verify_mode = ssl.CERT_OPTIONAL if auth == "VerifyClientCertIfGiven" else ssl.CERT_REQUIRED
        if web.client_ca_file:
            _load_cas(context, cafile=web.client_ca_file)
        elif web.client_ca:
            _load_cas(context, cadata=web.client_ca)
        else:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    elif auth in UNVERIFIED:
        openssl.accept_any_client_certificate(context, required=auth == "RequireAnyClientCert")
    return context


def _load_chain(context: ssl.SSLContext, web) -> None:
    if web.cert_file and web.key_file:
        context.load_cert_chain(web.cert_file, web.key_file)
        return
    with _pem_file(web.cert_file, web.cert) as cert, _pem_file(web.key_file, web.key) as key:
        context.load_cert_chain(cert, key)


class _pem_file:
    """A path to ``path``, or to ``text`` in an anonymous in-memory file, for APIs that take only paths."""

    def __init__(self, path: str | None, text: str | None):
        self.path, self.text, self.fd = path, text, None

    def __enter__(self) -> str:
        if self.path:
            return self.path
        self.fd = os.memfd_create("web-config-pem", os.MFD_CLOEXEC)
        os.write(self.fd, (self.text or "").encode())
        return f"/proc/self/fd/{self.fd}"

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _load_cas(context: ssl.SSLContext, **source) -> None:
    """The client CAs; a source holding no certificate leaves the pool empty (every client certificate is then
    refused), as Go's AppendCertsFromPEM does; config.py warns about it at start."""
    try:
        context.load_verify_locations(**source)
    except ssl.SSLError:
        pass


def has_certificates(cafile: str | None = None, cadata: str | None = None) -> bool:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _load_cas(context, cafile=cafile, cadata=cadata)
    return context.cert_store_stats()["x509"] > 0


def client_refusal(web, ssl_object) -> str | None:
    """Why a client that completed its handshake is refused by ``client_allowed_sans``; None when it is not."""
    if web.client_allowed_sans is None or web.client_auth_type == "NoClientCert":  # no certificate asked for
        return None
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return "no client certificate to match client_allowed_sans"
    sans = certificate_sans(der)
    if not set(sans) & set(web.client_allowed_sans):
        return f"none of the client certificate's SANs {sans} is in client_allowed_sans"
    return None


# --- the SANs of a certificate, from its DER ----------------------------------------------------------------

_SAN_OID = bytes.fromhex("551d11")  # 2.5.29.17 subjectAltName
_SAN_TAGS = {0x81: "email", 0x82: "dns", 0x86: "uri", 0x87: "ip"}  # GeneralName's context tags (RFC 5280 4.2.1.6)


def _tlv(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of the value, end of the value) of the DER element at ``at``."""
    tag, length, at = data[at], data[at + 1], at + 2
    if length & 0x80:
        count = length & 0x7F
        if not 1 <= count <= 4:
            raise ValueError("bad DER length")
        length, at = int.from_bytes(data[at:at + count], "big"), at + count
    if at + length > len(data):
        raise ValueError("DER element past the end")
    return tag, at, at + length


def _children(data: bytes, start: int, end: int):
    while start < end:
        tag, value, start = _tlv(data, start)
        yield tag, value, start


def certificate_sans(der: bytes) -> list[str]:
    """The DNS, e-mail, IP and URI SANs of a DER certificate, as Go prints them (the strings
    client_allowed_sans is matched against): IPs in their shortest form, an IPv4-mapped IPv6 as IPv4.
    libssl parsed the certificate in the handshake already; a malformed one yields no SAN."""
    try:
        _, cert_start, cert_end = _tlv(der, 0)
        _, tbs_start, tbs_end = _tlv(der, cert_start)
        for tag, start, end in _children(der, tbs_start, tbs_end):
            if tag != 0xA3:  # [3] extensions
                continue
            _, exts_start, exts_end = _tlv(der, start)
            for _, ext_start, ext_end in _children(der, exts_start, exts_end):
                parts = list(_children(der, ext_start, ext_end))  # OID, [critical], OCTET STRING
                if der[parts[0][1]:parts[0][2]] != _SAN_OID:
                    continue
                _, names_start, names_end = _tlv(der, parts[-1][1])
                return [_san(_SAN_TAGS[tag], der[s:e]) for tag, s, e in _children(der, names_start, names_end)
                        if tag in _SAN_TAGS]
    except (ValueError, IndexError, UnicodeDecodeError):
        return []
    return []


def _san(kind: str, value: bytes) -> str:
    if kind != "ip":
        return value.decode("ascii")
    address = ipaddress.ip_address(value)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return str(address.ipv4_mapped)
    return str(address)
