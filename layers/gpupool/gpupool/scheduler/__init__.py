"""The GPU scheduler: what the in-cluster relay runs beside kube-scheduler, and the node agent reads.

Role: the webhook's admission (`admission`: profile, QoS and quota defaults, the mutation), the
scheduler extender (`extender`: filter, prioritize, bind, gangs), the allocation record the relay
writes on a bound pod and the device plugin checks (`pod_record`), the relay's running tally of
each node's CPU and memory room (`host_room`), and progressive migration's taint plan
(`progressive`). They place pods with the allocator's fit (`gpupool.core.allocator`), which the
capacity engine's consolidation shares — so the fit lives in the core and this package sits on it.

Must not: be imported by the functions (handlers, service, adapters, the core): the Lambda and FC
layer ships the capacity engine alone (import-linter and tests/unit/test_layer.py check both); do
I/O, read the clock or log (the relay applies what it decides).
"""
