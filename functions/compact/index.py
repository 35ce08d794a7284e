"""Function Compute handler for **compact** (FC 3.0, Python: ``event`` arrives as bytes).

Triggers: timers (compact every pool) and the relay's manual-compaction CloudEvents on the
HTTP trigger — of gpupool-compact-relay, the same code deployed HTTP-only (GPUPOOL_HTTP_ONLY=true,
s.yaml).

The body is shared with the Lambda handler (``app.py``) and the two other functions:
``gpupool.handlers.fc`` (in the layer) on ``gpupool.handlers.common``.
``make_handler(deps_factory, *, service=None, dry_run=False)`` is the seam tests and
``gpupool invoke --cloud alibaba`` use to pass their own deps; nothing is patched.
"""

from functools import partial

from gpupool.handlers.fc import make_handler as _make_handler

FUNCTION = "compact"
make_handler = partial(_make_handler, FUNCTION)
handler = make_handler()
