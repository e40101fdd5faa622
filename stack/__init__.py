"""The native stack: the same Prometheus, Alertmanager and exporters as docker-compose.yml, run from
Debian's packages and a virtual environment on a machine without Docker (``make up`` / ``make down``)."""
