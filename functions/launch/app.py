"""Lambda handler for **launch**: close each pool's capacity gap; replace interrupted nodes at once.

Triggers: schedules (reconcile every pool), the EventBridge rule for EC2 Spot Instance
Interruption Warning and EC2 Instance Rebalance Recommendation, and the relay's
``pod.unschedulable`` / ``pool.changed`` / ``cluster.changed`` CloudEvents on the Function URL.

The body is shared by all three functions: ``gpupool.handlers.aws_lambda`` (in the layer).
``make_handler(deps_factory, *, service=None, dry_run=False)`` is the seam tests and
``gpupool invoke`` use to pass their own deps; nothing is patched.
"""

from functools import partial

from gpupool.handlers.aws_lambda import make_handler as _make_handler

FUNCTION = "launch"
make_handler = partial(_make_handler, FUNCTION)
handler = make_handler()
