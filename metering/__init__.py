"""Metering: what a request costs, shared by the data plane and the policies that hold or limit spend.

- `metering.prices`: an endpoint's price sheet turned into USD (tiers, cache reads and writes, reasoning);
- `metering.estimate`: the worst-case tokens and cost of a request before it goes upstream, without a tokenizer;
- `metering.cost`: what a request is recorded and charged (its price within its hold, the estimate when the
  provider reported no usage), the hold's money unit and the marks per-turn holds leave.

Plain code below inference and the policy apps (docs/architecture.md): it imports only the kernel.
"""
