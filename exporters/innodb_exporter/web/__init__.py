"""The HTTP server and its ``--web.config.file`` (exporter-toolkit's format): framing, deadlines, TLS and
basic auth, before a request reaches the app (``innodb_exporter.app``)."""
