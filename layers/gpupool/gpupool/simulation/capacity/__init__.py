"""`gpupool simulate capacity`: days of GPU demand through gpupool's real services and TensorFusion's rules.

Role: the package holding the capacity simulation — the shared placement rule (`placement`),
the worker pods it binds (`worker_pods`), the ledger and its report (`ledger`), the violation
checks (`violations`), one driver per policy (`gpupool_policy`, `karpenter_side`,
`tensorfusion_side`) and the engine that plays the demand through a driver on the simulated
clock (`engine`). The cloud's fates, the kubelet, the node agent and Karpenter are the
simulated cluster's (`gpupool.simulation.cluster`), the same the demo runs.

Must not: import the adapters (the in-memory ports stand in for the cloud and the cluster).
"""
