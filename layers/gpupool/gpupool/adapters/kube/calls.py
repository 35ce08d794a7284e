"""Every Kubernetes API call the functions' adapters make, as RBAC sees it: (apiGroup, resource, verb).

Role: the list the chart's functions ClusterRole / Role (incluster/chart/templates/functions-rbac.yaml)
must grant, no more and no less. tests/unit/test_chart_wiring.py compares the rendered rules with
these sets both ways, and tests/contract/relay/test_kube_calls.py calls every public method of
`KubeCluster` against the sandbox, recording each request, and checks each one is listed here.
Add a line here when an adapter learns a new call.

Must not: import anything or hold logic.
"""

from __future__ import annotations

__all__ = ["FUNCTION_CLUSTER_CALLS", "FUNCTION_NAMESPACE_CALLS"]

_TF = "tensor-fusion.ai"

# Granted by the ClusterRole <release>-functions.
FUNCTION_CLUSTER_CALLS = frozenset(
    {
        (_TF, "tensorfusionclusters", "list"),
        (_TF, "gpunodeclasses", "list"),
        (_TF, "gpunodes", "list"),
        # the kinds read on every invocation are kept current from their list by a watch (kube/listing.py)
        (_TF, "gpunodes", "watch"),
        (_TF, "gpus", "list"),
        (_TF, "gpupools", "get"),
        (_TF, "gpupools", "list"),
        (_TF, "gpupools", "create"),
        (_TF, "gpupools", "update"),
        (_TF, "gpupools", "patch"),
        (_TF, "gpupools/status", "update"),
        (_TF, "gpunodeclaims", "get"),
        (_TF, "gpunodeclaims", "list"),
        (_TF, "gpunodeclaims", "watch"),
        (_TF, "gpunodeclaims", "create"),
        (_TF, "gpunodeclaims", "patch"),
        (_TF, "gpunodeclaims", "delete"),
        (_TF, "gpunodeclaims/status", "update"),
        # the CloudVendorConnection condition (docs/provisioning-modes.md)
        (_TF, "tensorfusionclusters/status", "update"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        # an Event about a Pod carries the pod's uid, read by one GET (kube/coordination.py)
        ("", "pods", "get"),
        ("", "nodes", "patch"),
        ("", "pods", "list"),
        ("", "pods/eviction", "create"),
        ("policy", "poddisruptionbudgets", "list"),
        # Events about namespaced objects go to the object's namespace: cluster-wide.
        ("", "events", "create"),
        ("", "events", "get"),
        ("", "events", "patch"),
    }
)

# Granted by the Role <release>-functions-leases in GPUPOOL_KUBE_NAMESPACE (provisioning Leases,
# and the delivery records of kube/deliveries.py: list and delete prune the expired ones).
FUNCTION_NAMESPACE_CALLS = frozenset(
    {
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
        ("coordination.k8s.io", "leases", "list"),
        ("coordination.k8s.io", "leases", "delete"),
    }
)
