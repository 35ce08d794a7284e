"""Build the service's `Deps` for AWS from environment variables (Lambda, `gpupool invoke`).

Role: `read_aws_environment(environ)` parses and checks every variable (pure; a bad value is
a `ConfigError` naming the variable) and `build_aws_deps(environ)` turns the result into
`Deps`: `Ec2Compute` on a botocore EC2 client (its session from `aws.session`), `KubeCluster` on
an `ApiClient` from `kube.auth`, the delivery ledger (`KubeDeliveryLedger`) on the same client,
a UTC clock, and the priced offerings of the region (read when first used: bind and compaction
never read them) — live over the bundled catalog (`aws.pricing`, GPUPOOL_PRICES=live), or the
catalog alone.
`aws_secret(environ, secret_id)` reads a secret the functions name by id (the relay's HMAC
secret, GPUPOOL_RELAY_HMAC_SECRET_ID) from Secrets Manager, as the kubeconfig secret is read.
botocore and the kubernetes client are imported, and their clients built, on first use of each
port — once per cold start, and never for an invocation that does not touch that port.
`AWS_ENDPOINT_URL` (moto, the sandbox) and `KUBECONFIG` are honoured from `environ`, not from
`os.environ`.

Variables (defaults in brackets; durations as `90s`, `5m`, `1h30m` or plain seconds):
  GPUPOOL_CLUSTER_NAME (required) — the TensorFusion cluster; the instances' cluster tag
  AWS_REGION / AWS_DEFAULT_REGION (required); AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2,
      AWS_ENDPOINT_URL_SECRETS_MANAGER [unset]; AWS_ACCESS_KEY_ID, … [the default chain]
  GPUPOOL_KUBE_ACCESS — incluster | kubeconfig | kubeconfig-secret | eks
      [kubeconfig if KUBECONFIG or GPUPOOL_KUBECONFIG is set, else incluster if
      KUBERNETES_SERVICE_HOST is set, else eks]
  KUBECONFIG (a path; the first of a list), GPUPOOL_KUBECONFIG (content), GPUPOOL_KUBE_CONTEXT,
  GPUPOOL_KUBECONFIG_SECRET (Secrets Manager id of the content, for kubeconfig-secret)
  GPUPOOL_EKS_CLUSTER_NAME [GPUPOOL_CLUSTER_NAME], GPUPOOL_KUBE_ENDPOINT + GPUPOOL_KUBE_CA_DATA
      [from eks:DescribeCluster]
  GPUPOOL_KUBE_NAMESPACE [default] — the provisioning Leases
  GPUPOOL_KUBE_TIMEOUT [10s], GPUPOOL_AWS_TIMEOUT [20s]
  GPUPOOL_PRICES — live | catalog [catalog; the templates set live]: offerings and prices read
      from EC2 and the Pricing API (`aws.pricing`) over the shipped catalog, or the catalog alone;
      GPUPOOL_PRICE_TTL [1h]; AWS_ENDPOINT_URL_PRICING [AWS_ENDPOINT_URL]
  GPUPOOL_LAUNCH_TIMEOUT [5m], GPUPOOL_REGISTRATION_TIMEOUT [15m],
  GPUPOOL_OFFERING_UNAVAILABLE_FOR [3m], GPUPOOL_ORPHAN_GRACE [10m],
  GPUPOOL_FAILED_CLAIM_RETENTION [10m], GPUPOOL_NEW_NODE_PROTECTION [5m],
  GPUPOOL_LEASE_DURATION [2m], GPUPOOL_MAX_NODES_PER_PLAN [100], GPUPOOL_MAX_LAUNCH_ROUNDS [8]
The relay-authentication variables (GPUPOOL_HTTP_AUTH, GPUPOOL_RELAY_PRINCIPAL,
GPUPOOL_RELAY_HMAC_SECRET_ID) are read by `gpupool.handlers.relay_auth`, not here.

Must not: import boto3, botocore or kubernetes at module level, decide anything, or read
`os.environ` (the caller passes the mapping).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from gpupool.adapters.environment import (
    ConfigError,
    Lazy,
    LazyOfferings,
    PriceReading,
    SecretUnavailable,
    UtcClock,
    cluster_name,
    duration_seconds,
    live_offerings,
    read_price_reading,
    read_settings,
)
from gpupool.adapters.kube.wiring import kube_ports
from gpupool.service.deps import Deps, Settings
from gpupool.service.ports import Clock, CloudProvider

if TYPE_CHECKING:
    from gpupool.adapters.kube.auth import KubeAccess
    from gpupool.core.planning.plan import OfferingRef
    from gpupool.service.pricing_ports import Pricing

__all__ = [
    "AwsEnvironment",
    "ConfigError",
    "UtcClock",
    "aws_secret",
    "build_aws_deps",
    "read_aws_environment",
]

_ACCESS_ALIASES = {"kubeconfig-secret": "kubeconfig"}
_SECRET_PLACEHOLDER = "<read from Secrets Manager on first use>"


@dataclass(frozen=True, kw_only=True)
class AwsEnvironment:
    """Everything `build_aws_deps` needs, checked."""

    settings: Settings
    region: str
    kube: KubeAccess
    kubeconfig_secret: str | None
    ec2_endpoint_url: str | None  # AWS_ENDPOINT_URL_EC2, else AWS_ENDPOINT_URL (moto, the sandbox)
    secrets_endpoint_url: str | None  # AWS_ENDPOINT_URL_SECRETS_MANAGER, else AWS_ENDPOINT_URL
    credentials: dict[str, str]
    kube_namespace: str
    kube_timeout_s: float
    aws_timeout_s: float
    prices: PriceReading  # GPUPOOL_PRICES, GPUPOOL_PRICE_TTL
    pricing_endpoint_url: str | None  # AWS_ENDPOINT_URL_PRICING, else AWS_ENDPOINT_URL


def _access_mode(environ: Mapping[str, str]) -> str:
    chosen = environ.get("GPUPOOL_KUBE_ACCESS", "").strip()
    if chosen:
        return chosen
    if environ.get("KUBECONFIG") or environ.get("GPUPOOL_KUBECONFIG"):
        return "kubeconfig"
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "incluster"
    return "eks"


def _credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """`aws.session` keywords from AWS_ACCESS_KEY_ID / _SECRET_ACCESS_KEY / _SESSION_TOKEN, when set."""
    names = (
        ("aws_access_key_id", "AWS_ACCESS_KEY_ID"),
        ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY"),
        ("aws_session_token", "AWS_SESSION_TOKEN"),
    )
    return {key: environ[variable] for key, variable in names if environ.get(variable)}


def read_aws_environment(environ: Mapping[str, str]) -> AwsEnvironment:
    """Parse and check the variables listed in this module's docstring. Raises ConfigError."""
    from gpupool.adapters.kube.auth import KUBE_ACCESS_MODES, KubeAccess, KubeAccessError

    cluster = cluster_name(environ)
    region = (environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "").strip()
    if not region:
        raise ConfigError("AWS_REGION (or AWS_DEFAULT_REGION) is required")
    raw_mode = _access_mode(environ)
    mode = _ACCESS_ALIASES.get(raw_mode, raw_mode)
    if mode not in KUBE_ACCESS_MODES:
        allowed = ", ".join((*KUBE_ACCESS_MODES, *_ACCESS_ALIASES))
        raise ConfigError(f"GPUPOOL_KUBE_ACCESS={raw_mode!r} is not one of: {allowed}")
    secret_id = environ.get("GPUPOOL_KUBECONFIG_SECRET") or None
    path = (environ.get("KUBECONFIG") or "").split(":")[0] or None
    content = environ.get("GPUPOOL_KUBECONFIG") or None
    # The secret is read only when asked for, or when it is the only kubeconfig source.
    use_secret = raw_mode == "kubeconfig-secret" or (mode == "kubeconfig" and not (path or content))
    if use_secret:
        if not secret_id:
            raise ConfigError(
                f"GPUPOOL_KUBE_ACCESS={raw_mode} needs GPUPOOL_KUBECONFIG_SECRET "
                "(or KUBECONFIG / GPUPOOL_KUBECONFIG for kubeconfig)"
            )
        path, content = None, _SECRET_PLACEHOLDER
    try:
        kube = KubeAccess(
            mode=cast(Any, mode),
            kubeconfig_path=path,
            kubeconfig_content=content,
            context=environ.get("GPUPOOL_KUBE_CONTEXT") or None,
            eks_cluster_name=environ.get("GPUPOOL_EKS_CLUSTER_NAME") or cluster,
            region=region,
            endpoint=environ.get("GPUPOOL_KUBE_ENDPOINT") or None,
            ca_data=environ.get("GPUPOOL_KUBE_CA_DATA") or None,
        )
    except KubeAccessError as error:
        raise ConfigError(f"GPUPOOL_KUBE_ACCESS={raw_mode}: {error}") from error
    credentials = _credentials(environ)
    return AwsEnvironment(
        settings=read_settings(environ, cluster, region),
        region=region,
        kube=kube,
        kubeconfig_secret=secret_id if use_secret else None,
        ec2_endpoint_url=environ.get("AWS_ENDPOINT_URL_EC2") or environ.get("AWS_ENDPOINT_URL") or None,
        secrets_endpoint_url=environ.get("AWS_ENDPOINT_URL_SECRETS_MANAGER")
        or environ.get("AWS_ENDPOINT_URL")
        or None,
        credentials=credentials,
        kube_namespace=environ.get("GPUPOOL_KUBE_NAMESPACE") or "default",
        kube_timeout_s=duration_seconds(environ, "GPUPOOL_KUBE_TIMEOUT", "10s"),
        aws_timeout_s=duration_seconds(environ, "GPUPOOL_AWS_TIMEOUT", "20s"),
        prices=read_price_reading(environ),
        pricing_endpoint_url=environ.get("AWS_ENDPOINT_URL_PRICING")
        or environ.get("AWS_ENDPOINT_URL")
        or None,
    )


def build_aws_deps(environ: Mapping[str, str], *, clock: Clock | None = None) -> Deps:
    """Deps for AWS from `environ`. Raises ConfigError on a bad variable; clients are built on first use.

    `clock` (default: the system clock in UTC) also stamps Kubernetes Events, so a simulation
    that passes its clock gets simulated event times.
    """
    env = read_aws_environment(environ)
    clock = clock or UtcClock()
    session = Lazy(lambda: _session(env))

    def compute() -> CloudProvider:
        from botocore.config import Config

        from gpupool.adapters.aws.compute import Ec2Compute

        config = Config(
            retries={"total_max_attempts": 1},  # Ec2Compute's table is the one retry policy
            connect_timeout=min(env.aws_timeout_s, 5.0),
            read_timeout=env.aws_timeout_s,
        )
        client = session.resolve().client("ec2", endpoint_url=env.ec2_endpoint_url, config=config)
        return Ec2Compute(client, cluster=env.settings.cluster_name)

    def api_client() -> Any:
        from gpupool.adapters.aws.eks import eks_api_client
        from gpupool.adapters.kube.auth import KubeAccessError, build_api_client

        access = env.kube
        if env.kubeconfig_secret:
            access = _with_secret_kubeconfig(env, session.resolve())
        try:
            return build_api_client(access, eks=lambda given: eks_api_client(given, session.resolve()))
        except KubeAccessError as error:
            raise ConfigError(f"Kubernetes access ({access.mode}): {error}") from error

    kube = kube_ports(
        api_client, namespace=env.kube_namespace, request_timeout_s=env.kube_timeout_s, now=clock.now
    )
    # Karpenter's API makes Karpenter-mode claims' nodes (Deps.compute_for) and AutoSelect's.
    return Deps(
        compute=cast(CloudProvider, Lazy(compute)),
        cluster=kube.cluster,
        clock=clock,
        settings=env.settings,
        offerings=_offerings(env, session, clock),
        karpenter=kube.karpenter,
        deliveries=kube.deliveries,
    )


def _offerings(env: AwsEnvironment, session: Lazy[Any], clock: Clock) -> Sequence[OfferingRef]:
    """The catalog's offerings (GPUPOOL_PRICES=catalog), or live ones over it (`live`): the
    EC2 and Pricing API clients time out at the read's deadline and never retry (each retry
    would be a call the bound does not count)."""
    if env.prices.mode == "catalog":
        return LazyOfferings("aws", env.region)

    def pricing() -> Pricing:
        from botocore.config import Config

        from gpupool.adapters.aws.pricing import PRICING_API_REGION, AwsPricing
        from gpupool.service.live_offerings import PriceBounds

        seconds = PriceBounds().deadline.total_seconds()
        config = Config(
            retries={"total_max_attempts": 1}, connect_timeout=min(seconds, 5.0), read_timeout=seconds
        )
        ec2 = session.resolve().client("ec2", endpoint_url=env.ec2_endpoint_url, config=config)
        api = session.resolve().client(
            "pricing", region_name=PRICING_API_REGION, endpoint_url=env.pricing_endpoint_url, config=config
        )
        return AwsPricing(ec2, api)

    return live_offerings("aws", env.region, Lazy(pricing).resolve, clock=clock, ttl=env.prices.ttl)


def _session(env: AwsEnvironment) -> Any:
    from gpupool.adapters.aws.session import aws_session

    return aws_session(region_name=env.region, **env.credentials)


def _with_secret_kubeconfig(env: AwsEnvironment, session: Any) -> KubeAccess:
    from gpupool.adapters.aws.secrets_manager import aws_secret_string

    assert env.kubeconfig_secret is not None
    try:
        content = aws_secret_string(session, env.kubeconfig_secret, endpoint_url=env.secrets_endpoint_url)
    except SecretUnavailable as error:
        raise ConfigError(f"GPUPOOL_KUBECONFIG_SECRET={env.kubeconfig_secret}: {error}") from None
    return replace(env.kube, kubeconfig_path=None, kubeconfig_content=content)


def aws_secret(environ: Mapping[str, str], secret_id: str) -> str:
    """The SecretString of Secrets Manager secret `secret_id`, with the region, credentials and
    endpoint of `environ`. Raises `gpupool.adapters.environment.SecretUnavailable`."""
    from gpupool.adapters.aws.secrets_manager import aws_secret_string
    from gpupool.adapters.aws.session import aws_session

    region = (environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "").strip()
    if not region:
        raise SecretUnavailable(f"Secrets Manager secret {secret_id}: AWS_REGION is not set")
    credentials = _credentials(environ)
    session = aws_session(region_name=region, **credentials)
    endpoint = environ.get("AWS_ENDPOINT_URL_SECRETS_MANAGER") or environ.get("AWS_ENDPOINT_URL") or None
    return aws_secret_string(session, secret_id, endpoint_url=endpoint)
