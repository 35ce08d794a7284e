"""The in-cluster relay: scheduler extender, pod webhook, simulate/allocation API (docs/scheduling.md)."""
