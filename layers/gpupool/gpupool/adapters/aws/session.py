"""AWS sessions for the functions, whose data loader is asked only about the services gpupool calls.

Role: `aws_session(region_name=…, credentials…)` — an `AwsSession` (clients and credentials, what
gpupool asks of boto3's Session, on botocore alone: boto3 adds resources and S3 transfers, which
gpupool never uses, and its imports to every cold start) on a botocore session whose data
loader (`ServicesLoader`) answers "which services have this kind of data" from `SERVICES`, the
services gpupool makes clients for (EC2 for instances and offerings, EKS for `eks` access, the
Pricing API for On-Demand prices, Secrets Manager for kubeconfig and relay secrets), by listing
those services' folders alone. botocore's own
`Loader.list_available_services` walks the folder of every service in its data tree (hundreds,
each listed and its versions' files looked for) and is asked once per kind of data a client
loads (its service model, its endpoint rules) — on the first event's path, and on the cold
filesystem a Lambda cold start reads. What a client loads is unchanged:
the same search path (botocore's `create_loader` with the session's `data_path`, i.e.
`AWS_DATA_PATH`), the same latest API version, the same files. A client for any other service
is refused by botocore with its UnknownServiceError, which names the services here.
Two files are answered from the cuts gpupool ships (`adapters/aws/botocore_data`): EC2's
`service-2` (only the operations `Ec2Compute` calls, each as botocore has it) and
`endpoints.json` (only the services here) — when the running botocore is the version they were
cut from and the file botocore would read is its own (no `AWS_DATA_PATH` or `~/.aws/models` copy
comes first on the search path; such a file is read as botocore would). botocore then processes
them as it would its files (extras, the endpoint resolver's "built-in data" flag).

Must not: change which data a client reads beyond those cuts, or be imported by a module that is
imported at a function's init (the wiring imports it on first use of an AWS port: it imports
botocore).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import botocore.session
from botocore.exceptions import DataNotFoundError
from botocore.loaders import Loader, create_loader

from gpupool.adapters.aws.botocore_data import shipped_data

__all__ = ["SERVICES", "AwsSession", "ServicesLoader", "aws_session"]

# Every service gpupool makes a client for (adapters/aws/wiring.py, aws/eks.py, aws/secrets_manager.py;
# the Pricing API for live On-Demand prices, aws/pricing.py).
SERVICES = ("ec2", "eks", "pricing", "secretsmanager")


class ServicesLoader(Loader):  # type: ignore[misc]  # botocore ships no types
    """botocore's data loader, its service listing limited to `services` and the data names
    `shipped()` returns (called once, on the first load) answered from there when botocore would
    read them from its own data folder (see module docstring)."""

    def __init__(
        self,
        services: tuple[str, ...],
        *,
        shipped: Callable[[], Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._services = services
        self._read_shipped = shipped
        self._shipped: Mapping[str, Any] | None = None

    def load_data_with_path(self, name: str) -> tuple[Any, str]:
        """The shipped data for `name` with the path botocore would have read it from, when that
        path is in botocore's own data folder; else botocore's search (the same return)."""
        if self._shipped is None:
            self._shipped = self._read_shipped() if self._read_shipped is not None else {}
        if name in self._shipped:
            path = next(
                (place for place in self._potential_locations(name) if self.file_loader.exists(place)), None
            )
            if path is not None and self.is_builtin_path(path):
                return self._shipped[name], path
        found: tuple[Any, str] = super().load_data_with_path(name)
        return found

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


class AwsSession:
    """Clients in one region with one set of credentials, as boto3's Session makes them (a
    client is botocore's either way)."""

    def __init__(self, core: Any, region_name: str) -> None:
        self.region_name = region_name
        self.botocore_session = core

    def client(
        self,
        service_name: str,
        *,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        config: Any = None,
    ) -> Any:
        """A botocore client for `service_name` (in the session's region unless told another)."""
        return self.botocore_session.create_client(
            service_name,
            region_name=region_name or self.region_name,
            endpoint_url=endpoint_url,
            config=config,
        )

    def get_credentials(self) -> Any:
        """The session's credentials: those given, else the default chain's (None when none)."""
        return self.botocore_session.get_credentials()


def aws_session(
    *,
    region_name: str,
    aws_access_key_id: str | None = None,
    aws_secret_access_key: str | None = None,
    aws_session_token: str | None = None,
) -> AwsSession:
    """An `AwsSession` in `region_name` (credentials: the keys given, or none for the default
    chain) whose data loader is a `ServicesLoader` for `SERVICES`, with the shipped cuts of
    botocore's data where they apply (see the module docstring)."""
    core = botocore.session.get_session()
    default = create_loader(core.get_config_variable("data_path"))
    loader = ServicesLoader(
        SERVICES,
        shipped=shipped_data,
        extra_search_paths=default.search_paths,
        include_default_search_paths=False,
    )
    core.register_component("data_loader", loader)
    core.set_config_variable("region", region_name)
    if aws_access_key_id or aws_secret_access_key or aws_session_token:
        core.set_credentials(aws_access_key_id, aws_secret_access_key, aws_session_token)
    return AwsSession(core, region_name)
