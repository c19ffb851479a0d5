"""URL routes of the presets app, mounted under /api/v1/ by gateway_project/urls.py."""

urlpatterns: list = []
