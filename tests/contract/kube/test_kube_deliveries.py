"""The delivery ledger's contract, held by the Lease one on the embedded API server and by the memory one.

Covers, for `KubeDeliveryLedger` (coordination.k8s.io Leases through the official client) and
`MemoryDeliveryLedger` alike: a first claim is `first`, a claim while it is held is
`in-progress` and after `complete` is `done`; an expired record (a dead invocation's, or a
finished one past its window) is taken over; `complete` and `release` by another holder change
nothing; a released record is `first` again; `prune` deletes only expired records; of eight
concurrent claims of one key exactly one is `first`. For the Lease ledger also: the record is a
labelled Lease in the functions' namespace with its state annotation, and a record taken over
meanwhile is not deleted by the holder that lost it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupool.adapters.kube.deliveries import LABEL_RECORD, RECORD_PREFIX, STATE_ANNOTATION, KubeDeliveryLedger
from gpupool.sandbox.kubeapi import EmbeddedKubeAPI
from gpupool.service.deliveries import DeliveryLedger
from gpupool.testing.memory_ports import MemoryDeliveryLedger

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
HOLD = timedelta(minutes=5)
KEEP = timedelta(minutes=30)
KEY = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(params=["lease", "memory"])
def ledger(request: pytest.FixtureRequest, api_client: Any) -> Iterator[DeliveryLedger]:
    if request.param == "lease":
        yield KubeDeliveryLedger(api_client, namespace="default", request_timeout_s=10)
    else:
        yield MemoryDeliveryLedger()


def test_first_then_in_progress_then_done(ledger: DeliveryLedger) -> None:
    assert ledger.claim(KEY, holder="a", now=NOW, hold_for=HOLD) == "first"
    assert ledger.claim(KEY, holder="b", now=NOW + timedelta(seconds=1), hold_for=HOLD) == "in-progress"
    ledger.complete(KEY, holder="a", now=NOW + timedelta(seconds=2), keep_for=KEEP)
    assert ledger.claim(KEY, holder="b", now=NOW + timedelta(minutes=20), hold_for=HOLD) == "done"


def test_an_expired_record_is_taken_over(ledger: DeliveryLedger) -> None:
    ledger.claim(KEY, holder="dead", now=NOW, hold_for=HOLD)  # its invocation never finishes
    assert ledger.claim(KEY, holder="b", now=NOW + HOLD, hold_for=HOLD) == "first"
    ledger.complete(KEY, holder="b", now=NOW + HOLD, keep_for=KEEP)
    assert ledger.claim(KEY, holder="c", now=NOW + HOLD + KEEP, hold_for=HOLD) == "first"


def test_only_the_holder_completes_or_releases(ledger: DeliveryLedger) -> None:
    ledger.claim(KEY, holder="a", now=NOW, hold_for=HOLD)
    ledger.complete(KEY, holder="intruder", now=NOW, keep_for=KEEP)
    ledger.release(KEY, holder="intruder")
    assert ledger.claim(KEY, holder="b", now=NOW, hold_for=HOLD) == "in-progress"
    ledger.release(KEY, holder="a")
    assert ledger.claim(KEY, holder="b", now=NOW, hold_for=HOLD) == "first"
    ledger.release("0" * 40, holder="a")  # an unknown record: nothing to do, no error


def test_prune_deletes_only_expired_records(ledger: DeliveryLedger) -> None:
    ledger.claim("a" * 40, holder="h", now=NOW, hold_for=HOLD)
    ledger.complete("a" * 40, holder="h", now=NOW, keep_for=timedelta(minutes=1))
    ledger.claim("b" * 40, holder="h", now=NOW, hold_for=HOLD)
    ledger.complete("b" * 40, holder="h", now=NOW, keep_for=KEEP)
    assert ledger.prune(now=NOW + timedelta(minutes=2)) == 1
    assert ledger.claim("b" * 40, holder="x", now=NOW + timedelta(minutes=2), hold_for=HOLD) == "done"
    assert ledger.claim("a" * 40, holder="x", now=NOW + timedelta(minutes=2), hold_for=HOLD) == "first"
    assert ledger.prune(now=NOW + timedelta(minutes=2)) == 0


def test_of_eight_concurrent_claims_exactly_one_is_first(ledger: DeliveryLedger) -> None:
    claim: Callable[[int], str] = lambda i: ledger.claim(KEY, holder=f"h{i}", now=NOW, hold_for=HOLD)  # noqa: E731
    with ThreadPoolExecutor(max_workers=8) as pool:
        states = list(pool.map(claim, range(8)))
    assert states.count("first") == 1 and states.count("in-progress") == 7


def test_a_record_is_a_labelled_lease_with_its_state(api_client: Any, kube_api: EmbeddedKubeAPI) -> None:
    from kubernetes import client

    ledger = KubeDeliveryLedger(api_client, namespace="default", request_timeout_s=10)
    ledger.claim(KEY, holder="a", now=NOW, hold_for=HOLD)
    leases = client.CoordinationV1Api(api_client)
    lease = leases.read_namespaced_lease(f"{RECORD_PREFIX}{KEY}", "default")
    assert lease.metadata.labels == {LABEL_RECORD: "delivery"}
    assert lease.metadata.annotations[STATE_ANNOTATION] == "processing"
    assert lease.spec.holder_identity == "a" and lease.spec.lease_duration_seconds == 300
    ledger.complete(KEY, holder="a", now=NOW, keep_for=KEEP)
    lease = leases.read_namespaced_lease(f"{RECORD_PREFIX}{KEY}", "default")
    assert (
        lease.metadata.annotations[STATE_ANNOTATION] == "done" and lease.spec.lease_duration_seconds == 1800
    )
    # A pool Lease in the same namespace is never pruned: only labelled delivery records are.
    leases.create_namespaced_lease("default", {"metadata": {"name": "gpupool-pool-a"}, "spec": {}})
    assert ledger.prune(now=NOW + KEEP) == 1
    assert [item.metadata.name for item in leases.list_namespaced_lease("default").items] == [
        "gpupool-pool-a"
    ]


def test_a_holder_that_lost_its_record_does_not_delete_the_new_one(api_client: Any) -> None:
    ledger = KubeDeliveryLedger(api_client, namespace="default", request_timeout_s=10)
    ledger.claim(KEY, holder="slow", now=NOW, hold_for=HOLD)
    assert ledger.claim(KEY, holder="fresh", now=NOW + HOLD, hold_for=HOLD) == "first"  # taken over
    ledger.release(KEY, holder="slow")
    ledger.complete(KEY, holder="slow", now=NOW + HOLD, keep_for=KEEP)
    assert ledger.claim(KEY, holder="other", now=NOW + HOLD, hold_for=HOLD) == "in-progress"


class _ReadThenWait(KubeDeliveryLedger):
    """A claimant that, after reading a record, lets `meanwhile` run before it writes (the race)."""

    meanwhile: Callable[[], None] | None = None

    def _read(self, key: str) -> dict[str, Any]:
        current = super()._read(key)
        step, self.meanwhile = self.meanwhile, None
        if step is not None:
            step()
        return current


def test_of_two_claimants_that_read_the_same_expired_record_only_one_takes_it(api_client: Any) -> None:
    """Issue 33, a surviving mutation: the takeover must carry the resourceVersion it read, or the
    slower claimant overwrites the faster one's record and both act on the delivery."""
    fast = KubeDeliveryLedger(api_client, namespace="default", request_timeout_s=10)
    slow = _ReadThenWait(api_client, namespace="default", request_timeout_s=10)
    fast.claim(KEY, holder="dead", now=NOW, hold_for=HOLD)  # its invocation died
    later = NOW + HOLD + timedelta(seconds=1)
    outcomes: list[str] = []
    slow.meanwhile = lambda: outcomes.append(fast.claim(KEY, holder="fast", now=later, hold_for=HOLD))
    outcomes.append(slow.claim(KEY, holder="slow", now=later, hold_for=HOLD))
    assert outcomes == ["first", "in-progress"]
    fast.complete(KEY, holder="fast", now=later, keep_for=KEEP)
    assert fast.claim(KEY, holder="other", now=later, hold_for=HOLD) == "done", "the fast one's record stands"
