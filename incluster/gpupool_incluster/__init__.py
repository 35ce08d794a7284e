"""In-cluster parts of gpupool: the relay (extender, webhook, simulate API) and the node agent."""
