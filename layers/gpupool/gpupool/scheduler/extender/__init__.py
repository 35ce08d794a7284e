"""kube-scheduler extender (pure): wire shapes, filter / prioritize / bind, expansion reservations."""

from gpupool.scheduler.extender.handle import (
    FAILURE_REASONS,
    Reservations,
    classify,
    failure_reason,
    handle_filter,
    handle_prioritize,
    reserve_for_bind,
)
from gpupool.scheduler.extender.reservation import Reservation, holding, reservation_of
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
    "Reservation",
    "Reservations",
    "WireError",
    "binding_result",
    "classify",
    "failure_reason",
    "filter_error",
    "filter_result",
    "handle_filter",
    "handle_prioritize",
    "holding",
    "host_priority_list",
    "parse_binding_args",
    "parse_extender_args",
    "reservation_of",
    "reserve_for_bind",
]
