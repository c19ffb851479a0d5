"""What the data plane and the spend policy agree on about a request's hold, without importing each other.

A hold is counted in integer units of 1e-10 USD (`UNITS_PER_USD`), so conditional checks are exact on every
database. Per-turn holds of server-tool loops (budgets/turns.py) leave these marks in `ctx.extras`, which the
accounting of the request (inference/accounting.py) and the budget middleware read.
"""

# Counters hold integer amounts of 1e-10 USD, so the conditional checks are exact on every database.
UNITS_PER_USD = 10**10

OWNED_BY_TURNS = "budgets.turns_own_the_hold"  # ctx.extras: the turns settle the request's hold (not the middleware)
SETTLED_BY_TURNS = "budgets.settled_by_turns_usd"  # ctx.extras: USD the turns were charged so far
# ctx.extras: USD the provider reported above what the request was charged (its holds): the row's `reported_cost`.
OVER_HOLD = "budgets.over_hold_usd"
# ctx.extras: accounting gave up writing the request's row (inference/recorder.py): its hold is left to the reaper,
# which charges it and writes the row `interrupted` (the hold is all that is known to be safe to charge).
ROW_NOT_WRITTEN = "budgets.row_not_written"
