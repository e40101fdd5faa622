"""The oldest Grafana the dashboards work with, and what of their JSON that Grafana knows.

The JSON is written with grafana-foundation-sdk (requirements-dev.txt), whose builders target Grafana 11.6,
the version docker-compose.yml runs; every panel was looked at in a real Grafana 9.4 on MariaDB 10.11 and
MySQL 9 as well, and nothing older was. An older Grafana may draw a panel blank without an error (as 9.4 did
with the "byValue" field matcher, which came in 10.x), so `./innodb-stack up` says when the grafana
binary it starts is older (stack/grafana.py), and the provisioning and the README state the version.
"""

from __future__ import annotations

OLDEST = (9, 4)
OLDEST_TEXT = ".".join(map(str, OLDEST))

# The field matchers of overrides Grafana 9.4 knows (packages/grafana-data/src/transformations/matchers/ids.ts,
# FieldMatcherID). With any other, 9.4 draws the panel blank and its console says '"<id>" not found'.
FIELD_MATCHERS = frozenset({"numeric", "time", "first", "firstTimeField", "byType", "byName", "byNames", "byRegexp",
                            "byRegexpOrNames", "byFrameRefID"})
