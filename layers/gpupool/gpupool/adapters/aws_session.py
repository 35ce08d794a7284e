"""boto3 sessions for the functions, whose data loader is asked only about the services gpupool calls.

Role: `aws_session(region_name=…, **credentials)` — a boto3 `Session` on a botocore session whose
data loader (`ServicesLoader`) answers "which services have this kind of data" from `SERVICES`,
the services gpupool makes clients for (EC2 for instances, EKS for `eks` access, Secrets Manager
for kubeconfig and relay secrets), by listing those services' folders alone. botocore's own
`Loader.list_available_services` walks the folder of every service in its data tree (hundreds,
each listed and its versions' files looked for) and is asked once per kind of data a client
loads (its service model, its endpoint rules) — on the first event's path, and on the cold
filesystem a Lambda cold start reads. What a client loads is unchanged:
the same search path (botocore's `create_loader` with the session's `data_path`, i.e.
`AWS_DATA_PATH`), the same latest API version, the same files. A client for any other service
is refused by botocore with its UnknownServiceError, which names the services here.
One model is not read from botocore's files: EC2's `service-2`, which the loader answers with
the cut of it that gpupool ships (`adapters/ec2_model`: the operations `Ec2Compute` calls, each
as botocore has it) when the running botocore is the version it was cut from, the API version
asked for is the cut's (or none, i.e. the latest) and no `AWS_DATA_PATH` is set (a model put
there is read as botocore would).

Must not: change which model files a client loads beyond that one, or be imported by a module
that is imported at a function's init (the wiring imports it on first use of an AWS port: it
imports botocore).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import boto3
import botocore.session
from botocore.exceptions import DataNotFoundError
from botocore.loaders import Loader, create_loader

from gpupool.adapters.ec2_model import shipped_model

__all__ = ["SERVICES", "ServicesLoader", "aws_session"]

# Every service gpupool makes a boto3 client for (adapters/wiring.py, kube_auth.py, secret_stores.py).
SERVICES = ("ec2", "eks", "secretsmanager")


class ServicesLoader(Loader):  # type: ignore[misc]  # botocore ships no types
    """botocore's data loader, its service listing limited to `services` and the models in
    `shipped` (by service and type: a function returning the model, or None where it does not
    apply) read from there instead of the search path (see module docstring)."""

    def __init__(
        self,
        services: tuple[str, ...],
        *,
        shipped: Mapping[tuple[str, str], Callable[[], dict[str, Any] | None]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._services = services
        self._shipped = dict(shipped or {})
        self._read: dict[tuple[str, str], dict[str, Any] | None] = {}

    def load_service_model(self, service_name: str, type_name: str, api_version: str | None = None) -> Any:
        """The model `shipped[(service, type)]()` returns (called once) when it returns one of
        `api_version` (none: any), else botocore's from the search path."""
        key = (service_name, type_name)
        if key in self._shipped and key not in self._read:
            self._read[key] = self._shipped[key]()
        model = self._read.get(key)
        if model is not None and api_version in (None, model["metadata"]["apiVersion"]):
            return model
        return super().load_service_model(service_name, type_name, api_version)

    def list_available_services(self, type_name: str) -> list[str]:
        """The services of `services` that have `type_name` data on the search path."""
        found: list[str] = []
        for service in self._services:
            try:
                self.list_api_versions(service, type_name)
            except DataNotFoundError:
                continue
            found.append(service)
        return sorted(found)


def aws_session(*, region_name: str, **credentials: Any) -> Any:
    """A boto3 Session in `region_name` (credentials: boto3.Session's keyword arguments; none:
    the default chain) whose data loader is a `ServicesLoader` for `SERVICES`, with the shipped
    EC2 model where it applies (see the module docstring)."""
    core = botocore.session.get_session()
    data_path = core.get_config_variable("data_path")
    default = create_loader(data_path)
    loader = ServicesLoader(
        SERVICES,
        shipped={} if data_path else {("ec2", "service-2"): shipped_model},
        extra_search_paths=default.search_paths,
        include_default_search_paths=False,
    )
    core.register_component("data_loader", loader)
    return boto3.session.Session(botocore_session=core, region_name=region_name, **credentials)
