"""Every Kubernetes API call the relay makes, as RBAC sees it: (apiGroup, resource, verb).

Role: the list the chart's relay ClusterRole / Role must grant, no more and no less.
tests/unit/test_chart_wiring.py renders the chart and compares its rules with these sets both
ways, and tests/contract/relay/test_kube_calls.py records what the relay really calls against the
sandbox and checks every call is listed here. Add a line here when the relay learns a new call.

Must not: import anything or hold logic.
"""

from __future__ import annotations

__all__ = ["RELAY_CLUSTER_CALLS", "RELAY_NAMESPACE_CALLS"]

# Granted by the ClusterRole <release>-scheduler-relay.
RELAY_CLUSTER_CALLS = frozenset(
    {
        # bind reads the pod, annotates it, creates the Binding; the hub and forwarder watch
        ("", "pods", "get"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods", "patch"),
        ("", "pods/binding", "create"),
        # progressive migration's taint and the usable-GPUs label (a merge patch of that one
        # label: kube-scheduler's cue to retry); node labels and readiness for the hub and forwarder
        ("", "nodes", "get"),
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("", "nodes", "patch"),
        *(
            ("tensor-fusion.ai", plural, verb)
            for plural in (
                "gpus",
                "gpupools",
                "gpuresourcequotas",
                "schedulingconfigtemplates",
                "gpunodeclaims",
                "tensorfusionclusters",
                "workloadprofiles",
            )
            for verb in ("list", "watch")
        ),
        # a watched object that does not fit its model: a Warning Event on it (`unreadable.py`,
        # through the adapters' Event writer), which reads the object's uid — without it
        # `kubectl describe` (which selects Events by uid) never shows the Warning — and counts
        # a repeated Event up (get, patch)
        ("tensor-fusion.ai", "gpupools", "get"),
        ("tensor-fusion.ai", "gpunodeclaims", "get"),
        ("", "events", "create"),
        ("", "events", "get"),
        ("", "events", "patch"),
        ("karpenter.sh", "nodeclaims", "list"),
        ("karpenter.sh", "nodeclaims", "watch"),
        # /api/* behind a bearer token (--api-access token)
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
)

# Granted by the Role <release>-scheduler-leases in the release namespace (the forwarder's Lease).
RELAY_NAMESPACE_CALLS = frozenset(
    {
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }
)
