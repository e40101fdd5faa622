"""The metric contract: what one scrape read (``snapshot``), the metrics derived from it (``model``), every
INNODB_METRICS counter typed by how the server keeps it (``counters``, ``counter_types``), the REDO model
(``redo``), and what each server flavour gives (``availability``). Reads nothing from a server."""
