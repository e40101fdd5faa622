"""A hostile MySQL server on loopback: it asks the client for its password by one route or another and
keeps whatever it receives, so that tests can show the password never arrives.

Routes (``route``):
  clear       auth switch to mysql_clear_password (the password in clear text)
  dialog      auth switch to dialog, prompting "Password: " (MariaDB PAM; clear text too)
  sha256      auth switch to sha256_password; sends its own RSA key when asked
  caching     caching_sha2_password: asks for full authentication, sends its own RSA key when asked
With ``tls=True`` it offers TLS (a self-signed certificate) and the client may encrypt the link.
"""

from __future__ import annotations

import datetime
import os
import socket
import ssl
import struct
import tempfile
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

CLIENT_SSL = 0x800
CAPABILITIES = 0x0001 | 0x0200 | 0x8000 | 0x00080000 | 0x00200000 | 0x00100000  # long pw, 4.1, secure, plugin auth, lenenc, attrs


def _packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


class FakeServer:
    def __init__(self, route: str, tls: bool = False):
        self.route, self.tls = route, tls
        self.received: list[bytes] = []  # every payload the client sent after the handshake
        self.decrypted: list[bytes] = []  # what RSA-encrypted payloads held
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_pem = self.key.public_key().public_bytes(serialization.Encoding.PEM,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self._tls_context = self._context() if tls else None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _context(self) -> ssl.SSLContext:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake")])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self.key.public_key())
                .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                .sign(self.key, hashes.SHA256()))
        folder = tempfile.mkdtemp(prefix="fake-mysql-")
        cert_path, key_path = os.path.join(folder, "c.pem"), os.path.join(folder, "k.pem")
        with open(cert_path, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(key_path, "wb") as f:
            f.write(self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        return context

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.sock.close()

    # --- the protocol -----------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _read(self, conn) -> tuple[int, bytes]:
        header = b""
        while len(header) < 4:
            chunk = conn.recv(4 - len(header))
            if not chunk:
                raise ConnectionError
            header += chunk
        length, seq = int.from_bytes(header[:3], "little"), header[3]
        data = b""
        while len(data) < length:
            chunk = conn.recv(length - len(data))
            if not chunk:
                raise ConnectionError
            data += chunk
        return seq, data

    def _session(self, conn) -> None:
        try:
            self._handshake(conn)
        except (ConnectionError, OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def _handshake(self, conn) -> None:
        salt = os.urandom(20).replace(b"\0", b"\1")
        caps = CAPABILITIES | (CLIENT_SSL if self.tls else 0)
        plugin = b"caching_sha2_password" if self.route == "caching" else b"mysql_native_password"
        greeting = (b"\x0a" + b"8.4.0-fake\0" + struct.pack("<I", 7) + salt[:8] + b"\0"
                    + struct.pack("<H", caps & 0xFFFF) + b"\x21" + struct.pack("<H", 2)
                    + struct.pack("<H", caps >> 16) + bytes([21]) + b"\0" * 10 + salt[8:] + b"\0" + plugin + b"\0")
        conn.sendall(_packet(0, greeting))
        seq, response = self._read(conn)
        if self.tls and len(response) == 32 and int.from_bytes(response[:4], "little") & CLIENT_SSL:
            conn = self._tls_context.wrap_socket(conn, server_side=True)
            seq, response = self._read(conn)
        self.received.append(response)
        seq += 1
        if self.route == "caching":
            conn.sendall(_packet(seq, b"\x01\x04"))  # perform full authentication
        else:
            switch = {"clear": b"mysql_clear_password\0", "dialog": b"dialog\0\x04Password: ",
                      "sha256": b"sha256_password\0" + salt + b"\0"}[self.route]
            conn.sendall(_packet(seq, b"\xfe" + switch))
        while True:
            seq, data = self._read(conn)
            self.received.append(data)
            if data in (b"\x01", b"\x02"):  # the client asks for the server's public key
                conn.sendall(_packet(seq + 1, b"\x01" + self.public_pem))
                continue
            if len(data) == 256:  # an RSA-encrypted password: readable only with the key it was encrypted to
                try:
                    plain = self.key.decrypt(data, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()),
                                                                algorithm=hashes.SHA1(), label=None))
                    self.decrypted.append(bytes(a ^ salt[i % len(salt)] for i, a in enumerate(plain)))
                except ValueError:
                    pass
            conn.sendall(_packet(seq + 1, b"\xff" + struct.pack("<H", 1045) + b"#28000Access denied (fake)"))
            return

    def saw(self, secret: str) -> bool:
        """True when the secret arrived in any form this server could read."""
        needle = secret.encode()
        return any(needle in data for data in self.received + self.decrypted)
