"""Certificates for the TLS tests: a CA, a server certificate for localhost and 127.0.0.1, client certificates."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca: str  # CA certificate (PEM)
    cert: str  # server certificate, signed by the CA
    key: str
    client_cert: str  # client certificate, signed by the CA
    client_key: str
    rogue_cert: str  # a client certificate signed by another CA
    rogue_key: str

    def client_context(self, cert: str | None = None, key: str | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca)
        if cert:
            context.load_cert_chain(cert, key)
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(directory: str, stem: str, cert: x509.Certificate, key) -> tuple[str, str]:
    cert_path, key_path = os.path.join(directory, f"{stem}.crt"), os.path.join(directory, f"{stem}.key")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


def _ca(common_name: str):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


# The SANs of the client certificates, one of each kind Go matches client_allowed_sans against.
CLIENT_SANS = ("prometheus.example", "prometheus@example.com", "10.0.0.7", "2001:db8::7",
               "spiffe://example.org/prometheus")
ROGUE_SANS = ("rogue.example",)


def _leaf(ca_cert, ca_key, common_name: str, server: bool, sans: tuple[str, ...] = ()):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                     else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
             x509.IPAddress(ipaddress.ip_address("::1"))]), critical=False)
    elif sans:
        builder = builder.add_extension(x509.SubjectAlternativeName([_general_name(san) for san in sans]),
                                        critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _general_name(san: str) -> x509.GeneralName:
    if "://" in san:
        return x509.UniformResourceIdentifier(san)
    if "@" in san:
        return x509.RFC822Name(san)
    try:
        return x509.IPAddress(ipaddress.ip_address(san))
    except ValueError:
        return x509.DNSName(san)


def make_pki(directory: str) -> Pki:
    ca_cert, ca_key = _ca("innodb-exporter test CA")
    with open(os.path.join(directory, "ca.crt"), "wb") as f:
        f.write(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert, key = _write(directory, "server", *_leaf(ca_cert, ca_key, "localhost", server=True))
    client_cert, client_key = _write(directory, "client", *_leaf(ca_cert, ca_key, "prometheus", server=False,
                                                                       sans=CLIENT_SANS))
    rogue_ca, rogue_ca_key = _ca("someone else's CA")
    rogue_cert, rogue_key = _write(directory, "rogue", *_leaf(rogue_ca, rogue_ca_key, "prometheus", server=False,
                                                                    sans=ROGUE_SANS))
    return Pki(os.path.join(directory, "ca.crt"), cert, key, client_cert, client_key, rogue_cert, rogue_key)
