"""Fixtures for the embedded API server's contract suite: a fresh server per test, reached
only through the official `kubernetes` client configured from the kubeconfig it writes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client, config

from gpupool.sandbox.kubeapi import EmbeddedKubeAPI, ManualClock

# Test modules import the builders by a name no other test folder uses.
sys.path.insert(0, str(Path(__file__).parent))

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def kube_api(clock: ManualClock) -> Iterator[EmbeddedKubeAPI]:
    with EmbeddedKubeAPI(clock=clock) as api:
        yield api


@pytest.fixture
def api_client(kube_api: EmbeddedKubeAPI) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(kube_api.kubeconfig_path))
    yield api_client
    api_client.close()


@pytest.fixture
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture
def apiext(api_client: client.ApiClient) -> client.ApiextensionsV1Api:
    return client.ApiextensionsV1Api(api_client)


@pytest.fixture
def coordination(api_client: client.ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api_client)
