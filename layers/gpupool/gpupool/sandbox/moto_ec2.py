"""A local EC2 endpoint: moto's threaded server on 127.0.0.1, on a free port.

boto3 reaches it through `AWS_ENDPOINT_URL` with dummy credentials (see `sandbox_env`).
moto keeps everything in memory, process-wide: `reset()` empties its account (moto's
`/moto-api/reset`), for a caller that must start from nothing. Its known gaps (ClientToken
ignored, some filters unimplemented) are listed in ../shared/ENVIRONMENT.md.

Must not: be imported by code that runs in the cloud; moto is a dev dependency.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self


class MotoEC2:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host, self._port = host, port
        self._server: Any = None

    def start(self) -> Self:
        from moto.server import ThreadedMotoServer  # heavy: imported only when a sandbox starts

        self._server = ThreadedMotoServer(ip_address=self._host, port=self._port, verbose=False)
        self._server.start()
        return self

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the moto EC2 server is not running")
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    def reset(self) -> Self:
        """Empty every moto backend (they are process-wide: another server's state included)."""
        import urllib.request

        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST")
        urllib.request.urlopen(request, timeout=10).close()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
