"""Web search engines behind `service:web_search` and the `web` plugin (a pluggable interface)."""
