"""Models of the rankings app."""
