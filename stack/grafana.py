"""Grafana in the native stack, where a grafana binary is installed (Debian does not package it).

It runs with the same provisioning as the compose service (provisioning/grafana), reading the
dashboards from the repository and Prometheus from the native stack.
"""

from __future__ import annotations

import os

from .settings import PROVISIONING, REPO, Settings


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

