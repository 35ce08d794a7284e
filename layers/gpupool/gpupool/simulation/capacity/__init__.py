"""`gpupool simulate capacity`: days of GPU demand through gpupool's real services and TensorFusion's rules.

Role: the package holding the capacity simulation — the seeded world (`world`), the shared
placement rule (`placement`), the ledger and its report (`ledger`), the violation checks
(`violations`), one driver per policy (`gpupool_policy`, `tensorfusion_side`) and the engine
that plays the demand through a driver on the simulated clock (`engine`).

Must not: import the adapters (the in-memory ports stand in for the cloud and the cluster).
"""
