"""The node agent: NVML discovery, GPU/GPUNode status, the device plugin and NVML enforcement.

Runs as a DaemonSet on every GPU node (`gpupool agent run`, docs/agent.md). Modules by capability:
`nvml` (the port) with `nvml_real` / `nvml_fake` (its adapters); `discovery` (GPU objects and the
GPUNode status, pure) and `publish` (writing them on change); `procs` (process → pod through
cgroups); `workers` (a pod's limits); `compute_plan` (QoS targets, pure), `compute` (the duty-cycle
controller), `throttle` (SIGSTOP/SIGCONT) and `guardian` (resumes everything if the agent dies);
`vram` (the VRAM watch, pure); `enforce` (one enforcement tick); `deviceplugin` (the kubelet
v1beta1 API); `metrics`; `ports` / `kube` (the cluster); `runner` (the loops); `serve` (wiring).
"""
