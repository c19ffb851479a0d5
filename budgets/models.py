"""Models of the budgets app."""
