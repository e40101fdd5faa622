"""The scraping of a target: its connection and session, the reads of a scrape within its deadline, the
targets within their bounds, and the exposition of what a scrape came to (with the exporter's own health)."""
