"""Evidence captured when a page fires (Alertmanager's webhook), and the redaction of what it keeps."""
