"""The HTTP surface: landing page, /metrics, /probe, /-/healthy, and the evidence captures (POST /capture,
/captures, /api/captures). A WSGI app built by a factory.

Tests call ``make_app`` with their own targets; web/server.py serves it, and enforces TLS and basic auth
from the web config before a request reaches it.
"""

from __future__ import annotations

import gzip
import html
import json
import math
from urllib.parse import parse_qs, quote

from prometheus_client import GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.registry import CollectorRegistry

from . import __version__
from .capture import webhook
from .capture.service import CaptureService
from .config import MAX_SCRAPE_TIMEOUT, Config, ProbeError, probe_connection
from .scraping import exposition, health
from .scraping.target import Target
from .scraping.targets import Targets, TooManyTargets

TIMEOUT_HEADER = "HTTP_X_PROMETHEUS_SCRAPE_TIMEOUT_SECONDS"
MIN_TIMEOUT = 0.1
# Metrics are gzipped when the scraper asks (Prometheus does by default), at the fastest level: a scrape's
# 35 to 60 KB become a fifth for 0.3 ms of CPU; the default level 6 takes twice that for an eighth fewer bytes.
GZIP_LEVEL = 1


def _process_registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


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
<li><a href="/captures">/captures</a> (<a href="/api/captures">JSON</a>): evidence captured when an alert fired
(Alertmanager posts its webhook to <code>/capture</code>)</li>
</ul>
</body></html>
"""


CAPTURES_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>InnoDB exporter: captures</title></head>
<body>
<h1>Evidence captures</h1>
<p>Raw texts taken when an alert fired, newest first ({query_text}). <a href="/api/captures">JSON</a></p>
<table border="1" cellpadding="4">
<tr><th>started</th><th>instance</th><th>alerts</th><th>snapshots</th><th>files</th><th>errors</th></tr>
{rows}
</table>
</body></html>
"""


def make_app(config: Config, targets: Targets, process_registry: CollectorRegistry | None = None,
             captures: CaptureService | None = None):
    captures = captures or CaptureService(config.capture, targets)
    process_registry = process_registry if process_registry is not None else _process_registry()

    def timeout_for(environ) -> float:
        header = environ.get(TIMEOUT_HEADER)
        try:
            seconds = float(header) if header else config.default_timeout
        except ValueError:
            seconds = config.default_timeout
        if not math.isfinite(seconds):  # float() reads "nan" and "inf" too
            seconds = config.default_timeout
        return min(MAX_SCRAPE_TIMEOUT, max(MIN_TIMEOUT, seconds - config.timeout_offset))

    def respond(start_response, status, body, content_type="text/plain; charset=utf-8", headers=()):
        data = body if isinstance(body, bytes) else body.encode()
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(data))), *headers])
        return [data]

    def metrics(environ, start_response, target: Target | None, with_process: bool):
        exposed = []
        if target is not None:
            result = target.scrape(timeout_for(environ))
            exposed.extend(exposition.families(result))
            exposed.extend(captures.families(target.settings.address))
        if with_process:
            exposed.append(health.build_info())
        body, content_type = exposition.render(exposed, environ.get("HTTP_ACCEPT", ""),
                                               process_registry if with_process else None)
        headers = [("Vary", "Accept-Encoding")]
        if accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", "")):
            body = gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        return respond(start_response, "200 OK", body, content_type, headers)

    def capture_routes(environ, start_response, path: str):
        if not captures.enabled:
            return respond(start_response, "404 Not Found", "captures are off (--capture.dir)\n")
        if path == "/capture":
            if environ.get("REQUEST_METHOD") != "POST":
                return respond(start_response, "405 Method Not Allowed", "POST an Alertmanager webhook\n",
                               headers=[("Allow", "POST")])
            length = int(environ.get("CONTENT_LENGTH") or 0)
            try:  # a body over the webhook's bound is refused unread (413)
                answer = captures.webhook(environ["wsgi.input"].read(min(length, webhook.MAX_BYTES + 1)))
            except webhook.CaptureError as exc:
                return respond(start_response, exc.status, f"{exc}\n", headers=exc.headers)
            return respond(start_response, "202 Accepted", json.dumps(answer.to_json()) + "\n", "application/json")
        listing = captures.store.list()
        if path == "/api/captures":
            return respond(start_response, "200 OK", json.dumps({"captures": listing}, indent=1) + "\n",
                           "application/json")
        if path == "/captures":
            rows = "\n".join(_capture_row(c) for c in listing)
            mode = "statements kept" if config.capture.query_text else "statements reduced to digests"
            return respond(start_response, "200 OK", CAPTURES_PAGE.format(rows=rows, query_text=mode),
                           "text/html; charset=utf-8")
        capture_id, _, name = path[len("/captures/"):].partition("/")
        data = captures.store.file(capture_id, name)
        if data is None:
            return respond(start_response, "404 Not Found", "no such capture file\n")
        return respond(start_response, "200 OK", data, "application/json" if name.endswith(".json")
                       else "text/plain; charset=utf-8")

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "/")
        if path == "/capture" or path in ("/captures", "/api/captures") or path.startswith("/captures/"):
            return capture_routes(environ, start_response, path)
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return respond(start_response, "405 Method Not Allowed", "Only GET\n", headers=[("Allow", "GET, HEAD")])
        if path == config.telemetry_path:
            return metrics(environ, start_response, targets.default, with_process=True)
        if path == "/probe":
            query = parse_qs(environ.get("QUERY_STRING", ""))
            target = (query.get("target") or [""])[0]
            if not target:
                return respond(start_response, "400 Bad Request", "probe needs ?target=HOST:PORT\n")
            auth_module = (query.get("auth_module") or [None])[0]
            try:
                probed = targets.for_probe(probe_connection(config, target, auth_module), auth_module)
            except ProbeError as exc:
                return respond(start_response, exc.status, f"{exc}\n")
            except TooManyTargets as exc:
                return respond(start_response, "503 Service Unavailable", f"{exc}\n", headers=[("Retry-After", "5")])
            return metrics(environ, start_response, probed, with_process=False)
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


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header takes gzip: named, or else ``*``, with a quality above zero."""
    qualities = {}
    for item in accept_encoding.split(","):
        coding, *params = item.split(";")
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        qualities[coding.strip().lower()] = quality
    return qualities.get("gzip", qualities.get("*", 0.0)) > 0


def _capture_row(capture: dict) -> str:
    files = [f for snapshot in capture.get("snapshots", []) for f in snapshot.get("files", [])] + ["capture.json"]
    links = " ".join(f'<a href="/captures/{quote(capture["id"])}/{quote(f)}">{html.escape(f)}</a>' for f in files)
    alerts = ", ".join(sorted({a["labels"].get("alertname", "?") for a in capture.get("alerts", [])}))
    cells = (capture.get("started", ""), capture.get("instance", ""), alerts, str(len(capture.get("snapshots", []))))
    return ("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + f"<td>{links}</td>"
            f"<td>{html.escape('; '.join(capture.get('errors', [])))}</td></tr>")
