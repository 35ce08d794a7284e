"""Sandbox worlds caught in the middle of a story, for `gpupool status`'s tests and its docs capture.

`provisioned_world(start)`: the demo's Provisioned story (embedded API server, moto EC2, the real
functions) stopped 4 minutes in — a training spike has just raised capacity, so claims are in
flight beside Bound ones. `autoselect_world(start)`: the AutoSelect story (simulated Karpenter)
stopped 5 minutes in — expansion NodeClaims for the pending pods, some initialized, some just launched.
`start` places the story in time (so that ages against the wall clock read naturally).
`captured(width)` is the text `gpupool status` draws for both, read through the command's own
path (kubeconfig, list, parse, view, render) but aged at each world's clock instead of the wall
clock, with the server's port written as PORT — the same text on every run, which
docs/observability.md quotes. `python -m tests.e2e.status_worlds` prints it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from gpupool.cli.commands.demo import _wire
from gpupool.cli.commands.invoke import quiet_handler_output
from gpupool.sandbox.demo.karpenter_story import KarpenterStory
from gpupool.sandbox.demo.provisioned_story import ProvisionedStory, Scenario
from gpupool.sandbox.demo.world import DEMO_START, DemoWorld

PROVISIONED_FOR = timedelta(minutes=4)
AUTOSELECT_FOR = timedelta(minutes=5)


@contextmanager
def provisioned_world(start: datetime = DEMO_START) -> Iterator[DemoWorld]:
    with DemoWorld("aws", start=start) as world:
        invoke = _wire(world, None)
        with quiet_handler_output(verbose=False):
            ProvisionedStory(world, invoke, Scenario(duration=PROVISIONED_FOR)).run()
        yield world


@contextmanager
def autoselect_world(start: datetime = DEMO_START) -> Iterator[DemoWorld]:
    with DemoWorld("aws", start=start) as world:
        invoke = _wire(world, None)
        with quiet_handler_output(verbose=False):
            KarpenterStory(world, invoke, "autoselect").run(duration=AUTOSELECT_FOR)
        yield world


def render_world(world: DemoWorld, *, width: int) -> str:
    """What `gpupool status` draws for `world`, aged at the world's clock, port written PORT."""
    from rich.console import Console

    from gpupool.cli.status_render import Header, render
    from gpupool.cli.status_source import connect, parse, read_once
    from gpupool.core.views.cluster import cluster_view

    connection = connect(world.environ["KUBECONFIG"], None)
    view = cluster_view(parse(read_once(connection)), now=world.clock.now())
    console = Console(width=width, record=True, color_system=None, force_terminal=False, file=io.StringIO())
    console.print(render(view, Header(connection.server, connection.context)))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", "\n".join(lines))


def captured(width: int = 132) -> str:
    with provisioned_world() as world:
        provisioned = render_world(world, width=width)
    with autoselect_world() as world:
        autoselect = render_world(world, width=width)
    return f"$ gpupool status   # Provisioned story, 4 minutes in\n{provisioned}\n\n" + (
        f"$ gpupool status   # AutoSelect story, 5 minutes in\n{autoselect}\n"
    )


if __name__ == "__main__":
    print(captured())
