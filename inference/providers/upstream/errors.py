"""The failures of an upstream call at the transport level (mapped by inference.providers.errors)."""

from __future__ import annotations


class ConnectTimeout(TimeoutError):
    """No connection within the connect limit (nothing was sent)."""


class ConnectFailed(ConnectionError):
    """The connection could not be opened (refused, unknown host, TLS handshake)."""


class ResponseCutShort(ConnectionError):
    """The answer's body broke off (the connection ended inside it) or could not be decoded."""


class InvalidRequest(ValueError):
    """A request that cannot be sent as it is (a header with a control character); nothing was sent."""


class UpstreamDisconnected(ConnectionError):
    """The connection ended, or sent something that is not HTTP/1.1, before the answer's head."""
