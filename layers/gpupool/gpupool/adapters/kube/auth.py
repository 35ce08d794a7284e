"""How a function reaches the Kubernetes API: in-cluster, a kubeconfig, or an EKS token.

Role: turn a `KubeAccess` (parsed from the environment by `wiring`) into an authenticated
`kubernetes.client.ApiClient`:
* `incluster` — the pod's service-account token and CA (the relay, or a function run in-cluster);
* `kubeconfig` — a kubeconfig file path or its content (the content may come from a Secrets
  Manager secret the wiring read); exec plugins are not available in Lambda, use tokens or certs;
* `eks` — built by the caller's `eks` builder (`gpupool.adapters.aws.eks.eks_api_client`: a
  bearer token minted from the function's own IAM role, the endpoint and CA from
  `eks:DescribeCluster` unless given), so this module names no cloud's API.
See docs/kube-access.md for the IAM and RBAC each needs.

Must not: read the environment (the wiring does), fall back silently from one mode to another,
or import the kubernetes client before a client is actually built (the wiring
imports this module to parse settings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["KUBE_ACCESS_MODES", "KubeAccess", "KubeAccessError", "build_api_client"]

KubeAccessMode = Literal["incluster", "kubeconfig", "eks"]
KUBE_ACCESS_MODES: tuple[KubeAccessMode, ...] = ("incluster", "kubeconfig", "eks")


class KubeAccessError(ValueError):
    """The chosen access mode cannot be set up; the message says what is missing or wrong."""


@dataclass(frozen=True, kw_only=True)
class KubeAccess:
    """One way to reach the API server. Only the fields of `mode` are read."""

    mode: KubeAccessMode
    kubeconfig_path: str | None = None
    kubeconfig_content: str | None = None
    context: str | None = None
    eks_cluster_name: str | None = None
    region: str | None = None
    endpoint: str | None = None
    ca_data: str | None = None  # base64 PEM, as eks:DescribeCluster returns it

    def __post_init__(self) -> None:
        if self.mode not in KUBE_ACCESS_MODES:
            raise KubeAccessError(
                f"unknown Kubernetes access mode {self.mode!r} (one of {KUBE_ACCESS_MODES})"
            )
        if self.mode == "kubeconfig" and not (self.kubeconfig_path or self.kubeconfig_content):
            raise KubeAccessError("kubeconfig access needs a kubeconfig path or its content")
        if self.mode == "eks":
            if not self.eks_cluster_name:
                raise KubeAccessError("eks access needs the EKS cluster name")
            if not self.region:
                raise KubeAccessError("eks access needs the AWS region")
            if bool(self.endpoint) != bool(self.ca_data):
                raise KubeAccessError("eks access: give both the endpoint and the CA data, or neither")


def _incluster() -> Any:
    from kubernetes import client as k8s
    from kubernetes import config as kube_config

    k8s_config: Any = kube_config  # untyped module

    configuration = k8s.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=configuration)
    except k8s_config.ConfigException as error:
        raise KubeAccessError(
            f"in-cluster access: not running in a pod with a service account ({error})"
        ) from error
    return k8s.ApiClient(configuration)


def _kubeconfig(access: KubeAccess) -> Any:
    import yaml
    from kubernetes import client as k8s
    from kubernetes import config as kube_config

    k8s_config: Any = kube_config  # untyped module

    configuration = k8s.Configuration()
    try:
        if access.kubeconfig_content:
            loaded = yaml.safe_load(access.kubeconfig_content)
            if not isinstance(loaded, dict):
                raise KubeAccessError("kubeconfig content is not a YAML mapping")
            k8s_config.load_kube_config_from_dict(
                loaded, context=access.context, client_configuration=configuration
            )
        else:
            k8s_config.load_kube_config(
                config_file=access.kubeconfig_path, context=access.context, client_configuration=configuration
            )
    except (k8s_config.ConfigException, yaml.YAMLError, OSError) as error:
        source = "content" if access.kubeconfig_content else access.kubeconfig_path
        raise KubeAccessError(f"kubeconfig ({source}) cannot be used: {error}") from error
    return k8s.ApiClient(configuration)


def build_api_client(access: KubeAccess, *, eks: Callable[[KubeAccess], Any] | None = None) -> Any:
    """An authenticated `kubernetes.client.ApiClient` for `access`.

    `eks` builds the client of the `eks` mode (the AWS wiring passes
    `gpupool.adapters.aws.eks.eks_api_client` on its session); no other mode needs it. Raises
    KubeAccessError with a message naming what is wrong.
    """
    if access.mode == "incluster":
        return _incluster()
    if access.mode == "kubeconfig":
        return _kubeconfig(access)
    if eks is None:
        raise KubeAccessError("eks access needs an AWS session")
    return eks(access)
