"""gpupool: elastic GPU node pools for Kubernetes in your own cloud (tensor-fusion.ai/v1 compatible)."""
