"""The one simulated cluster `gpupool demo` and `gpupool simulate capacity` share.

Role: the parties outside gpupool that a GPU node pool meets, simulated once: the cloud's fates
(`fates`: boot and join times, Spot interruptions, capacity failures), the kubelet and
TensorFusion's node agent (`kubelet`; `instance_nodes` joins a node for each instance a cloud
reports), and Karpenter's NodeClaim controller (`karpenter`). They write through one small
interface, `store.ClusterStore`, with two backings: typed objects in the in-memory ports
(`store.MemoryStore`, the capacity simulation, fast) and raw JSON in an API server
(`json_store.JsonStore`, the demo: the embedded one in process, or a running sandbox's).

Must not: decide anything (gpupool's functions and services do), or reach a real cloud or cluster.
"""
