"""`scheduler.awsWebIdentity`: IRSA without EKS's webhook, for self-managed clusters
(docs/install-self-managed.md). With a role, the relay container gets `AWS_ROLE_ARN` and
`AWS_WEB_IDENTITY_TOKEN_FILE` (which botocore reads by itself) and a projected ServiceAccount token
for the audience at that path; without one, none of it; a role that is not an IAM role ARN is
refused by the schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

CHART = Path(__file__).resolve().parents[2] / "incluster" / "chart"
ROLE = "arn:aws:iam::123456789012:role/gpupool-relay"


def _relay_pod(values: dict[str, Any]) -> dict[str, Any]:
    rendered = helm.Chart.load(CHART).render(values, name="gp", namespace="gpupool-system")
    docs = [d for text in rendered.values() for d in yaml.safe_load_all(text) if d]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def _relay(pod: dict[str, Any]) -> dict[str, Any]:
    (relay,) = [c for c in pod["containers"] if c["name"] == "relay"]
    return relay


def test_a_role_mounts_a_token_for_sts_and_names_it_to_the_sdk() -> None:
    pod = _relay_pod({"scheduler": {"awsWebIdentity": {"roleArn": ROLE}}})
    env = {e["name"]: e.get("value") for e in _relay(pod)["env"]}
    assert env["AWS_ROLE_ARN"] == ROLE
    (mount,) = [m for m in _relay(pod)["volumeMounts"] if m["name"] == "aws-web-identity"]
    assert env["AWS_WEB_IDENTITY_TOKEN_FILE"] == mount["mountPath"] + "/token"
    (volume,) = [v for v in pod["volumes"] if v["name"] == "aws-web-identity"]
    (source,) = volume["projected"]["sources"]
    assert source["serviceAccountToken"] == {
        "path": "token",
        "audience": "sts.amazonaws.com",
        "expirationSeconds": 3600,
    }


def test_without_a_role_nothing_of_it_is_rendered() -> None:
    pod = _relay_pod({})
    assert "AWS_ROLE_ARN" not in {e["name"] for e in _relay(pod)["env"]}
    assert "aws-web-identity" not in {v["name"] for v in pod["volumes"]}


def test_the_schema_refuses_a_role_that_is_not_an_iam_role() -> None:
    with pytest.raises(helm.HelmValuesError, match="schema"):
        _relay_pod({"scheduler": {"awsWebIdentity": {"roleArn": "gpupool-relay"}}})
