"""The Kubernetes adapter and the launch service with one malformed GPUPool among good ones.

The bad pool (a requirement key TensorFusion's schema does not list) is stored as the API
server takes it; `list_pools` skips it with a Warning Event naming its field, and one launch
invocation still plans and launches the good pool's minimum on EC2 (moto).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as kube_config

from gpupool.core.intake.causes import Reconcile
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.deps import Deps
from gpupool.service.launch import handle_launch
from tests.contract.kube import test_service_on_real_adapters as real_adapters

# The EC2-on-moto and embedded-API world of the launch service's contract tests.
world = real_adapters.world

BAD_FIELD = "spec.nodeManagerConfig.nodeProvisioner.gpuRequirements[0]"


def _store_bad_pool(api: EmbeddedKubeAPI) -> Any:
    api_client = kube_config.new_client_from_config(config_file=str(api.kubeconfig_path))
    body = {
        "apiVersion": "tensor-fusion.ai/v1",
        "kind": "GPUPool",
        "metadata": {"name": "a-broken"},
        "spec": {
            "nodeManagerConfig": {
                "nodeProvisioner": {"gpuRequirements": [{"key": "example.com/rack", "values": ["r1"]}]}
            }
        },
    }
    k8s.CustomObjectsApi(api_client).create_cluster_custom_object("tensor-fusion.ai", "v1", "gpupools", body)
    return api_client


def test_one_malformed_pool_is_skipped_and_the_good_one_is_planned(
    world: tuple[Deps, Any, EmbeddedKubeAPI], caplog: pytest.LogCaptureFixture
) -> None:
    deps, ec2, api = world
    api_client = _store_bad_pool(api)
    with caplog.at_level(logging.WARNING, logger="gpupool.adapters.kube.reading"):
        assert [pool.name for pool in deps.cluster.list_pools()] == ["pool-a"]
    logged = [json.loads(record.getMessage()) for record in caplog.records]
    assert any(line["action"] == "skip_unreadable" and BAD_FIELD in line["message"] for line in logged)
    outcome = handle_launch(Reconcile(pool=None, trigger="schedule", event_id="evt-bad"), deps)
    assert not outcome.errors, outcome.errors
    real_adapters._assert_one_instance_per_claim(deps, ec2)
    events = k8s.CoreV1Api(api_client).list_event_for_all_namespaces().items
    warnings = [e for e in events if e.type == "Warning" and e.involved_object.name == "a-broken"]
    assert warnings and warnings[0].reason == "UnreadableSpec"
    assert warnings[0].involved_object.kind == "GPUPool"
    assert (
        BAD_FIELD in warnings[0].message
        and "unknown requirement key 'example.com/rack'" in warnings[0].message
    )


def test_a_pool_whose_name_leaves_no_room_for_claim_names_is_skipped_with_the_reason(
    world: tuple[Deps, Any, EmbeddedKubeAPI], caplog: pytest.LogCaptureFixture
) -> None:
    deps, _ec2, api = world
    api_client = kube_config.new_client_from_config(config_file=str(api.kubeconfig_path))
    name = "p" * 55  # a valid Kubernetes name TensorFusion's CRD takes; its claims' labels would not be
    body = {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool", "metadata": {"name": name}, "spec": {}}
    k8s.CustomObjectsApi(api_client).create_cluster_custom_object("tensor-fusion.ai", "v1", "gpupools", body)
    with caplog.at_level(logging.WARNING, logger="gpupool.adapters.kube.reading"):
        assert [pool.name for pool in deps.cluster.list_pools()] == ["pool-a"]
    logged = [json.loads(record.getMessage()) for record in caplog.records]
    assert any("55 characters; at most 54" in line["message"] for line in logged)
    events = k8s.CoreV1Api(api_client).list_event_for_all_namespaces().items
    (warning,) = [e for e in events if e.involved_object.name == name]
    assert warning.reason == "UnreadableSpec" and "node-provisioner label value" in warning.message
