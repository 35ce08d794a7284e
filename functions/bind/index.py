"""Function Compute handler for **bind** (FC 3.0, Python: ``event`` arrives as bytes).

Triggers: EventBridge ``ecs:Instance:StateChange`` (preemptible interruptions go to launch), the
sweep timer, and the relay's node and claim CloudEvents on the HTTP trigger — of
gpupool-bind-relay, the same code deployed HTTP-only (GPUPOOL_HTTP_ONLY=true, s.yaml).

The body is shared with the Lambda handler (``app.py``) and the two other functions:
``gpupool.handlers.fc`` (in the layer) on ``gpupool.handlers.common``.
``make_handler(deps_factory, *, service=None, dry_run=False)`` is the seam tests and
``gpupool invoke --cloud alibaba`` use to pass their own deps; nothing is patched.
"""

from functools import partial

from gpupool.handlers.fc import make_handler as _make_handler

FUNCTION = "bind"
make_handler = partial(_make_handler, FUNCTION)
handler = make_handler()
