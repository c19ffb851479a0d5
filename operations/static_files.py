"""Static files (admin, Swagger UI, ReDoc) served by the ASGI application itself, through WhiteNoise's index.

`gateway_project/asgi.py` routes `STATIC_URL` here before Django: no Django request, no middleware, no thread
hop. WhiteNoise decides everything a static server must (compressed variant by `Accept-Encoding`, `ETag` /
`Last-Modified` and 304, `Range`, `Cache-Control`: hashed names from `collectstatic` are cached for ten years,
others for `WHITENOISE_MAX_AGE` seconds); this module only writes its answer through ASGI `send`.

Files come from `STATIC_ROOT` (filled by `collectstatic`, which `make run` runs). When `STATIC_ROOT` holds
nothing (a fresh checkout served without `collectstatic`) or `DJANGO_DEBUG` is on, the apps' own static
directories are served directly, so the admin is styled either way. An unknown path falls through to Django
(a 404).
"""

from __future__ import annotations

import os

from django.conf import settings

CHUNK_BYTES = 256 * 1024


class StaticFiles:
    """ASGI application for `STATIC_URL`; `fallback` answers paths that are no static file."""

    def __init__(self, fallback) -> None:
        self.fallback = fallback
        self._whitenoise = None

    @property
    def whitenoise(self):
        if self._whitenoise is None:
            self._whitenoise = _build_index()
        return self._whitenoise

    def reload(self) -> None:
        """Forget the file index (after `collectstatic` or a settings change); rebuilt on the next request."""
        self._whitenoise = None

    async def __call__(self, scope, receive, send) -> None:
        index = self.whitenoise
        path = scope["path"]
        static_file = index.find_file(path) if index.autorefresh else index.files.get(path)
        if static_file is None:
            await self.fallback(scope, receive, send)
            return
        meta = {
            "HTTP_" + name.decode("latin-1").upper().replace("-", "_"): value.decode("latin-1")
            for name, value in scope["headers"]
        }
        response = static_file.get_response(scope["method"], meta)
        headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in response.headers]
        await send({"type": "http.response.start", "status": int(response.status), "headers": headers})
        if response.file is None:
            await send({"type": "http.response.body", "body": b""})
            return
        with response.file as handle:  # small files from the page cache: plain reads cost microseconds
            while True:
                chunk = handle.read(CHUNK_BYTES)
                more = len(chunk) == CHUNK_BYTES
                await send({"type": "http.response.body", "body": chunk, "more_body": more})
                if not more:
                    return


def _build_index():
    from whitenoise.middleware import WhiteNoiseMiddleware

    index = WhiteNoiseMiddleware(get_response=None)
    root = settings.STATIC_ROOT
    collected = bool(root) and os.path.isdir(root) and any(os.scandir(root))
    if not collected and not index.use_finders and not index.autorefresh:
        index.add_files_from_finders()
    return index
