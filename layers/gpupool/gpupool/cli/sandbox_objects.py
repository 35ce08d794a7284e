"""Create demo manifests in a running sandbox's API server, for `gpupool demo --prepare-sandbox`.

Role: `create_manifests(api_client, manifests, plurals, kubeconfig=...)` creates each cluster-scoped
tensor-fusion.ai manifest, keeps one that already exists (409), and says what it did, one line
each — shared by the AWS and Alibaba preparations.

Must not: decide anything, or be imported by code that runs in the cloud.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpupool.cli.errors import UserError

__all__ = ["create_manifests"]


def create_manifests(
    api_client: Any, manifests: Iterable[dict[str, Any]], plurals: Mapping[str, str], *, kubeconfig: str
) -> list[str]:
    """One line per manifest: created or already there. UserError when refused or unreachable."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    done: list[str] = []
    custom = client.CustomObjectsApi(api_client)
    try:
        for manifest in manifests:
            what = f"{manifest['kind']}/{manifest['metadata']['name']}"
            try:
                custom.create_cluster_custom_object(
                    "tensor-fusion.ai", "v1", plurals[manifest["kind"]], manifest
                )
                done.append(f"Kubernetes: {what} created")
            except ApiException as error:
                if error.status != 409:
                    raise UserError(f"cannot create {what}: {error.status} {error.reason}") from None
                done.append(f"Kubernetes: {what} already there")
    except (HTTPError, OSError) as error:
        raise UserError(f"cannot reach the sandbox's API server ({kubeconfig}): {error}") from None
    return done
