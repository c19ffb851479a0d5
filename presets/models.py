"""Models of the presets app."""
