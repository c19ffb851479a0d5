"""The routing plugins (`auto-router`, `auto-beta-router`, `pareto-router`): the gateway chooses the model."""
