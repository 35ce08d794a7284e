"""How a function reaches the Kubernetes API: in-cluster, a kubeconfig, or an EKS token.

Role: turn a `KubeAccess` (parsed from the environment by `wiring`) into an authenticated
`kubernetes.client.ApiClient`:
* `incluster` — the pod's service-account token and CA (the relay, or a function run in-cluster);
* `kubeconfig` — a kubeconfig file path or its content (the content may come from a Secrets
  Manager secret the wiring read); exec plugins are not available in Lambda, use tokens or certs;
* `eks` — a bearer token minted from the function's own IAM role (`eks_token`, a presigned STS
  GetCallerIdentity URL, renewed before it expires), and the endpoint and CA from
  `eks:DescribeCluster` unless given. No long-lived secret is stored anywhere.
See docs/kube-access.md for the IAM and RBAC each needs.

Must not: read the environment (the wiring does), fall back silently from one mode to another,
or import the kubernetes client or botocore before a client is actually built (the wiring
imports this module to parse settings).
"""

from __future__ import annotations

import base64
import binascii
import tempfile
import time
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


def _write_ca(ca_data: str) -> str:
    try:
        pem = base64.b64decode(ca_data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise KubeAccessError("eks access: the CA data is not base64") from error
    # Lambda can write only under /tmp; the file lives as long as the execution environment.
    with tempfile.NamedTemporaryFile("wb", prefix="gpupool-eks-ca-", suffix=".crt", delete=False) as handle:
        handle.write(pem)
        return handle.name


def _describe_eks(session: Any, access: KubeAccess) -> tuple[str, str]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        eks = session.client("eks", region_name=access.region)
        cluster = eks.describe_cluster(name=access.eks_cluster_name)["cluster"]
        return str(cluster["endpoint"]), str(cluster["certificateAuthority"]["data"])
    except (ClientError, BotoCoreError, KeyError) as error:
        raise KubeAccessError(
            f"eks access: cannot describe EKS cluster {access.eks_cluster_name}: {error}"
        ) from error


def _eks(access: KubeAccess, session: Any) -> Any:
    from kubernetes import client as k8s

    from gpupool.adapters.eks_token import TokenSource, install_token_refresh

    if session is None:
        raise KubeAccessError("eks access needs an AWS session")
    if access.endpoint and access.ca_data:
        endpoint, ca_data = access.endpoint, access.ca_data
    else:
        endpoint, ca_data = _describe_eks(session, access)
    configuration = k8s.Configuration()
    configuration.host = endpoint
    configuration.ssl_ca_cert = _write_ca(ca_data)
    configuration.verify_ssl = True

    def credentials() -> Any:
        found = session.get_credentials()
        if found is None:
            raise KubeAccessError("eks access: no AWS credentials in this environment")
        return found

    source = TokenSource(
        cluster_name=str(access.eks_cluster_name),
        region=str(access.region),
        credentials=credentials,
        monotonic=time.monotonic,
    )
    install_token_refresh(configuration, source)
    return k8s.ApiClient(configuration)


def build_api_client(access: KubeAccess, *, aws_session: Any = None) -> Any:
    """An authenticated `kubernetes.client.ApiClient` for `access`.

    `aws_session` (an `AwsSession`) is needed only for `eks`. Raises KubeAccessError with a
    message naming what is wrong.
    """
    if access.mode == "incluster":
        return _incluster()
    if access.mode == "kubeconfig":
        return _kubeconfig(access)
    return _eks(access, aws_session)
