"""Local stand-ins for a cluster and a cloud: the embedded Kubernetes API server, moto EC2, the
sandbox, the simulated kubelet and the demo driver. Never used by the deployed functions.
"""
