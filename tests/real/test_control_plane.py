"""The real control plane itself: it is the pinned Kubernetes, it enforces authentication and the CRDs'
own rules, its controllers run, and Karpenter's own controller launches KWOK nodes for a pod that
needs one, which the default kube-scheduler then binds and KWOK runs."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

import pytest

from gpupool.sandbox.cluster.build import KUBERNETES_VERSION
from gpupool.sandbox.cluster.controlplane import ControlPlane
from tests.real import waiting

_wait_for = waiting.wait_for


def test_it_is_the_pinned_kubernetes(control_plane: ControlPlane) -> None:
    version = control_plane.request("GET", "/version")
    assert version["gitVersion"] == KUBERNETES_VERSION


def test_an_anonymous_or_unknown_caller_is_refused(control_plane: ControlPlane) -> None:
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        request = urllib.request.Request(control_plane.url + "/api/v1/nodes", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, context=control_plane._ssl(), timeout=10)
        assert refused.value.code in (401, 403)


def test_kubectl_lists_nodes_nodepools_nodeclaims_and_gpupools(control_plane: ControlPlane) -> None:
    done = control_plane.kubectl("get", "nodes,nodepools,nodeclaims,gpupools", "-A", check=False)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr.lower()


def test_the_apiserver_evaluates_a_karpenter_crd_rule(control_plane: ControlPlane) -> None:
    """The real CEL and RE2: a trailing newline after a duration is refused by the NodeClaim CRD's pattern."""
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": f"rule-{uuid.uuid4().hex[:6]}"},
        "spec": {
            "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]}
            ],
            "expireAfter": "720h\n",
        },
    }
    done = control_plane.kubectl(
        "create", "--dry-run=server", "-f", "-", input_text=json.dumps(claim), check=False
    )
    assert done.returncode != 0
    assert "expireAfter" in done.stderr


def test_the_controllers_run(control_plane: ControlPlane) -> None:
    """kube-controller-manager's namespace and service-account controllers, and its garbage collector."""
    name = f"gc-{uuid.uuid4().hex[:6]}"
    control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    _wait_for(
        "the default service account",
        lambda: control_plane._exists(f"/api/v1/namespaces/{name}/serviceaccounts/default"),
    )
    owner = control_plane.request(
        "POST", f"/api/v1/namespaces/{name}/configmaps", {"metadata": {"name": "owner"}}
    )
    control_plane.request(
        "POST",
        f"/api/v1/namespaces/{name}/configmaps",
        {
            "metadata": {
                "name": "owned",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "owner",
                        "uid": owner["metadata"]["uid"],
                    }
                ],
            }
        },
    )
    control_plane.request("DELETE", f"/api/v1/namespaces/{name}/configmaps/owner")
    _wait_for(
        "the garbage collector to delete the owned ConfigMap",
        lambda: not control_plane._exists(f"/api/v1/namespaces/{name}/configmaps/owned"),
    )
    control_plane.request("DELETE", f"/api/v1/namespaces/{name}")
    _wait_for("the namespace to go", lambda: not control_plane._exists(f"/api/v1/namespaces/{name}"))


def test_karpenter_launches_a_kwok_gpu_node_for_a_pending_pod(control_plane: ControlPlane) -> None:
    suffix = uuid.uuid4().hex[:6]
    control_plane.kubectl(
        "apply",
        "-f",
        "-",
        input_text=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    {
                        "apiVersion": "karpenter.kwok.sh/v1alpha1",
                        "kind": "KWOKNodeClass",
                        "metadata": {"name": "default"},
                    },
                    {
                        "apiVersion": "karpenter.sh/v1",
                        "kind": "NodePool",
                        "metadata": {"name": f"gpu-{suffix}"},
                        "spec": {
                            "template": {
                                "metadata": {
                                    "labels": {"nvidia.com/gpu.present": "true", "gpupool.dev/story": suffix}
                                },
                                "spec": {
                                    "nodeClassRef": {
                                        "group": "karpenter.kwok.sh",
                                        "kind": "KWOKNodeClass",
                                        "name": "default",
                                    },
                                    "requirements": [
                                        {
                                            "key": "karpenter.sh/capacity-type",
                                            "operator": "In",
                                            "values": ["on-demand"],
                                        }
                                    ],
                                },
                            },
                            "limits": {"nvidia.com/gpu": "8"},
                        },
                    },
                ],
            }
        ),
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"needs-gpu-{suffix}", "namespace": "default"},
        "spec": {
            # Its own NodePool's label: other tests' GPU nodes share the session's control plane.
            "nodeSelector": {"nvidia.com/gpu.present": "true", "gpupool.dev/story": suffix},
            "containers": [
                {
                    "name": "main",
                    "image": "example.invalid/none:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }
    control_plane.request("POST", "/api/v1/namespaces/default/pods", pod)
    path = f"/api/v1/namespaces/default/pods/needs-gpu-{suffix}"
    running = _wait_for(
        "the pod to run on a node Karpenter launched",
        lambda: (found := control_plane.request("GET", path))["status"].get("phase") == "Running" and found,
        timeout=180,
    )
    node = control_plane.request("GET", f"/api/v1/nodes/{running['spec']['nodeName']}")
    labels = node["metadata"]["labels"]
    assert labels["karpenter.sh/nodepool"] == f"gpu-{suffix}"
    assert labels["nvidia.com/gpu.present"] == "true"  # the NodePool template's label, copied by Karpenter
    assert int(node["status"]["allocatable"]["nvidia.com/gpu"]) >= 1
    # Karpenter's registration controller writes the claim's nodeName on its own schedule: under load
    # the pod can be Running on the node before that.
    _wait_for(
        "the NodeClaim to name its node",
        lambda: any(
            claim["status"].get("nodeName") == node["metadata"]["name"]
            for claim in control_plane.request("GET", "/apis/karpenter.sh/v1/nodeclaims")["items"]
        ),
        timeout=60,
    )
    control_plane.request("DELETE", path)
