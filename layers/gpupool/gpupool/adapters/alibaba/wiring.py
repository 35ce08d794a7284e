"""Build the service's `Deps` for Alibaba Cloud from environment variables (FC, `gpupool invoke`).

Role: `read_alibaba_environment(environ)` parses and checks every variable (pure but for
reading credential files; a bad value is a `ConfigError` naming the variable, never showing a
credential) and `build_alibaba_deps(environ)` turns the result into `Deps`: `EcsCompute` on
the ECS SDK (`alibaba.api.SdkEcsApi`), `KubeCluster` on an `ApiClient` from `kube.auth` (the
kubeconfig read from a KMS secret when GPUPOOL_KUBECONFIG_SECRET names one), the delivery
ledger (`KubeDeliveryLedger`) on the same client, a UTC clock, and the region's priced offerings
— live over the bundled Alibaba catalog (`alibaba.pricing`, GPUPOOL_PRICES=live), or the catalog
alone. `alibaba_secret(environ, name)` reads a KMS secret the
functions name (the relay's HMAC secret, GPUPOOL_RELAY_HMAC_SECRET_ID). The SDK and the
kubernetes client are imported, and their clients built, on first use of each port.

Variables (defaults in brackets; durations as in `gpupool.adapters.environment`):
  GPUPOOL_CLUSTER_NAME (required) — the TensorFusion cluster; the instances' cluster tag
  ALIBABA_CLOUD_REGION_ID, else FC_REGION (set by Function Compute) (required)
  GPUPOOL_ECS_ENDPOINT [ecs.<region>.aliyuncs.com] — the sandbox's ECS endpoint URL
  credentials: the FC context's (passed in by the FC handler), else the files named by
      GPUPOOL_ALIBABA_ACCESS_KEY_PATH / GPUPOOL_ALIBABA_SECRET_KEY_PATH, else
      ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET / ALIBABA_CLOUD_SECURITY_TOKEN,
      else the default chain of alibabacloud-credentials
  GPUPOOL_ECS_EXTRA_PARAMS [{}] — the cluster's computingVendor extraParams as a JSON object
  GPUPOOL_KUBE_ACCESS — incluster | kubeconfig [kubeconfig if KUBECONFIG, GPUPOOL_KUBECONFIG or
      GPUPOOL_KUBECONFIG_SECRET is set, else incluster]; KUBECONFIG (a path),
      GPUPOOL_KUBECONFIG (the content; local use), GPUPOOL_KUBECONFIG_SECRET (the KMS secret
      holding the content: what a deployment uses), GPUPOOL_KUBE_CONTEXT,
      GPUPOOL_KUBE_NAMESPACE [default], GPUPOOL_KUBE_TIMEOUT [10s], GPUPOOL_ALIBABA_TIMEOUT [20s]
  GPUPOOL_KMS_ENDPOINT [kms.<region>.aliyuncs.com] — where KMS secrets are read
  GPUPOOL_PRICES — live | catalog [catalog; s.yaml sets live]: zone offerings and prices read
      from ECS (`alibaba.pricing`) over the shipped catalog, or the catalog alone;
      GPUPOOL_PRICE_TTL [1h]
  and the policy knobs GPUPOOL_LAUNCH_TIMEOUT … GPUPOOL_MAX_LAUNCH_ROUNDS, as on AWS.

Must not: import the ECS SDK or kubernetes at module level, decide anything, read
`os.environ` (the caller passes the mapping), or log credentials.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from gpupool.adapters.alibaba.api import EcsCredentials
from gpupool.adapters.alibaba.credentials import CredentialsError, from_environment
from gpupool.adapters.environment import (
    ConfigError,
    Lazy,
    PriceReading,
    SecretUnavailable,
    UtcClock,
    catalog_offerings,
    cluster_name,
    duration_seconds,
    live_offerings,
    read_price_reading,
    read_settings,
    url_variable,
)
from gpupool.adapters.kube.wiring import kube_ports
from gpupool.service.deps import Deps, Settings
from gpupool.service.ports import Clock, CloudProvider

if TYPE_CHECKING:
    from gpupool.core.planning.plan import OfferingRef
    from gpupool.service.pricing_ports import Pricing

__all__ = ["AlibabaEnvironment", "alibaba_secret", "build_alibaba_deps", "read_alibaba_environment"]

_KUBE_MODES = ("incluster", "kubeconfig")


@dataclass(frozen=True, kw_only=True)
class AlibabaEnvironment:
    """Everything `build_alibaba_deps` needs, checked."""

    settings: Settings
    region: str
    ecs_endpoint: str | None
    credentials: EcsCredentials | None  # None: the default chain (or the FC context's)
    extra_params: dict[str, str]
    kube_mode: str
    kubeconfig_path: str | None
    kubeconfig_content: str | None
    kubeconfig_secret: str | None  # a KMS secret holding the kubeconfig (read on first use)
    kms_endpoint: str | None
    kube_context: str | None
    kube_namespace: str
    kube_timeout_s: float
    ecs_timeout_s: float
    prices: PriceReading  # GPUPOOL_PRICES, GPUPOOL_PRICE_TTL


def _extra_params(text: str) -> dict[str, str]:
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"GPUPOOL_ECS_EXTRA_PARAMS is not JSON: {error.msg}") from None
    if not isinstance(parsed, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()
    ):
        raise ConfigError(
            'GPUPOOL_ECS_EXTRA_PARAMS must be a JSON object of strings, e.g. {"systemDiskSize": "100"}'
        )
    return cast(dict[str, str], parsed)


def read_alibaba_environment(environ: Mapping[str, str]) -> AlibabaEnvironment:
    """Parse and check the variables listed in this module's docstring. Raises ConfigError."""
    cluster = cluster_name(environ)
    region = (environ.get("ALIBABA_CLOUD_REGION_ID") or environ.get("FC_REGION") or "").strip()
    if not region:
        raise ConfigError("ALIBABA_CLOUD_REGION_ID (or FC_REGION, set by Function Compute) is required")
    path = (environ.get("KUBECONFIG") or "").split(":")[0] or None
    content = environ.get("GPUPOOL_KUBECONFIG") or None
    secret = (environ.get("GPUPOOL_KUBECONFIG_SECRET") or "").strip() or None
    mode = environ.get("GPUPOOL_KUBE_ACCESS", "").strip() or (
        "kubeconfig" if path or content or secret else "incluster"
    )
    if mode not in _KUBE_MODES:
        raise ConfigError(
            f"GPUPOOL_KUBE_ACCESS={mode!r} is not one of: {', '.join(_KUBE_MODES)} (on Alibaba Cloud)"
        )
    if mode == "kubeconfig" and not (path or content or secret):
        raise ConfigError(
            "GPUPOOL_KUBE_ACCESS=kubeconfig needs GPUPOOL_KUBECONFIG_SECRET (a KMS secret), "
            "KUBECONFIG or GPUPOOL_KUBECONFIG"
        )
    try:
        credentials = from_environment(environ)
    except CredentialsError as error:
        raise ConfigError(str(error)) from None
    endpoint = url_variable(environ, "GPUPOOL_ECS_ENDPOINT")
    return AlibabaEnvironment(
        settings=read_settings(environ, cluster, region),
        region=region,
        ecs_endpoint=endpoint,
        credentials=credentials,
        extra_params=_extra_params(environ.get("GPUPOOL_ECS_EXTRA_PARAMS") or "{}"),
        kube_mode=mode,
        kubeconfig_path=path,
        kubeconfig_content=content,
        kubeconfig_secret=secret if mode == "kubeconfig" and not (path or content) else None,
        kms_endpoint=url_variable(environ, "GPUPOOL_KMS_ENDPOINT"),
        kube_context=environ.get("GPUPOOL_KUBE_CONTEXT") or None,
        kube_namespace=environ.get("GPUPOOL_KUBE_NAMESPACE") or "default",
        kube_timeout_s=duration_seconds(environ, "GPUPOOL_KUBE_TIMEOUT", "10s"),
        ecs_timeout_s=duration_seconds(environ, "GPUPOOL_ALIBABA_TIMEOUT", "20s"),
        prices=read_price_reading(environ),
    )


def build_alibaba_deps(
    environ: Mapping[str, str],
    *,
    clock: Clock | None = None,
    credentials: Callable[[], EcsCredentials | None] | None = None,
) -> Deps:
    """Deps for Alibaba Cloud from `environ`. Raises ConfigError on a bad variable.

    `credentials` (the FC handler passes the invocation context's) wins over those of the
    environment when it returns some; clients are built on first use.
    """
    env = read_alibaba_environment(environ)
    clock = clock or UtcClock()

    def current_credentials() -> EcsCredentials | None:
        given = credentials() if credentials is not None else None
        return given or env.credentials

    def compute() -> CloudProvider:
        from gpupool.adapters.alibaba.api import SdkEcsApi, sdk_client
        from gpupool.adapters.alibaba.compute import EcsCompute

        def client_for(chosen: EcsCredentials | None) -> Any:
            return sdk_client(
                region=env.region, endpoint=env.ecs_endpoint, credentials=chosen, timeout_s=env.ecs_timeout_s
            )

        return EcsCompute(
            SdkEcsApi(client_for, current_credentials),
            cluster=env.settings.cluster_name,
            region=env.region,
            default_params=env.extra_params,
        )

    def api_client() -> Any:
        from gpupool.adapters.alibaba.kms import kms_secret_data
        from gpupool.adapters.kube.auth import KubeAccess, KubeAccessError, build_api_client

        content = env.kubeconfig_content
        if env.kubeconfig_secret is not None:
            try:
                content = kms_secret_data(
                    env.kubeconfig_secret,
                    region=env.region,
                    credentials=current_credentials(),
                    endpoint=env.kms_endpoint,
                    timeout_s=env.ecs_timeout_s,
                )
            except SecretUnavailable as error:
                raise ConfigError(f"GPUPOOL_KUBECONFIG_SECRET={env.kubeconfig_secret}: {error}") from None
        try:
            access = KubeAccess(
                mode=cast(Any, env.kube_mode),
                kubeconfig_path=env.kubeconfig_path,
                kubeconfig_content=content,
                context=env.kube_context,
            )
            return build_api_client(access)
        except KubeAccessError as error:
            raise ConfigError(f"Kubernetes access ({env.kube_mode}): {error}") from error

    kube = kube_ports(
        api_client, namespace=env.kube_namespace, request_timeout_s=env.kube_timeout_s, now=clock.now
    )
    return Deps(
        compute=cast(CloudProvider, Lazy(compute)),
        cluster=kube.cluster,
        clock=clock,
        settings=env.settings,
        offerings=_offerings(env, current_credentials, clock),
        deliveries=kube.deliveries,
    )


def _offerings(
    env: AlibabaEnvironment, credentials: Callable[[], EcsCredentials | None], clock: Clock
) -> Sequence[OfferingRef]:
    """The catalog's offerings (GPUPOOL_PRICES=catalog), or live ones over it (`live`), read
    through an ECS client whose timeouts are the read's deadline."""
    if env.prices.mode == "catalog":
        return catalog_offerings("alibaba", env.region)

    def pricing() -> Pricing:
        from gpupool.adapters.alibaba.api import SdkEcsApi, sdk_client
        from gpupool.adapters.alibaba.pricing import EcsPricing
        from gpupool.service.live_offerings import PriceBounds

        seconds = PriceBounds().deadline.total_seconds()

        def client_for(chosen: EcsCredentials | None) -> Any:
            return sdk_client(
                region=env.region, endpoint=env.ecs_endpoint, credentials=chosen, timeout_s=seconds
            )

        return EcsPricing(SdkEcsApi(client_for, credentials))

    return live_offerings("alibaba", env.region, Lazy(pricing).resolve, clock=clock, ttl=env.prices.ttl)


def alibaba_secret(
    environ: Mapping[str, str],
    name: str,
    *,
    credentials: Callable[[], EcsCredentials | None] | None = None,
) -> str:
    """The value of KMS secret `name`, read with the region and endpoint of `environ` and the
    credentials `credentials()` gives (the FC context's), else those of `environ`, else the SDK's
    default chain. Raises `gpupool.adapters.environment.SecretUnavailable`."""
    from gpupool.adapters.alibaba.kms import kms_secret_data

    region = (environ.get("ALIBABA_CLOUD_REGION_ID") or environ.get("FC_REGION") or "").strip()
    if not region:
        raise SecretUnavailable(f"KMS secret {name}: ALIBABA_CLOUD_REGION_ID (or FC_REGION) is not set")
    try:
        endpoint = url_variable(environ, "GPUPOOL_KMS_ENDPOINT")
        chosen = (credentials() if credentials is not None else None) or from_environment(environ)
    except (ConfigError, CredentialsError) as error:
        raise SecretUnavailable(f"KMS secret {name}: {error}") from None
    return kms_secret_data(name, region=region, credentials=chosen, endpoint=endpoint)
