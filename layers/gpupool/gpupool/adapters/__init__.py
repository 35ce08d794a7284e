"""Adapters: the ports implemented with real clients, one package per cloud (`aws`, `alibaba`)
and one for Kubernetes (`kube`), each translating its SDK's errors into the service's domain
errors at the boundary; `cloud` and `environment` hold what every cloud shares.

Must not: be imported by the service or the core (they speak the ports), or share anything
across clouds but `cloud` and `environment`.
"""
