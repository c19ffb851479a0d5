"""Models of the scim app."""
