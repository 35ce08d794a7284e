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

Must not: change which model files a client loads, or be imported by a module that is imported
at a function's init (the wiring imports it on first use of an AWS port: it imports botocore).
"""

from __future__ import annotations

from typing import Any

import boto3
import botocore.session
from botocore.exceptions import DataNotFoundError
from botocore.loaders import Loader, create_loader

__all__ = ["SERVICES", "ServicesLoader", "aws_session"]

# Every service gpupool makes a boto3 client for (adapters/wiring.py, kube_auth.py, secret_stores.py).
SERVICES = ("ec2", "eks", "secretsmanager")


class ServicesLoader(Loader):  # type: ignore[misc]  # botocore ships no types
    """botocore's data loader, its service listing limited to `services` (see module docstring)."""

    def __init__(self, services: tuple[str, ...], **options: Any) -> None:
        super().__init__(**options)
        self._services = services

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
    the default chain) whose data loader is a `ServicesLoader` for `SERVICES`."""
    core = botocore.session.get_session()
    default = create_loader(core.get_config_variable("data_path"))
    core.register_component(
        "data_loader",
        ServicesLoader(SERVICES, extra_search_paths=default.search_paths, include_default_search_paths=False),
    )
    return boto3.session.Session(botocore_session=core, region_name=region_name, **credentials)
