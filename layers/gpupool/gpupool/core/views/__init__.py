"""Read-only views of a cluster for people and scripts (`gpupool status`).

Role: from objects already read (pools, claims, nodes, GPUs, pods, Karpenter NodeClaims,
Events) and a `now`, the facts a person asks when a pool did or did not grow — computed with
the same accounting the functions decide with (`planning.snapshot`, `planning.gap`,
`planning.budget`, the lifecycle timeouts) — as plain frozen records with a JSON form.

Must not: perform I/O, read the clock, decide or plan anything, or format for a terminal
(the CLI renders).
"""
