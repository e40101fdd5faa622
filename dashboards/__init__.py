"""Grafana dashboards as code: one module per dashboard, assembled by generate.py into *.json here."""
