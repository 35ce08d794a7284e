"""The kubelet device plugin (v1beta1) for the `tensor-fusion.ai/index_0…index_f` resources.

`api.proto` is the published API; `api_pb2` is generated from it (see `generate`); `allocate`
decides what a container gets; `server` serves the API on unix sockets and registers with the
kubelet.
"""
