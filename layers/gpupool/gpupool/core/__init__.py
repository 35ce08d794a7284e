"""The pure core: models, quantities, catalog, intake and decisions — the capacity engine — and the
allocator's fit, which the capacity engine's consolidation and the GPU scheduler (`gpupool.scheduler`,
outside the core, never shipped in the functions' layer) share.

Must not: do I/O, read the clock, log, or import a cloud SDK, the Kubernetes client, NVML or an
HTTP client (import-linter enforces the imports).
"""
