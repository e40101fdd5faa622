"""The HTTP surface: landing page, /metrics, /probe, /-/healthy. A WSGI app built by a factory.

Tests call ``make_app`` with their own targets; ``serve`` runs it on a threading server, with TLS
when the web config asks for it.
"""

from __future__ import annotations

import base64
import html
import logging
import socket
import threading
from collections import OrderedDict
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import CollectorRegistry

from . import __version__, exposition
from .config import Config, probe_connection
from .connection import ConnectionSettings
from .target import Target
from .webconfig import BasicAuth

log = logging.getLogger("innodb_exporter")

TIMEOUT_HEADER = "HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS"
MIN_TIMEOUT = 0.1


class Targets:
    """The default target and the ones /probe has asked for, each kept with its connection."""

    def __init__(self, config: Config, limit: int = 256):
        self.config = config
        self.default = Target(config.connection, config.options) if config.connection else None
        self._probed: OrderedDict[tuple, Target] = OrderedDict()
        self._limit = limit
        self._mu = threading.Lock()

    def for_probe(self, settings: ConnectionSettings) -> Target:
        key = (settings.address, settings.user, settings.password, settings.ssl_ca)
        with self._mu:
            target = self._probed.pop(key, None) or Target(settings, self.config.options)
            self._probed[key] = target
            while len(self._probed) > self._limit:  # forget the least recently probed
                self._probed.popitem(last=False)[1].close()
        return target


def _process_registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def _build_info():
    info = GaugeMetricFamily("innodb_exporter_build_info", "1, labelled with the exporter's version.",
                             labels=["version"])
    info.add_metric([__version__], 1.0)
    return info


LANDING = """<!doctype html>
<html><head><meta charset="utf-8"><title>InnoDB exporter</title></head>
<body>
<h1>InnoDB exporter {version}</h1>
<p>Prometheus exporter for the inside of InnoDB: checkpoint age and REDO, flushing, free pages, purge, latches.</p>
<ul>
<li><a href="{metrics}">{metrics}</a>: metrics of {default}</li>
<li><a href="/probe?target=localhost:3306">/probe?target=HOST:PORT</a>: metrics of another server
(optional <code>auth_module=client.NAME</code> takes its credentials from that my.cnf section)</li>
<li><a href="/-/healthy">/-/healthy</a>: 200 when the default server can be scraped</li>
</ul>
</body></html>
"""


def make_app(config: Config, targets: Targets, process_registry: CollectorRegistry | None = None):
    auth = BasicAuth(config.web.users)
    process_registry = process_registry if process_registry is not None else _process_registry()

    def timeout_for(environ) -> float:
        header = environ.get(TIMEOUT_HEADER)
        try:
            seconds = float(header) if header else config.default_timeout
        except ValueError:
            seconds = config.default_timeout
        return max(MIN_TIMEOUT, seconds - config.timeout_offset)

    def respond(start_response, status, body, content_type="text/plain; charset=utf-8", headers=()):
        data = body if isinstance(body, bytes) else body.encode()
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(data))), *headers])
        return [data]

    def authorized(environ) -> bool:
        if not auth.enabled:
            return True
        header = environ.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return auth.check(user, password)

    def metrics(environ, start_response, target: Target | None, with_process: bool):
        fams = []
        if target is not None:
            result = target.scrape(timeout_for(environ))
            fams.extend(exposition.families(result, config.options.top))
        if with_process:
            fams.append(_build_info())
            fams.extend(process_registry.collect())
        body, content_type = exposition.render(fams, environ.get("HTTP_ACCEPT", ""))
        return respond(start_response, "200 OK", body, content_type)

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "/")
        if not authorized(environ):
            return respond(start_response, "401 Unauthorized", "Unauthorized\n",
                           headers=[("WWW-Authenticate", 'Basic realm="innodb-exporter"')])
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return respond(start_response, "405 Method Not Allowed", "Only GET\n")
        if path == config.telemetry_path:
            return metrics(environ, start_response, targets.default, with_process=True)
        if path == "/probe":
            query = parse_qs(environ.get("QUERY_STRING", ""))
            target = (query.get("target") or [""])[0]
            if not target:
                return respond(start_response, "400 Bad Request", "probe needs ?target=HOST:PORT\n")
            settings, error = probe_connection(config, target, (query.get("auth_module") or [None])[0])
            if error:
                return respond(start_response, "400 Bad Request", error + "\n")
            return metrics(environ, start_response, targets.for_probe(settings), with_process=False)
        if path == "/-/healthy":
            if targets.default is None:
                return respond(start_response, "200 OK", "OK (no default target; use /probe)\n")
            result = targets.default.scrape(timeout_for(environ))
            if result.up:
                return respond(start_response, "200 OK", "OK\n")
            failed = sorted({r.kind for r in result.sources.values() if r.kind})
            return respond(start_response, "503 Service Unavailable",
                           f"cannot scrape {targets.default.settings.address}: {', '.join(failed)}\n")
        if path == "/":
            default = html.escape(targets.default.settings.address) if targets.default else "no default server"
            page = LANDING.format(version=__version__, metrics=html.escape(config.telemetry_path), default=default)
            return respond(start_response, "200 OK", page, "text/html; charset=utf-8")
        return respond(start_response, "404 Not Found", "Not found\n")

    return app


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # access logs are not ours to print
        pass


def serve(config: Config, app) -> None:
    server_class = _ThreadingServer
    if ":" in config.listen_host:
        server_class = type("_ThreadingServer6", (_ThreadingServer,), {"address_family": socket.AF_INET6})
    httpd = make_server(config.listen_host, config.listen_port, app, server_class, _QuietHandler)
    if config.web.tls:
        # The handshake happens in the request's thread, so a slow client cannot hold up the others.
        httpd.socket = config.web.ssl_context().wrap_socket(httpd.socket, server_side=True,
                                                            do_handshake_on_connect=False)
    scheme = "https" if config.web.tls else "http"
    log.info("listening on %s://%s:%d", scheme, config.listen_host, httpd.server_port)
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()
