"""Where the password may go: a hostile server on loopback asks for it by every route PyMySQL answers;
without TLS every route is refused before the password leaves, and with TLS it travels encrypted."""

from __future__ import annotations

import io

import pytest
from prometheus_client.registry import CollectorRegistry

from innodb_exporter import cli, config
from innodb_exporter.app import make_app
from innodb_exporter.scraping.connection import AuthRefused, ConnectionSettings, describe
from innodb_exporter.scraping.targets import Targets
from support.fake_mysql import FakeServer

SECRET = "Pw-Leak-Canary-7731"
ROUTES = ("clear", "dialog", "sha256", "caching")


@pytest.fixture
def fake(request):
    server = FakeServer(*request.param)
    yield server
    server.close()


def connect(server: FakeServer, **settings):
    defaults = dict(host="127.0.0.1", port=server.port, user="exporter", password=SECRET, ssl_mode="DISABLED")
    return ConnectionSettings(**{**defaults, **settings}).connect(read_timeout=5)


@pytest.mark.parametrize("fake", [(route,) for route in ROUTES], indirect=True, ids=ROUTES)
def test_no_route_gets_the_password_without_tls(fake):
    with pytest.raises(AuthRefused) as refused:
        connect(fake)
    assert not fake.saw(SECRET), f"the {fake.route} route received the password"
    kind, message = describe(refused.value, ConnectionSettings(password=SECRET))
    assert kind == "auth_refused" and SECRET not in message
    assert ("clear text" in message) if fake.route in ("clear", "dialog") else ("RSA key" in message)


@pytest.mark.parametrize("fake", [("sha256",), ("caching",)], indirect=True, ids=["sha256", "caching"])
def test_a_pinned_key_is_the_only_key_the_password_is_encrypted_to(fake):
    other = FakeServer("sha256")
    try:
        with pytest.raises(Exception) as denied:  # encrypted to the pinned key, which this server lacks
            connect(fake, server_public_key=other.public_pem)
        assert not isinstance(denied.value, AuthRefused)
        assert not fake.saw(SECRET) and not fake.decrypted
    finally:
        other.close()
    with pytest.raises(Exception) as denied:  # pinned: encrypted to it, and the fake server denies access
        connect(fake, server_public_key=fake.public_pem)
    assert not isinstance(denied.value, AuthRefused)
    assert fake.saw(SECRET)  # only the holder of the pinned key could read it


@pytest.mark.parametrize("fake", [("clear", True)], indirect=True, ids=["clear-over-tls"])
def test_over_tls_the_password_travels_encrypted(fake):
    with pytest.raises(Exception) as denied:
        connect(fake, ssl_mode="PREFERRED")
    assert not isinstance(denied.value, AuthRefused)
    assert fake.saw(SECRET)  # inside the TLS session, as the rule allows


@pytest.mark.parametrize("fake", [("clear", True)], indirect=True, ids=["required"])
def test_preferred_tls_is_the_default(fake):
    assert ConnectionSettings().ssl_mode == "PREFERRED"
    with pytest.raises(Exception) as denied:
        connect(fake, ssl_mode=ConnectionSettings().ssl_mode)
    assert not isinstance(denied.value, AuthRefused)


@pytest.mark.parametrize("fake", [("sha256",), ("caching",)], indirect=True, ids=["sha256", "caching"])
def test_without_the_rsa_library_the_refusal_is_the_same(fake, monkeypatch):
    """The exporter installs without cryptography (its [rsa] extra): the server's key is refused on arrival,
    not left to fail inside PyMySQL."""
    import pymysql._auth

    monkeypatch.setattr(pymysql._auth, "_have_cryptography", False)
    with pytest.raises(AuthRefused, match="RSA key it sent itself"):
        connect(fake)
    assert not fake.saw(SECRET)


@pytest.mark.parametrize("fake", [("clear",)], indirect=True, ids=["clear"])
def test_a_server_named_only_by_its_own_section_gets_no_other_sections_credentials(fake, tmp_path):
    """A host named only in [client.evil] was allowed for /probe without auth_module, and the exporter logged
    in there as [client]'s user: here the host is a server that records what arrives."""
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\nuser=Client-User-Canary\npassword={SECRET}\nhost=db1.invalid\n"
                   f"[client.evil]\nuser=evil-user\npassword=evil-pw\nhost=127.0.0.1\nport={fake.port}\n")
    args = cli.server_parser().parse_args([f"--config.my-cnf={cnf}"])
    args.disabled_sources = set()
    cfg, problems = config.load(args, {})
    assert problems == []
    app = make_app(cfg, Targets(cfg.connection, cfg.options, cfg.limits), CollectorRegistry())

    def probe(query: str) -> str:
        environ = {"PATH_INFO": "/probe", "QUERY_STRING": query, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO()}
        answer: dict = {}
        b"".join(app(environ, lambda status, headers: answer.update(status=status)))
        return answer["status"]

    assert probe(f"target={fake.address}").startswith("403")
    assert probe(f"target={fake.address}&auth_module=client").startswith("403")
    assert fake.received == []  # not even a connection
    assert probe(f"target={fake.address}&auth_module=client.evil").startswith("200")
    assert fake.saw("evil-user") and not fake.saw("Client-User-Canary") and not fake.saw(SECRET)
