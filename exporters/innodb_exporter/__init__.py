"""Prometheus exporter for the inside of InnoDB (MySQL, MariaDB, Percona Server)."""

__version__ = "0.1.0"
