"""The developer's tools: every generated file written or checked (``generate``), and the import layers
(``layers``). They read everything below them and nothing imports them."""
