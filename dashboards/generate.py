"""Write the dashboards: ``python -m dashboards.generate`` (from the repository root).

Each module of this package builds one dashboard; its JSON goes to grafana/<uid>.json (the folder
Grafana's provisioning reads), with sorted keys, stable uids and panel ids, so that a regeneration that
changes nothing changes no byte. index.json lists the data source uids and the dashboards in the order
the tuning procedure reads them (the replay importer reads it); it stays out of grafana/, where
Grafana would take it for a dashboard without a title and log an error every time it scans.
The tests regenerate and fail on any difference.
"""

from __future__ import annotations

import json
import os
import sys

from grafana_foundation_sdk.cog.encoder import JSONEncoder

from . import buffer_pool, checkpoint, compare, contention, host, overview, purge, redo
from .common import (ALERT_ANNOTATION, ALERT_ANNOTATION_FORMAT, CAPTURE_ANNOTATION, CAPTURE_ANNOTATION_FORMAT,
                     DATASOURCE_UID, REPLAY_DATASOURCE_UID, SETTINGS_ANNOTATION, SETTINGS_ANNOTATION_FORMAT)

HERE = os.path.dirname(os.path.abspath(__file__))
GRAFANA_DIR = os.path.join(HERE, "grafana")
INDEX = os.path.join(HERE, "index.json")
# The order the tuning procedure reads them in.
MODULES = (overview, checkpoint, buffer_pool, purge, redo, contention, host, compare)


def render(module) -> dict:
    data = json.loads(JSONEncoder(sort_keys=True).encode(module.build().build()))
    tallest: dict[int, int] = {}
    for p in data["panels"]:
        tallest[p["gridPos"]["y"]] = max(tallest.get(p["gridPos"]["y"], 0), p["gridPos"]["h"])
    for number, p in enumerate(data["panels"], start=1):
        p["id"] = number  # stable: the order of the panels in the module
        # A row as tall as its tallest panel (one grows for its legend's rows): Grafana would float the panels
        # below into the gap under a shorter one.
        p["gridPos"]["h"] = tallest[p["gridPos"]["y"]]
    formats = {ALERT_ANNOTATION: ALERT_ANNOTATION_FORMAT, CAPTURE_ANNOTATION: CAPTURE_ANNOTATION_FORMAT,
               SETTINGS_ANNOTATION: SETTINGS_ANNOTATION_FORMAT}
    for annotation in data["annotations"]["list"]:
        annotation.update(formats.get(annotation["name"], {}))
    return data


def _text(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def dashboards() -> dict[str, str]:
    """File name (under grafana/) -> JSON text, for every dashboard."""
    out = {}
    for module in MODULES:
        data = render(module)
        out[f"{data['uid']}.json"] = _text(data)
    return out


def index() -> str:
    """index.json: the data sources' uids and every dashboard's uid and title, in reading order."""
    entries = [{"uid": module.UID, "title": module.TITLE} for module in MODULES]
    return json.dumps({"datasources": {"prometheus": DATASOURCE_UID, "replay": REPLAY_DATASOURCE_UID},
                       "dashboards": entries}, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    os.makedirs(GRAFANA_DIR, exist_ok=True)
    generated = dashboards()
    for stale in set(os.listdir(GRAFANA_DIR)) - set(generated):
        if stale.endswith(".json"):
            os.remove(os.path.join(GRAFANA_DIR, stale))
    for name, text in generated.items():
        with open(os.path.join(GRAFANA_DIR, name), "w", encoding="utf-8") as f:
            f.write(text)
    with open(INDEX, "w", encoding="utf-8") as f:
        f.write(index())
    print(f"wrote {len(MODULES)} dashboards to {GRAFANA_DIR} and {INDEX}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
