"""kube-scheduler extender (pure): exact wire shapes and filter / prioritize / bind decisions."""

from gpupool.scheduler.extender.handle import (
    FAILURE_REASONS,
    classify,
    failure_reason,
    handle_filter,
    handle_prioritize,
    reserve_for_bind,
)
from gpupool.scheduler.extender.wire import (
    BindingArgs,
    ExtenderArgs,
    WireError,
    binding_result,
    filter_error,
    filter_result,
    host_priority_list,
    parse_binding_args,
    parse_extender_args,
)

__all__ = [
    "FAILURE_REASONS",
    "BindingArgs",
    "ExtenderArgs",
    "WireError",
    "binding_result",
    "classify",
    "failure_reason",
    "filter_error",
    "filter_result",
    "handle_filter",
    "handle_prioritize",
    "host_priority_list",
    "parse_binding_args",
    "parse_extender_args",
    "reserve_for_bind",
]
