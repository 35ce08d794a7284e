"""`gpupool status [--kubeconfig F] [--context C] [--pool P] [--watch] [--json]`: see the pools.

Role: read a live cluster with the user's kubeconfig (the sandbox or a real one; read-only:
lists and watches, never a write), compute the view (`gpupool.core.views.cluster.cluster_view`:
per pool its mode, capacity against min / warm / max, the gap, claims by phase with their age
and stuck ones flagged, hourly cost against the budget, warnings and the latest decisions; per
node its GPUs' allocation, model, offering, price, age and flags) and draw it
(`gpupool.cli.status_render`), or print it as JSON (`--json`). `--watch` keeps the view current
from one list+watch per kind (`gpupool.cli.status_source.WatchedCluster`) and redraws it in place
(rich's full-screen Live) on each change and every `--refresh` seconds (ages move on); a dropped
connection is shown in the header and the watches re-list when it is back; Ctrl-C ends it with
exit 0. `--watch --json` prints one JSON document per line on each change instead. Installed
also as `kubectl-gpupool`, so `kubectl gpupool status` runs it. Bad input — no kubeconfig, an
unknown context, an unreachable API server, a cluster without the tensor-fusion.ai CRDs, a pool
that does not exist — is one line and exit 2.

Must not: write to the cluster, compute facts (the core does) or draw them (status_render does).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

from gpupool.cli.errors import UserError

NAME = "status"
HELP = "show every GPU pool and node of a live cluster: capacity, gap, claims, cost, budget, decisions"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig to use (default: $KUBECONFIG, ~/.kube/config)"
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current context)")
    parser.add_argument("--pool", metavar="NAME", help="show this GPUPool and its nodes only")
    parser.add_argument(
        "--watch", "-w", action="store_true", help="keep the view current from watches (Ctrl-C ends)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the facts as JSON (with --watch: a line per change)"
    )
    parser.add_argument(
        "--refresh",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="--watch: redraw at least this often (default 5)",
    )


def _view(raw: Any, pool: str | None) -> Any:
    from gpupool.cli.status_source import parse
    from gpupool.core.views.cluster import cluster_view

    return cluster_view(parse(raw), now=datetime.now(UTC), pool=pool)


def run(args: argparse.Namespace) -> int:
    try:
        import kubernetes  # noqa: F401
        import rich  # noqa: F401
    except ImportError as error:
        raise UserError(
            f"gpupool status needs the cli extra ({error.name} is missing): pip install 'gpupool[cli]'"
        ) from error
    from gpupool.cli.status_source import StatusSourceError, connect, read_once
    from gpupool.core.views.cluster import UnknownPool

    if not 0.2 <= args.refresh <= 3600:
        raise UserError(f"--refresh {args.refresh:g}: give between 0.2 and 3600 seconds")
    try:
        connection = connect(args.kubeconfig, args.context)
        raw = read_once(connection)
        view = _view(raw, args.pool)
    except StatusSourceError as error:
        raise UserError(str(error)) from error
    except UnknownPool as error:
        raise UserError(str(error)) from error
    if not args.watch:
        if args.json:
            print(json.dumps(view.to_json(), indent=2))
        else:
            from gpupool.cli.status_render import Header, console_for, render

            drawn = render(view, Header(connection.server, connection.context))
            console_for(drawn, terminal=sys.stdout.isatty()).print(drawn)
        return 0
    return _watch(connection, raw, args)


def _watch(connection: Any, raw: Any, args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    from gpupool.cli.status_render import Header, render
    from gpupool.cli.status_source import WatchedCluster
    from gpupool.core.views.cluster import UnknownPool

    console = Console()
    if not args.json and not console.is_terminal:
        raise UserError("--watch draws on a terminal; use --watch --json for one JSON line per change")
    cluster = WatchedCluster(connection, initial=raw)
    cluster.start()
    seen = -1
    try:
        if args.json:
            last: dict[str, Any] | None = None
            while True:
                if cluster.wait_for_change(seen, timeout=args.refresh) == seen:
                    continue
                time.sleep(0.2)  # fold a burst of changes into one line (no lock: see wait_for_change)
                seen = cluster.changes
                try:
                    body = _view(cluster.raw(), args.pool).to_json()
                except UnknownPool as error:
                    body = {"error": str(error)}
                facts = {k: v for k, v in body.items() if k != "generated_at"}
                if facts != last:
                    last = facts
                    print(json.dumps(body), flush=True)
        with Live(console=console, screen=True, auto_refresh=False, redirect_stderr=False) as live:
            while True:
                trouble = cluster.trouble()
                state = "live" if not trouble else f"reconnecting ({trouble[0]})"
                header = Header(connection.server, connection.context, state)
                try:
                    shown: Any = render(_view(cluster.raw(), args.pool), header)
                except UnknownPool as error:
                    shown = Text(f"{error}; waiting for it to appear")
                live.update(shown, refresh=True)
                seen = cluster.wait_for_change(seen, timeout=args.refresh)
                time.sleep(0.1)  # fold a burst of changes into one redraw
    except KeyboardInterrupt:
        pass
    finally:
        cluster.close()
    if not args.json:
        print(f"gpupool status: stopped watching {connection.server}", file=sys.stderr)
    if cluster.still_running():
        # A watch thread still blocked in a read: leave without finalizing the interpreter under
        # it (a daemon thread waking in a finalizing interpreter can abort the process).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0
