"""The replay bundle: one portable file with every raw sample of a time window, read and written within
bounds. Below both the exporter (``innodb-exporter parse BUNDLE`` reads its texts) and ``innodb_replay``
(export, record and import write and read it)."""
