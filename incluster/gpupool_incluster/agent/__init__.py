"""The node agent: NVML discovery, GPU/GPUNode status, the device plugin and NVML enforcement.

Runs as a DaemonSet on every GPU node (`gpupool agent run`). The modules split by capability:
`nvml` (the port), `nvml_real` / `nvml_fake` (its adapters), `discovery` (GPU objects and GPUNode
status from what NVML reports), `procs` (process → pod through cgroups), `workers` (a pod's
limits), `compute` / `vram` (enforcement decisions), `throttle` (SIGSTOP/SIGCONT with a guardian
that resumes everything if the agent dies), `deviceplugin` (the kubelet v1beta1 API), `metrics`,
`kube` (the cluster writes), `runner` (the loops).
"""
