"""Management-plane routes of the inference app under /api/v1/ (the data plane is routed in asgi.py)."""

urlpatterns: list = []
