"""Fetching web pages for the model (service:web_fetch, the web-fetch plugin): the guarded fetch and the
readable-text extraction."""
