"""The real tier's fixtures: one real control plane for the whole session (etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, KWOK and Karpenter's controller, built by
`gpupool sandbox build`), stopped by PID when the session ends.

A missing build fails these tests with the command to run; they are never skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.programs import require_built


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    require_built(
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
        "kwok",
        "karpenter-kwok",
    )
    root: Path = tmp_path_factory.mktemp("real-control-plane")
    plane = ControlPlane(root)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()
