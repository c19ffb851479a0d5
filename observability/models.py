"""Models of the observability app."""
