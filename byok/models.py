"""Models of the byok app."""
