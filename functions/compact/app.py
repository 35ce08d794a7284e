"""Lambda handler for **compact**: remove idle capacity while warm and min still hold.

Triggers: the compaction schedule (each pool's ``nodeCompaction.period`` is honoured inside)
and the relay's ``pool.manual-compaction`` CloudEvent on the Function URL.

The body is shared by all three functions: ``gpupool.handlers.aws_lambda`` (in the layer).
``make_handler(deps_factory, *, service=None, dry_run=False)`` is the seam tests and
``gpupool invoke`` use to pass their own deps; nothing is patched.
"""

from functools import partial

from gpupool.handlers.aws_lambda import make_handler as _make_handler

FUNCTION = "compact"
make_handler = partial(_make_handler, FUNCTION)
handler = make_handler()
