"""Responses read without preloading are drained and their connection handed back to the pool."""

from __future__ import annotations

import pytest

from gpupool.adapters.kube.errors import read_body


class _Response:
    def __init__(self, data: bytes, *, fail: bool = False) -> None:
        self._data, self._fail, self.released = data, fail, False

    @property
    def data(self) -> bytes:
        if self._fail:
            raise ConnectionResetError("peer went away")
        return self._data

    def release_conn(self) -> None:
        self.released = True


def test_body_is_read_and_the_connection_released() -> None:
    response = _Response(b'{"kind": "Lease"}')
    assert read_body(response) == b'{"kind": "Lease"}'
    assert response.released


def test_connection_is_released_even_when_reading_fails() -> None:
    response = _Response(b"", fail=True)
    with pytest.raises(ConnectionResetError):
        read_body(response)
    assert response.released
