"""Log lines in the Prometheus exporters' style: logfmt (default) or JSON, one event per line."""

from __future__ import annotations

import json
import logging
import sys
import time

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _fields(record: logging.LogRecord) -> dict[str, str]:
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
    fields = {"ts": ts, "level": record.levelname.lower().replace("warning", "warn"), "msg": record.getMessage()}
    fields.update({k: str(v) for k, v in vars(record).items() if k not in _STANDARD})
    if record.exc_info:
        fields["err"] = logging.Formatter().formatException(record.exc_info)
    return fields


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        parts = []
        for key, value in _fields(record).items():
            if value == "" or any(c in value for c in ' "=\n\t'):
                value = json.dumps(value)
            parts.append(f"{key}={value}")
        return " ".join(parts)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record))


def setup(level: str = "info", fmt: str = "logfmt") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else LogfmtFormatter())
    root = logging.getLogger("innodb_exporter")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
