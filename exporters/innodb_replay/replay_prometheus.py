"""The replay Prometheus: a Prometheus that serves one imported data directory and scrapes nothing, started
in the background and known by its pid file, and the recording rules a bundle lacks computed into it.

``import`` leaves it running for the dashboards (``innodb-replay stop`` ends it); ``report`` runs one of its
own on a scratch directory for as long as it reads.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile

from innodb_bundle.manifest import Manifest

from .importer import (ReplayImportError, backfill_rules, metric_names, missing_rule_runs, serves, wait_ready,
                       write_rules)
from .processes import Process

HOME_SUFFIX = ".prometheus"  # its pid file and log: a directory of its own beside the data
HOME_FILES = {"prometheus.pid", "prometheus.log"}


def home(data_dir: str) -> str:
    """The replay Prometheus' own directory: .stack/replay/data.prometheus for the default data directory,
    where ./innodb-stack down finds its pid file too."""
    return os.path.abspath(data_dir) + HOME_SUFFIX


def process(data_dir: str) -> Process:
    where = home(data_dir)
    return Process(os.path.join(where, "prometheus.pid"), os.path.join(where, "prometheus.log"))


def check_home(data_dir: str) -> None:
    """The replay Prometheus writes only into a directory of its own, which holds nothing it did not create."""
    where = home(data_dir)
    if os.path.lexists(where) and (not os.path.isdir(where) or os.path.islink(where)
                                   or set(os.listdir(where)) - HOME_FILES):
        raise ReplayImportError(f"{where} exists and holds what innodb-replay did not put there: "
                                "give another --data-dir")
    if process(data_dir).pid():
        raise ReplayImportError(f"a replay Prometheus already serves {data_dir}: innodb-replay stop --data-dir "
                                f"{data_dir} first")


def check_port(port: int) -> None:
    """What answers on a taken port would be another Prometheus, with other data."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As Prometheus binds: a port whose last connections still wait out TIME_WAIT is free to it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise ReplayImportError(f"127.0.0.1:{port} is in use (another replay Prometheus?): give --port, or "
                                    "stop what listens there") from None


def free_port() -> int:
    """A port nothing listens on now, for a replay Prometheus nobody else is told about."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(data_dir: str, port: int) -> str:
    """A Prometheus serving ``data_dir`` only (an empty configuration: no scraping), in the background;
    returns its URL."""
    binary = shutil.which("prometheus")
    if not binary:
        raise ReplayImportError("prometheus is not installed (apt-get install prometheus)")
    check_home(data_dir)
    check_port(port)
    os.makedirs(home(data_dir), mode=0o755, exist_ok=True)
    proc = process(data_dir)
    proc.start(
        [binary, f"--config.file={os.devnull}", f"--storage.tsdb.path={os.path.abspath(data_dir)}",
         "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"])
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, alive=lambda: proc.pid() is not None)
    if not serves(url, data_dir):
        proc.stop()
        raise ReplayImportError(f"the Prometheus answering at {url} does not serve {data_dir}: give --port")
    return url


def stop(data_dir: str) -> bool:
    return process(data_dir).stop(timeout=30)


def compute_missing_rules(url: str, rules: list[dict], manifest: Manifest, data_dir: str, port: int,
                          promtool_timeout: float) -> str:
    """Compute over the bundle's window the recording rules whose series the replay Prometheus lacks, run by
    run (a line on standard error each), restarting it after each run that wrote blocks, so that the next
    run and the caller read them; returns its URL."""
    with tempfile.TemporaryDirectory(prefix="innodb-replay-rules-") as scratch:
        runs = missing_rule_runs(rules, metric_names(url))
        for number, run in enumerate(runs, start=1):
            path = write_rules(run, os.path.join(scratch, f"run{number}.yml"))
            blocks = backfill_rules(url, path, manifest, data_dir, promtool_timeout)
            names = ", ".join(sorted({r["record"] for r in run}))
            print(f"recording rules the bundle lacks, run {number} of {len(runs)}: {names} "
                  f"(TSDB blocks written: {blocks})", file=sys.stderr, flush=True)
            if blocks:
                stop(data_dir)  # it loads the new blocks on start
                url = start(data_dir, port)
    return url
