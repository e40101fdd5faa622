"""Grafana in the native stack, where a grafana binary is installed (Debian does not package it).

It runs with the same provisioning as the compose service (provisioning/grafana), reading the
dashboards from the repository and Prometheus from the native stack. `up` says when the binary is older
than the oldest Grafana the dashboards work with (dashboards/grafana_version.py): such a Grafana starts, and
draws some panels blank without an error.
"""

from __future__ import annotations

import os
import re
import subprocess

from dashboards.grafana_version import OLDEST, OLDEST_TEXT

from .settings import PROVISIONING, REPO, Settings

# What `-v` prints: "grafana version 9.4.0-pre" (the grafana binary, Grafana 9.2+), "Version 9.3.2 (commit:
# 2ba6c7e4e0, branch: HEAD)" (grafana-server; Grafana's pkg/cmd/grafana-server/commands/cli.go).
VERSION = re.compile(r"(?i)\bversion\s+v?(\d+)\.(\d+)")


def version(binary: str) -> tuple[int, int] | None:
    """(major, minor) of the Grafana ``binary`` is, as its -v says; None when it says none."""
    try:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = VERSION.search(out.stdout + "\n" + out.stderr)
    return (int(found[1]), int(found[2])) if found else None


def version_problem(binary: str) -> str | None:
    """Why ``binary`` may not draw the dashboards right (too old, or silent about its version); None when fine."""
    found = version(binary)
    if found is None:
        return (f"{binary} -v names no version: the dashboards need Grafana {OLDEST_TEXT} or newer, and an older one "
                "draws some panels blank")
    if found < OLDEST:
        return (f"{binary} is Grafana {found[0]}.{found[1]}, older than {OLDEST_TEXT}, the oldest the dashboards work "
                f"with: some panels will be blank (the Overview's first among them); install Grafana {OLDEST_TEXT} or "
                "newer")
    return None


def command(settings: Settings, binary: str, admin_password: str) -> tuple[list[str], dict]:
    """(argv, environment) to start Grafana with the stack's provisioning."""
    data = settings.path("grafana")
    os.makedirs(data, exist_ok=True)
    env = dict(os.environ,
               PROMETHEUS_URL=settings.url("prometheus"), REPLAY_PROMETHEUS_URL=settings.url("replay_prometheus"),
               STORE_URL=settings.store_url(),
               DASHBOARDS_DIR=os.path.join(REPO, "dashboards"),
               GF_PATHS_PROVISIONING=os.path.join(PROVISIONING, "grafana"),
               GF_PATHS_DATA=data, GF_PATHS_LOGS=os.path.join(data, "log"),
               GF_PATHS_PLUGINS=os.path.join(data, "plugins"),
               GF_SERVER_HTTP_ADDR=settings.bind, GF_SERVER_HTTP_PORT=str(settings.ports["grafana"]),
               GF_SECURITY_ADMIN_PASSWORD=admin_password,
               GF_USERS_ALLOW_SIGN_UP="false", GF_ANALYTICS_REPORTING_ENABLED="false",
               GF_ANALYTICS_CHECK_FOR_UPDATES="false")
    homepath = next((p for p in ("/usr/share/grafana", os.path.join(os.path.dirname(os.path.dirname(binary)), "share",
                                                                    "grafana")) if os.path.isdir(p)), None)
    argv = [binary] + (["server"] if os.path.basename(binary) == "grafana" else [])
    if homepath:
        argv.append(f"--homepath={homepath}")
    return argv, env

