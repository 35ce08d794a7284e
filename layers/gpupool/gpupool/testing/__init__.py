"""Test doubles: the service ports in memory (`memory_ports`) and a receiver that checks the
relay's signed deliveries (`relay_receiver`). Used by the tests, the benchmarks and the capacity
simulation.

Must not: be imported by the deployed functions (the layer build leaves it out), decide
anything, or import the adapters.
"""
