"""An embedded, in-memory Kubernetes API server for tests, local runs and simulations.

Public API: `EmbeddedKubeAPI` (context manager), `ManualClock` / `SystemClock`, `ApiOperations`
(in-process access to the same objects). See docs/sandbox.md.

Must not: import gpupool.adapters (ring rule) or any Kubernetes client library.
"""

from gpupool.sandbox.kubeapi.clock import Clock, ManualClock, SystemClock
from gpupool.sandbox.kubeapi.operations import ApiOperations
from gpupool.sandbox.kubeapi.server import EmbeddedKubeAPI, kubeconfig

__all__ = ["ApiOperations", "Clock", "EmbeddedKubeAPI", "ManualClock", "SystemClock", "kubeconfig"]
