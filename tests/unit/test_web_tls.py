"""--web.config.file end to end: the exporter serves HTTPS and asks for basic auth."""

from __future__ import annotations

import base64
import datetime
import os
import ssl
import subprocess
import urllib.error
import urllib.request

import bcrypt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from support.exporter import ROOT, exporter_command
from support.servers import free_port, wait_for


def self_signed(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))


def test_https_with_basic_auth(tmp_path):
    self_signed(tmp_path)
    hashed = bcrypt.hashpw(b"scrape-pw", bcrypt.gensalt(4)).decode()
    (tmp_path / "web.yml").write_text(f"tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
                                      f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "exporters"))
    proc = subprocess.Popen([*exporter_command(), f"--web.listen-address=127.0.0.1:{port}",
                             f"--web.config.file={tmp_path / 'web.yml'}", "--config.my-cnf=/dev/null"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    context = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))

    def get(auth=None):
        request = urllib.request.Request(f"https://localhost:{port}/")
        if auth:
            request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
        try:
            with urllib.request.urlopen(request, context=context, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    try:
        wait_for(lambda: get() == 401, 20, what="the exporter over HTTPS")
        assert get("prometheus:wrong") == 401
        assert get("prometheus:scrape-pw") == 200
    finally:
        proc.terminate()
        proc.wait(10)
