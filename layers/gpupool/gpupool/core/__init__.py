"""The pure core: models, quantities, catalog, intake and decisions.

Must not: do I/O, read the clock, log, or import a cloud SDK, the Kubernetes client, NVML or an
HTTP client (import-linter enforces the imports).
"""
