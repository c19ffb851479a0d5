"""Plugins of the Responses body (`plugins`) and their registry (inference.plugins.registry)."""
