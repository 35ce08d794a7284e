"""The service ring: loads snapshots through ports, calls the core's decisions, applies their plans.

Must not: import a cloud SDK, the Kubernetes client or an HTTP client (adapters implement the ports).
"""
