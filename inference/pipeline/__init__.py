"""The data plane's middleware pipeline: one Context per request, a chain configured in settings."""
