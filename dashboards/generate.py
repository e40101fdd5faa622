"""Write the dashboards: ``python -m dashboards.generate`` (from the repository root).

Each module of this package builds one dashboard; the JSON goes beside them as <uid>.json, with
sorted keys, stable uids and panel ids, so that a regeneration that changes nothing changes no byte.
The tests regenerate and fail on any difference.
"""

from __future__ import annotations

import json
import os
import sys

from grafana_foundation_sdk.cog.encoder import JSONEncoder

from . import buffer_pool, checkpoint, compare, contention, host, overview, purge, redo
from .common import ALERT_ANNOTATION, ALERT_ANNOTATION_FORMAT

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = (overview, checkpoint, buffer_pool, purge, redo, contention, host, compare)


def render(module) -> dict:
    data = json.loads(JSONEncoder(sort_keys=True).encode(module.build().build()))
    for number, p in enumerate(data["panels"], start=1):
        p["id"] = number  # stable: the order of the panels in the module
    for annotation in data["annotations"]["list"]:
        if annotation["name"] == ALERT_ANNOTATION:
            annotation.update(ALERT_ANNOTATION_FORMAT)
    return data


def dashboards() -> dict[str, str]:
    """File name -> JSON text, for every dashboard."""
    out = {}
    for module in MODULES:
        data = render(module)
        out[f"{data['uid']}.json"] = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return out


def main() -> int:
    for name, text in dashboards().items():
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote {len(MODULES)} dashboards to {HERE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
