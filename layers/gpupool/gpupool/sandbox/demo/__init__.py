"""`gpupool demo`: the real functions' stories, played on the sandbox's servers and a simulated clock.

Role: the stories (`provisioned_story`: `--story scale|never-join`; `karpenter_story`: `--mode
karpenter|autoselect`), the world they play in (`world`, over one cloud piece each in `clouds`,
with that cloud's envelopes from `events`), the workload they start (`workload`), what they
record (`timeline`) and raw object access to the API server (`objects`). The simulated kubelet,
node agent and Karpenter are the simulated cluster's (`gpupool.simulation.cluster`), the same
`gpupool simulate capacity` runs.

Must not: decide anything (the functions do) or import the adapters.
"""
