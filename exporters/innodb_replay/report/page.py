"""The report as one HTML file: a summary, a timeline per server, the charts, the evidence, what to read next
and how it was made. Self-contained (styles inline, drawings inline as SVG, no script, nothing fetched), so
that it reads offline and prints; every text from the data goes through ``escape``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from html import escape as _escape

from innodb_tuning import CLASS_NAMES
from signals import bottleneck as b
from signals.units import format_value

from . import runbooks, svg
from .charts import Chart
from .evidence import Capture
from .incident import Incident, Server

CLASS_KEYS = {c.code: c.key for c in b.CLASSES + (b.HEALTHY_CLASS, b.UNKNOWN_CLASS)}
ATTACH_BYTES = 2 * 1024 * 1024  # raw texts carried into the file, in all
MAX_CAPTURES = 50  # captures shown (a bundle can hold thousands of tiny ones): the file stays readable
MAX_SNAPSHOTS = 200  # rows of a capture's snapshot table (record --texts keeps one a minute)


def escape(value) -> str:
    """Text from the data, for HTML: markup escaped, and the control characters HTML does not allow gone."""
    text = str(value)
    text = "".join(ch if ch in "\n\t" or not (ord(ch) < 32 or 127 <= ord(ch) < 160 or 0xD800 <= ord(ch) < 0xE000
                                                 or ch in "\ufffe\uffff") else "\ufffd" for ch in text)
    return _escape(text)


@dataclass
class Meta:
    """What the report says of itself."""

    source: str  # the bundle or the Prometheus it was made from (never with credentials)
    tool: str
    classes_how: str  # how the bottleneck classes were obtained
    notes: list[str] = field(default_factory=list)
    styles: dict[int, tuple[str, str]] = field(default_factory=dict)  # class code -> (name, colour)
    attach_bytes: int = ATTACH_BYTES


def _time(ms: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + " UTC"


def _class(meta: Meta, code: float) -> tuple[str, str]:
    code = int(code)
    name = CLASS_NAMES.get(CLASS_KEYS.get(code, ""), f"class {code}")
    return meta.styles.get(code, (name, svg.GREY))


def render(incident: Incident, captures: list[Capture], sections: dict[str, runbooks.Section], meta: Meta) -> str:
    servers = ", ".join(s.instance for s in incident.servers)
    title = f"Incident report: {servers}, {_time(incident.start_ms)} to {_time(incident.end_ms)}"
    body = [
        "<header>", f"<h1>Incident report: {escape(servers)}</h1>",
        f'<p class="meta">{escape(_time(incident.start_ms))} to {escape(_time(incident.end_ms))} '
        f"({escape(svg.span_text(incident.end_ms - incident.start_ms))}). From {escape(meta.source)}; made by "
        f"{escape(meta.tool)} on {escape(_time(time.time() * 1000))}. All times UTC.</p>",
        '<nav><a href="#summary">Summary</a> · <a href="#timeline">Timeline</a> · <a href="#charts">Charts</a> · '
        '<a href="#evidence">Evidence</a> · <a href="#next">What to read next</a> · '
        '<a href="#method">How this report was made</a></nav>', "</header>",
        _summary(incident, captures, meta), _timeline(incident, captures, meta), _charts(incident, captures),
        _evidence(captures, meta), _next(incident, sections, meta), _method(incident, meta),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{escape(title)}</title>\n"
            f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")


# --- 1. summary ----------------------------------------------------------------------------------

def class_totals(server: Server) -> list[tuple[int, int, int, int, int]]:
    """(code, ms held, spans, first ms, last ms) of each class, in the order they first held."""
    totals: dict[int, list[int]] = {}
    for span in server.classes:
        entry = totals.setdefault(int(span.value), [0, 0, span.start_ms, span.end_ms])
        entry[0] += span.ms
        entry[1] += 1
        entry[3] = span.end_ms
    return [(code, *entry) for code, entry in sorted(totals.items(), key=lambda item: item[1][2])]


def _summary(incident: Incident, captures: list[Capture], meta: Meta) -> str:
    window = incident.end_ms - incident.start_ms
    out = ['<section id="summary"><h2>1. Summary</h2>', '<table class="facts">',
           f"<tr><th>Window</th><td>{escape(_time(incident.start_ms))} to {escape(_time(incident.end_ms))} "
           f"({escape(svg.span_text(window))})</td></tr>",
           f"<tr><th>Servers</th><td>{escape(', '.join(s.instance for s in incident.servers))}</td></tr>",
           f"<tr><th>Source</th><td>{escape(meta.source)}</td></tr>", "</table>"]
    for server in incident.servers:
        out.append(f"<h3>{escape(server.instance)}</h3>")
        out.append("<h4>What limited it</h4>")
        totals = class_totals(server)
        if not totals:
            out.append(f'<p class="none">No bottleneck classes for this server in the window: {escape(meta.classes_how)}'
                       "</p>")
        else:
            out.append("<table><tr><th>Class, in the order it first held</th><th>Held for</th><th>Share of the window"
                       "</th><th>Times</th><th>First</th><th>Last until</th></tr>")
            for code, ms, count, first, last in totals:
                name, colour = _class(meta, code)
                out.append(f'<tr class="class"><td><span class="swatch" style="background:{escape(colour)}"></span>{escape(name)}'
                           f'</td><td data-ms="{ms}">{escape(svg.span_text(ms))}</td><td>{_share(ms, window)}</td><td>{count}</td>'
                           f"<td>{escape(_time(first))}</td><td>{escape(_time(last))}</td></tr>")
            out.append("</table>")
        out.append("<h4>Alerts that fired</h4>")
        if not server.alerts:
            how = ("the Prometheus fired none for this server" if incident.alerts_from == "ALERTS"
                   else "none of the alerting rules evaluated over the window fires for this server")
            out.append(f'<p class="none">None: {escape(how)}.</p>')
        else:
            out.append("<table><tr><th>Alert</th><th>Severity</th><th>First fired</th><th>Firing for</th>"
                       "<th>Times</th><th>Last resolved</th></tr>")
            for alert in server.alerts:
                labels = ", ".join(f"{k}={v}" for k, v in sorted(alert.labels.items()))
                last = alert.spans[-1].end_ms
                resolved = "still firing at the window's end" if last >= incident.end_ms else _time(last)
                out.append(f'<tr class="alert"><td><a href="#runbook-{_anchor(alert.name)}">{escape(alert.name)}</a>'
                           f'{f" <small>{escape(labels)}</small>" if labels else ""}</td>'
                           f'<td><span class="level {escape(alert.severity)}">{escape(alert.severity or "?")}</span></td>'
                           f"<td>{escape(_time(alert.spans[0].start_ms))}</td><td data-ms=\"{alert.total_ms}\">"
                           f"{escape(svg.span_text(alert.total_ms))}</td><td>{len(alert.spans)}</td>"
                           f"<td>{escape(resolved)}</td></tr>")
            out.append("</table>")
        out.append("<h4>Headline peaks</h4><table><tr><th>Measure</th><th>Highest</th><th>At</th>"
                   "<th>Alert threshold</th></tr>")
        for peak in server.peaks:
            value = format_value(peak.unit, peak.value)
            if peak.peak.per_hour and peak.value is not None:
                value += f" ({format_value('short', peak.value * 3600)}/h)"
            which = f" <small>{escape(peak.legend)}</small>" if peak.legend and len(
                _chart_of(server, peak.peak.chart).lines) > 1 else ""
            at = _time(peak.at_s * 1000) if peak.at_s is not None else "no data"
            limits = []
            for threshold in peak.thresholds:
                crossed = peak.value is not None and peak.value > threshold.value
                limits.append(f'<span class="{"crossed" if crossed else ""}">{escape(threshold.level)} '
                              f"{escape(format_value(peak.unit, threshold.value))}{' (crossed)' if crossed else ''}</span>")
            out.append(f'<tr><td><a href="#chart-{_anchor(server.instance)}-{peak.peak.chart}">'
                       f"{escape(peak.peak.title)}</a></td><td>{escape(value)}{which}</td><td>{escape(at)}</td>"
                       f"<td>{', '.join(limits) or '–'}</td></tr>")
        out.append("</table>")
        if server.changes:
            out.append("<h4>Settings changed</h4><ul>")
            for change in server.changes:
                restart = " (with a restart)" if change.restart == "1" else ""  # as metrics/settings.py labels it
                out.append(f"<li>{escape(_time(change.at_ms))}: <code>{escape(change.setting)}</code> from "
                           f"{escape(change.before)} to {escape(change.after)}{escape(restart)}</li>")
            out.append("</ul>")
        own = [c for c in captures if _belongs(c, server.instance)]
        count = len(own) or len(server.captures_ms)
        if count:
            out.append(f'<p>Evidence captured: {count} time{"s" if count > 1 else ""} '
                       f'(<a href="#evidence">section 4</a>).</p>')
    out.append("</section>")
    return "\n".join(out)


def _share(part: int, whole: int) -> str:
    share = part / whole if whole else 0.0
    return "&lt;1%" if 0 < share < 0.005 else f"{share:.0%}"


def _chart_of(server: Server, key: str) -> Chart:
    return next(d.chart for d in server.charts if d.chart.key == key)


def _anchor(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower())


def _belongs(capture: Capture, instance: str) -> bool:
    return capture.recorded or not capture.instance or capture.instance == instance


# --- 2. timeline ---------------------------------------------------------------------------------

def _timeline(incident: Incident, captures: list[Capture], meta: Meta) -> str:
    start, end = incident.start_ms / 1000, incident.end_ms / 1000
    out = ['<section id="timeline"><h2>2. Timeline</h2>',
           "<p>Per server: the class that limited it (the first of the tuning procedure's order that held, at the "
           "scale of a pixel), each alert while it fired, the evidence captures and the settings changes. Hover a "
           "span or a mark for its times.</p>"]
    for server in incident.servers:
        rows = []
        if server.classes:
            spans = svg.pixels([(s.start_ms / 1000, s.end_ms / 1000, int(s.value)) for s in server.classes], start, end,
                               rank=lambda code: code if code > 0 else 100 - code)
            drawn = []
            for s, e, code in spans:
                name, colour = _class(meta, code)
                drawn.append((s, e, colour, f"{name}: {svg.clock(s)} to {svg.clock(e)} ({svg.span_text((e - s) * 1000)})"))
            rows.append(("Limited by", drawn))
        names = [alert.name for alert in server.alerts]
        for alert in server.alerts:
            colour = svg.LEVELS.get(alert.severity, svg.GREY)
            spans = svg.pixels([(s.start_ms / 1000, s.end_ms / 1000, 1) for s in alert.spans], start, end, rank=int)
            label = f"{alert.name} ({alert.severity})" if names.count(alert.name) > 1 else alert.name
            rows.append((label, [(s, e, colour, f"{alert.name} ({alert.severity}) firing: {svg.clock(s)} "
                                                             f"to {svg.clock(e)}") for s, e, _ in spans]))
        marks = []
        own = [c for c in captures if _belongs(c, server.instance) and not c.recorded and c.started]
        points = [(_iso_seconds(c.started), f"evidence captured {c.started}: {', '.join(a for a, _ in c.alerts)}")
                  for c in own if start <= (_iso_seconds(c.started) or -1) <= end]
        if not points:
            points = [(ms / 1000, f"evidence captured {_time(ms)}") for ms in server.captures_ms]
        if points:
            marks.append(("Evidence", svg.CAPTURE_COLOUR, points))
        if server.changes:
            marks.append(("Settings", svg.CHANGE_COLOUR, [(c.at_ms / 1000, f"{c.setting}: {c.before} to {c.after}")
                                                          for c in server.changes]))
        out.append(f"<h3>{escape(server.instance)}</h3>")
        if not rows and not marks:
            out.append('<p class="none">Nothing to draw: no classes, alerts, captures or settings changes.</p>')
            continue
        out.append(svg.band(rows, marks, start, end))
        seen = sorted({int(s.value) for s in server.classes}, key=lambda code: code if code > 0 else 100 - code)
        if seen:
            out.append('<p class="legend">' + " ".join(
                f'<span><span class="swatch" style="background:{escape(_class(meta, code)[1])}"></span>'
                f"{escape(_class(meta, code)[0])}</span>" for code in seen) + "</p>")
    out.append("</section>")
    return "\n".join(out)


def _iso_seconds(text: str) -> float | None:
    import datetime
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (TypeError, ValueError):
        return None


# --- 3. charts -----------------------------------------------------------------------------------

def _charts(incident: Incident, captures: list[Capture]) -> str:
    start, end = incident.start_ms / 1000, incident.end_ms / 1000
    out = ['<section id="charts"><h2>3. Charts</h2>']
    for server in incident.servers:
        step = server.charts[0].step_s if server.charts else 0
        out.append(f"<h3>{escape(server.instance)}</h3>")
        out.append("<p>The key panels of the dashboards, from the same signals. Dashed lines: the alerts' thresholds; "
                   "dotted: evidence captures (purple) and settings changes (green). "
                   + (f"Each point is the highest value in its {escape(svg.span_text(step * 1000))}, so that no spike "
                      "falls between two points." if step > 15 else "") + "</p>")
        marks = [(ms / 1000, "capture", f"evidence captured {_time(ms)}") for ms in server.captures_ms]
        marks += [(c.at_ms / 1000, "change", f"{c.setting}: {c.before} to {c.after}") for c in server.changes]
        for data in server.charts:
            chart = data.chart
            thresholds = [(t.value, t.level, f"{t.alert} {t.level} {format_value(chart.unit, t.value)}")
                          for t in chart.thresholds]
            out.append(f'<figure id="chart-{_anchor(server.instance)}-{chart.key}"><figcaption>{escape(chart.title)}'
                       "</figcaption>")
            if data.series:
                out.append(svg.chart([(d.legend, d.points) for d in data.series], chart.unit, start, end, data.step_s,
                                     thresholds, marks))
                out.append('<p class="legend">' + " ".join(
                    f'<span><span class="swatch" style="background:{svg.PALETTE[n % len(svg.PALETTE)]}"></span>'
                    f"{escape(d.legend)} <small>max {escape(format_value(chart.unit, max(v for _, v in d.points)))}</small>"
                    f"</span>" for n, d in enumerate(data.series)) + "</p>")
            else:
                out.append('<p class="none">No data for this server in the window'
                           + (f": {escape('; '.join(data.errors))}" if data.errors else "") + ".</p>")
            out.append(f'<p class="about">{escape(chart.about)}</p></figure>')
    out.append("</section>")
    return "\n".join(out)


# --- 4. evidence ---------------------------------------------------------------------------------

def _evidence(captures: list[Capture], meta: Meta) -> str:
    out = ['<section id="evidence"><h2>4. Evidence</h2>']
    if not captures:
        out.append('<p class="none">The source holds no evidence captures: <code>innodb-replay export --captures '
                   "URL</code> keeps those of the window in the bundle (<code>record --texts</code> keeps status "
                   "texts), and <code>report --captures URL</code> reads them off the exporter.</p></section>")
        return "\n".join(out)
    budget = meta.attach_bytes
    for capture in captures[:MAX_CAPTURES]:
        budget = _capture(out, capture, budget)
    if len(captures) > MAX_CAPTURES:
        out.append(f'<p class="none">{len(captures) - MAX_CAPTURES} more captures are in the source, not in this file.'
                   "</p>")
    out.append("</section>")
    return "\n".join(out)


def _capture(out: list[str], capture: Capture, budget: int) -> int:
    if capture.recorded:
        out.append(f'<article id="capture-{_anchor(capture.id)}"><h3>Status texts recorded '
                   f"({len(capture.snapshots)}, from {escape(capture.started)})</h3>")
    else:
        alerts = ", ".join(f"{a} ({s})" if s else a for a, s in capture.alerts) or "no alert named"
        out.append(f'<article id="capture-{_anchor(capture.id)}"><h3>Captured {escape(capture.started or capture.id)} '
                   f"on {escape(capture.instance or '?')}</h3><p>For: {escape(alerts)}. {len(capture.snapshots)} "
                   f"snapshot{'s' if len(capture.snapshots) != 1 else ''}"
                   + (", statements kept as digests" if capture.query_text is False else "") + ".</p>")
    for problem in capture.problems + capture.errors:
        out.append(f'<p class="none">{escape(problem)}</p>')
    rows, where = capture.longest()
    out.append("<h4>Longest-running transactions</h4>")
    if rows:
        out.append(f"<p><small>From {escape(where)}.</small></p><table><tr><th>Transaction</th><th>Age</th>"
                   "<th>Thread</th><th>State</th><th>Statement</th></tr>")
        for t in rows:
            statement = getattr(t, "query", "")
            out.append(f"<tr><td><code>{escape(t.trx_id)}</code></td><td>{escape(format_value('s', t.seconds))}</td>"
                       f"<td>{escape(t.thread_id if t.thread_id is not None else '?')}</td><td>{escape(t.state)}</td>"
                       f"<td><code>{escape(statement)}</code></td></tr>")
        out.append("</table>")
    else:
        out.append('<p class="none">None listed.</p>')
    out.append("<h4>Latches with the most threads waiting</h4>")
    latches = capture.latches()
    if latches:
        out.append("<table><tr><th>Latch</th><th>Threads waiting</th><th>Snapshot</th></tr>" + "".join(
            f"<tr><td><code>{escape(latch)}</code></td><td>{n}</td><td>{number}</td></tr>"
            for latch, n, number in latches) + "</table>")
    else:
        sync_array = any(x.status and x.status.semaphores and x.status.semaphores.reservation_count is not None
                         for x in capture.snapshots)
        out.append('<p class="none">' + ("No thread waited for a latch." if sync_array else
                                        "None listed: this server prints no sync array (MariaDB 10.6+); its latch "
                                        "waits are in performance_schema, which the live exporter reads.") + "</p>")
    out.append("<h4>Pending IO, snapshot by snapshot</h4>" + _pending(capture))
    out.append("<h4>Latest deadlock</h4>" + _deadlock(capture))
    first = next((x for x in capture.snapshots if x.findings), None)
    if first:
        verdict = {True: "yes", False: "no", None: "cannot tell"}
        out.append(f"<h4>What snapshot {first.number} alone says</h4><table><tr><th>Class</th><th>Holds</th>"
                   "<th>Evidence</th></tr>" + "".join(
                       f"<tr><td>{escape(f.name)}</td><td>{verdict[f.holds]}</td><td>{escape(f.evidence)}</td></tr>"
                       for f in first.findings) + "</table>")
    out.append("<h4>The raw texts</h4>")
    for name, text in capture.files:
        size = len(text.encode("utf-8", "replace"))
        if size <= budget:
            budget -= size
            out.append(f"<details><summary><code>{escape(name)}</code> ({escape(format_value('bytes', size))})</summary>"
                       f"<pre>{escape(text)}</pre></details>")
        else:
            out.append(f'<p class="none"><code>{escape(name)}</code> ({escape(format_value("bytes", size))}) is left out of '
                       "this file (its budget of raw text is spent): it is in the bundle, texts/.</p>")
    out.append("</article>")
    return budget


def _pending(capture: Capture) -> str:
    rows = []
    for x in capture.snapshots[:MAX_SNAPSHOTS]:
        status = x.status
        if status is None:
            continue
        bp, io = status.buffer_pool, status.file_io
        fsyncs = None
        if io is not None:
            fsyncs = io.pending_fsyncs if io.pending_fsyncs is not None else (
                None if io.pending_fsyncs_log is None else f"log {io.pending_fsyncs_log}, buffer pool "
                                                           f"{io.pending_fsyncs_buffer_pool}")
        writes = None if bp is None or bp.pending_writes_lru is None else (
            f"LRU {bp.pending_writes_lru}, flush list {bp.pending_writes_flush_list}"
            + (f", single page {bp.pending_writes_single_page}" if bp.pending_writes_single_page is not None else ""))
        history = status.transactions.history_list_length if status.transactions else None
        waiting = len(status.semaphores.waits) if status.semaphores else None
        at = _iso_seconds(x.at)
        rows.append(f"<tr><td>{x.number}</td><td>{escape(svg.clock(at, seconds_too=True) if at else x.at)}</td>"
                    f"<td>{_or_dash(bp and bp.pending_reads)}</td>"
                    f"<td>{_or_dash(writes)}</td><td>{_or_dash(io and io.pending_normal_reads)}/"
                    f"{_or_dash(io and io.pending_normal_writes)}</td><td>{_or_dash(fsyncs)}</td>"
                    f"<td>{_or_dash(history)}</td><td>{_or_dash(waiting)}</td></tr>")
    if not rows:
        return '<p class="none">No status text in this capture.</p>'
    more = len(capture.snapshots) - MAX_SNAPSHOTS
    return ("<table><tr><th>Snapshot</th><th>At</th><th>Pending reads</th><th>Pending writes</th><th>Pending aio "
            "reads/writes</th><th>Pending fsyncs</th><th>History list</th><th>Threads waiting for a latch</th></tr>"
            + "".join(rows) + "</table>" + (f'<p class="none">{more} more snapshots, not listed.</p>' if more > 0 else ""))


def _or_dash(value) -> str:
    return "–" if value is None else escape(value)


def _deadlock(capture: Capture) -> str:
    deadlock, number = capture.deadlock()
    if deadlock is None:
        return '<p class="none">No deadlock since the server started (none in LATEST DETECTED DEADLOCK).</p>'
    out = [f"<p>Detected {escape(deadlock.when or '?')} (snapshot {number}). Read from LATEST DETECTED DEADLOCK, which "
           "holds the deadlocked statements: their text can imitate its lines.</p>",
           "<table><tr><th></th><th>Transaction</th><th>Active</th><th>Thread</th><th>Statement</th><th>Held</th>"
           "<th>Waited for</th></tr>"]
    for t in deadlock.transactions:
        rolled = " <strong>rolled back</strong>" if deadlock.rolled_back == t.number else ""
        waited = t.waits_for + [f"behind {c}" for c in t.conflicts_with]
        out.append(f"<tr><td>({t.number}){rolled}</td><td><code>{escape(t.trx_id)}</code></td>"
                   f"<td>{escape(format_value('s', t.seconds))}</td><td>{_or_dash(t.thread_id)}</td>"
                   f"<td><code>{escape(t.statement)}</code></td><td>{'<br>'.join(escape(x) for x in t.holds) or '–'}</td>"
                   f"<td>{'<br>'.join(escape(x) for x in waited) or '–'}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


# --- 5. what to read next ------------------------------------------------------------------------

def _next(incident: Incident, sections: dict[str, runbooks.Section], meta: Meta) -> str:
    out = ['<section id="next"><h2>5. What to read next</h2>',
           "<p>The runbook section of each class that limited a server and of each alert that fired, in the order "
           "they first occurred; each heading links to the runbook where it is published.</p>"]
    wanted: list[tuple[float, str, str]] = []  # (first ms, heading, what)
    for server in incident.servers:
        for code, _, _, first, _ in class_totals(server):
            key = CLASS_KEYS.get(code)
            c = next((c for c in b.CLASSES + (b.UNKNOWN_CLASS,) if c.key == key), None)
            if c is not None:
                wanted.append((first, b.runbook_heading(c), "class"))
        wanted += [(a.spans[0].start_ms, a.name, "alert") for a in server.alerts]
    done = set()
    for _, heading, what in sorted(wanted):
        if heading in done:
            continue
        done.add(heading)
        section = sections.get(heading)
        anchor = f"runbook-{_anchor(heading)}" if what == "class" else f"runbook-{_anchor(heading)}"
        if section is None:
            out.append(f'<h3 id="{anchor}">{escape(heading)}</h3><p class="none">docs/runbooks.md of this checkout '
                       "has no section of this name.</p>")
            continue
        out.append(f'<h3 id="{anchor}"><a href="{escape(section.url)}">{escape(heading)}</a></h3>'
                   f'<div class="runbook">{runbooks.html(section.text)}</div>')
    if not done:
        out.append('<p class="none">No class other than Healthy and no alert occurred.</p>')
    out.append("</section>")
    return "\n".join(out)


# --- 6. how it was made --------------------------------------------------------------------------

def _method(incident: Incident, meta: Meta) -> str:
    alerts = ("the Prometheus's own ALERTS series: what it fired, at its evaluations" if incident.alerts_from == "ALERTS"
              else "computed here from the alerting rules, each expression evaluated every 15 s over the window and "
                   "fired after its 'for' as Prometheus fires it (the source has no ALERTS series)")
    items = [f"Bottleneck classes: {meta.classes_how}.", f"Alerts: {alerts}.",
             "Charts: the signals the dashboards draw (signals/), with the thresholds of signals/config.py.",
             "Evidence: each status text read by the parser of innodb-exporter parse, one text as one output."]
    out = ['<section id="method"><h2>6. How this report was made</h2><ul>']
    out += [f"<li>{escape(item)}</li>" for item in items + incident.notes + meta.notes]
    out.append("</ul></section>")
    return "\n".join(out)


STYLE = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #1f2328; margin: 0 auto; max-width: 980px; padding: 16px 24px 48px; }
h1 { font-size: 24px; margin: 8px 0 4px; } h2 { font-size: 20px; border-bottom: 2px solid #d0d7de;
     padding-bottom: 4px; margin-top: 36px; } h3 { font-size: 16px; margin: 22px 0 6px; }
h4 { font-size: 14px; margin: 16px 0 6px; color: #424a53; }
.meta, nav { color: #59636e; } nav a { color: #0969da; }
table { border-collapse: collapse; margin: 4px 0 10px; width: 100%; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; } table.facts th { width: 110px; }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere;
      max-height: 480px; overflow-y: auto; }
td code { overflow-wrap: anywhere; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 5px;
          vertical-align: -1px; }
.legend { font-size: 12px; margin: 2px 0 0 76px; } .band + .legend { margin-left: 236px; }
.legend > span { margin-right: 14px; white-space: nowrap; }
.none { color: #59636e; font-style: italic; }
.about { color: #59636e; font-size: 12px; margin: 2px 0 0 76px; }
.level { padding: 0 6px; border-radius: 8px; color: #fff; background: #8c959f; }
.level.warning { background: #d4730b; } .level.critical { background: #cf222e; } .level.info { background: #3b73d6; }
.crossed { color: #cf222e; font-weight: 600; }
figure { margin: 14px 0 18px; break-inside: avoid; } figcaption { font-weight: 600; margin-bottom: 2px; }
svg text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #424a53; }
svg .grid { stroke: #eaeef2; } svg .axis { stroke: #8c959f; } svg .lane { fill: #f6f8fa; }
article { border-top: 1px solid #d0d7de; margin-top: 18px; }
details { margin: 4px 0; } summary { cursor: pointer; }
.runbook { border-left: 3px solid #d0d7de; padding-left: 12px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  section { break-before: page; } section#summary { break-before: auto; }
  nav { display: none; } pre { max-height: none; } a { color: inherit; text-decoration: none; }
  table, figure, svg { break-inside: avoid; }
}
@page { size: A4; margin: 12mm; }
"""
