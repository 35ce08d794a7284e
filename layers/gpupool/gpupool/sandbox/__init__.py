"""The sandbox: a cluster and a cloud on 127.0.0.1 for local use, and the demo's stories on them.

Role: the embedded Kubernetes API server (`kubeapi`) with its CRDs (`crds`), the ECS endpoint
(`ecs_server`, `ecs_state`, `ecs_network`), moto's EC2 (`moto_ec2`), the `gpupool sandbox`
process (`lifecycle`, `daemon`, `files`) and the demo (`demo`).

Must not: be imported by the deployed functions (the layer build leaves it out) or import the
adapters (the CLI wires the real handlers to the sandbox's environment).
"""
