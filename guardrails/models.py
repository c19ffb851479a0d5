"""Models of the guardrails app."""
