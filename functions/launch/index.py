"""Function Compute handler for **launch** (FC 3.0, Python: ``event`` arrives as bytes).

Triggers: timers (reconcile every pool), EventBridge ``ecs:Instance:PreemptibleInstanceInterruption``
(the replacement is launched at once), and the relay's ``pod.unschedulable`` /
``pool.changed`` / ``cluster.changed`` CloudEvents on the HTTP trigger — of gpupool-launch-relay,
the same code deployed HTTP-only (GPUPOOL_HTTP_ONLY=true, s.yaml).

The body is shared with the Lambda handler (``app.py``) and the two other functions:
``gpupool.handlers.fc`` (in the layer) on ``gpupool.handlers.common``.
``make_handler(deps_factory, *, service=None, dry_run=False)`` is the seam tests and
``gpupool invoke --cloud alibaba`` use to pass their own deps; nothing is patched.
"""

from functools import partial

from gpupool.handlers.fc import make_handler as _make_handler

FUNCTION = "launch"
make_handler = partial(_make_handler, FUNCTION)
handler = make_handler()
