"""Lambda handler for **bind**: claims ↔ instances ↔ nodes, state changes, timeouts, orphans.

Triggers: the EventBridge rule for EC2 Instance State-change Notification (Spot interruption
warnings and rebalance recommendations go to launch); the sweep schedule (launch /
registration timeouts, orphan sweep); the relay's ``node.joined`` / ``node.ready`` /
``node.deleted`` / ``claim.deleted`` CloudEvents on the Function URL.

The body is shared by all three functions: ``gpupool.handlers.aws_lambda`` (in the layer).
``make_handler(deps_factory, *, service=None, dry_run=False)`` is the seam tests and
``gpupool invoke`` use to pass their own deps; nothing is patched.
"""

from functools import partial

from gpupool.handlers.aws_lambda import make_handler as _make_handler

FUNCTION = "bind"
make_handler = partial(_make_handler, FUNCTION)
handler = make_handler()
