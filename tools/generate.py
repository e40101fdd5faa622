"""Every generated file, written from its one source, or checked: ``./innodb-stack generate [--check]``.

    python -m tools.generate            write every stale file, and remove those no source makes any more
    python -m tools.generate --check    write nothing; name each stale file and exit 1 if there is one

What is generated, and from what:

  alerts/rules/*.yml              alerts/mixin.py, from signals/ and signals/config.py
  alerts/tests/bottleneck_test.yml  alerts/tests/bottleneck_cases.py
  dashboards/grafana/*.json       dashboards/ (one module per dashboard)
  dashboards/index.json           dashboards/generate.py
  exporters/innodb_replay/figures.json  signals/impact.py: what innodb-replay impact measures
  docs/metrics.md                 the exporter's metric contract (innodb_exporter/reference.py)
  provisioning/mysql/monitoring.cnf  the same
  tests/golden/{parse,servers}/*.prom  the exporter run on every verbatim fixture (tests/support/golden.py)

It runs from a fresh checkout with the development requirements only: the exporter's packages are read
from exporters/, installed or not.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from dataclasses import dataclass
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (os.path.join(ROOT, "tests"), os.path.join(ROOT, "exporters"), ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)


@dataclass(frozen=True)
class Artifact:
    """Files one source makes: ``make`` gives name -> text under ``folder``. With ``suffix``, the source
    owns every file of that suffix in the folder: one it no longer makes is stale."""

    name: str
    folder: str
    make: Callable[[], dict[str, str]]
    suffix: str = ""


def _rules() -> dict[str, str]:
    from alerts import mixin
    from signals import CONFIG

    return mixin.files(CONFIG)


def _bottleneck_cases() -> dict[str, str]:
    from alerts.tests import bottleneck_cases

    return {os.path.basename(bottleneck_cases.OUT): bottleneck_cases.text()}


def _dashboards() -> dict[str, str]:
    from dashboards import generate

    return generate.dashboards()


def _dashboard_index() -> dict[str, str]:
    from dashboards import generate

    return {os.path.basename(generate.INDEX): generate.index()}


def _impact_figures() -> dict[str, str]:
    import json

    from signals import impact

    return {"figures.json": json.dumps(impact.document(), indent=1, ensure_ascii=False) + "\n"}


def _metrics_reference() -> dict[str, str]:
    from innodb_exporter import reference

    return {"metrics.md": reference.metrics_reference()}


def _monitoring_cnf() -> dict[str, str]:
    from innodb_exporter import reference

    return {"monitoring.cnf": reference.monitoring_cnf()}


def _golden_parse() -> dict[str, str]:
    from support import golden

    return {golden.golden_name(f): golden.status_exposition(f) for f in golden.status_fixtures()}


def _golden_servers() -> dict[str, str]:
    from support import golden

    return {golden.golden_name(c): golden.capture_exposition(c) for c in golden.server_captures()}


ARTIFACTS = (
    Artifact("rules", "alerts/rules", _rules, ".yml"),
    Artifact("bottleneck rule test cases", "alerts/tests", _bottleneck_cases),
    Artifact("dashboards", "dashboards/grafana", _dashboards, ".json"),
    Artifact("dashboard index", "dashboards", _dashboard_index),
    Artifact("impact figures", "exporters/innodb_replay", _impact_figures),
    Artifact("metrics reference", "docs", _metrics_reference),
    Artifact("monitoring.cnf", "provisioning/mysql", _monitoring_cnf),
    Artifact("goldens of parse", "tests/golden/parse", _golden_parse, ".prom"),
    Artifact("goldens of the full pipeline", "tests/golden/servers", _golden_servers, ".prom"),
)


@dataclass(frozen=True)
class Stale:
    path: str  # relative to the repository
    wanted: str | None  # None: no source makes it any more
    found: str | None  # None: missing

    def describe(self) -> str:
        if self.found is None:
            return f"{self.path}: missing"
        if self.wanted is None:
            return f"{self.path}: no source makes it any more"
        diff = difflib.unified_diff(self.found.splitlines(True), self.wanted.splitlines(True),
                                    "committed", "generated", n=0)
        lines = [line.rstrip("\n") for line in diff][2:12]
        return f"{self.path}: differs\n" + "\n".join(f"    {line[:150]}" for line in lines)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None


def stale(artifact: Artifact, root: str = ROOT) -> list[Stale]:
    folder = os.path.join(root, artifact.folder)
    wanted = artifact.make()
    out = [Stale(os.path.join(artifact.folder, name), text, found)
           for name, text in sorted(wanted.items())
           if (found := _read(os.path.join(folder, name))) != text]
    if artifact.suffix and os.path.isdir(folder):
        out += [Stale(os.path.join(artifact.folder, name), None, _read(os.path.join(folder, name)))
                for name in sorted(os.listdir(folder)) if name.endswith(artifact.suffix) and name not in wanted]
    return out


def write(item: Stale, root: str = ROOT) -> None:
    path = os.path.join(root, item.path)
    if item.wanted is None:
        os.remove(path)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(item.wanted)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="./innodb-stack generate",
                                description="Write every generated file from its source, or check them.")
    p.add_argument("--check", action="store_true", help="write nothing; name the stale files and exit 1")
    args = p.parse_args(argv)
    found = 0
    for artifact in ARTIFACTS:
        items = stale(artifact)
        found += len(items)
        if args.check:
            for item in items:
                print(f"stale ({artifact.name}): {item.describe()}")
            continue
        for item in items:
            write(item)
        print(f"{artifact.name}: {len(items)} written" if items else f"{artifact.name}: current", file=sys.stderr)
    if args.check:
        if found:
            print(f"{found} generated files are stale: ./innodb-stack generate")
            return 1
        print(f"every generated file is current ({len(ARTIFACTS)} sources)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
