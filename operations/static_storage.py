"""Static files storage: WhiteNoise's compressed, hashed (manifest) storage that tolerates a missing manifest.

`collectstatic` writes each file under a content-hashed name plus its gzip variant, and a manifest; pages then
link the hashed names, which WhiteNoise serves with a ten-year `Cache-Control: immutable`. Before
`collectstatic` has run (tests, a server started by hand) a page links the plain name instead of failing.
"""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class GatewayStaticFilesStorage(CompressedManifestStaticFilesStorage):
    manifest_strict = False

    def stored_name(self, name):
        try:
            return super().stored_name(name)
        except ValueError:  # not collected yet: the plain name (served from the apps' static directories)
            return name
