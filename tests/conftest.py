"""Shared pytest configuration: the `needs_kubectl` fixture, which fails a test (never skips it)
when `gpupool sandbox build` has not built kubectl; and how many xdist workers `-n auto` starts."""

from __future__ import annotations

import os

import pytest

from tests.programs import require_built


@pytest.fixture
def needs_kubectl() -> None:
    require_built("kubectl")


# Each worker may start its own real control plane (etcd, kube-apiserver, Karpenter …, about 1 GiB):
# one per core, but never more than four, however many cores a workstation has.
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return max(1, min(len(os.sched_getaffinity(0)), MAX_WORKERS))
