"""Hand mutations of the tenant, stranger and insider guards, each run against the tests that should
catch it: a repeatable tally (issue 33).

Role: for each `Mutation` — one exact text replacement in one file, undoing one guard — write the
mutant, run its tests (`pytest -x -q`), put the file back (always, even on Ctrl-C), and print whether
the tests failed (caught) or passed (survived). The first 22 are the issue's: the 13 wrongly accepted
attempts' guards and the 8 surviving mutations; then older guards of the same routes, and last the
second part's (the relay apart from kube-scheduler, no pending pod blocking an Allocate). A
mutation whose text is not found exactly once is reported as stale, never silently skipped.

Usage: `.venv/bin/python benchmarks/mutations.py [name ...]` (all when no name is given); exit 1
when any mutation survived or is stale. It edits the working tree while it runs: do not run it
beside anything else that reads these files.

Must not: leave a mutant behind, or run a test the mutation is not listed with.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = "layers/gpupool/gpupool/"
RELAY = "incluster/gpupool_incluster/"
GUARD = "incluster/chart/templates/pod-guard.yaml"
RBAC = "incluster/chart/templates/scheduler-rbac.yaml"


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS: tuple[Mutation, ...] = (
    # ---- issue 33's attempts ---------------------------------------------------------------------
    Mutation(
        "claim: tags trusted beside another recorded instance",
        CORE + "core/decisions/instance_owner.py",
        "                and not _recorded(claim)\n",
        "",
        ("tests/unit/decisions/test_instance_owner.py",),
    ),
    Mutation(
        "claim: launch token not compared",
        CORE + "core/decisions/instance_owner.py",
        "                and instance.client_token == launch_token(claim)\n",
        "",
        ("tests/unit/decisions/test_instance_owner.py",),
    ),
    Mutation(
        "claim: any tagged instance names its claim (the old describe fallback)",
        CORE + "core/decisions/instance_owner.py",
        "        if instance.instance_id != instance_id or not instance.claim_name"
        " or not instance.client_token:",
        "        return next((c for c in claims if c.name == instance.claim_name), None)\n        if False:",
        ("tests/service/test_interruption.py",),
    ),
    Mutation(
        "webhook: strangers asking for index resources or the scheduler admitted",
        CORE + "scheduler/admission/mutate.py",
        "        _refuse_borrowed_scheduling(pod)\n",
        "",
        ("tests/contract/relay/test_one_gpu_pod.py",),
    ),
    Mutation(
        "extender: a stranger's filter passes every node",
        CORE + "scheduler/extender/handle.py",
        "        return STRANGER\n",
        "        return None\n",
        ("tests/contract/relay/test_one_gpu_pod.py",),
    ),
    Mutation(
        "extender: bind without an allocation record",
        CORE + "scheduler/extender/handle.py",
        "    if not isinstance(kind, GpuRequest):\n        raise RequestError(",
        "    if not isinstance(kind, GpuRequest):\n        return None\n        raise RequestError(",
        ("tests/contract/relay/test_one_gpu_pod.py", "tests/unit/scheduler/extender/test_extender.py"),
    ),
    Mutation(
        "vocabulary: dedicated-gpu alone is no GPU request",
        CORE + "core/vocabulary/pods.py",
        "    return dedicated or any(key in notes for key in GPU_REQUEST_ANNOTATIONS)",
        "    return any(key in notes for key in GPU_REQUEST_ANNOTATIONS)",
        ("tests/contract/relay/test_one_gpu_pod.py",),
    ),
    Mutation(
        "device plugin: a claimant not asking for GPUs is a candidate",
        RELAY + "agent/deviceplugin/allocate.py",
        "    if not asks_gpupool_for_gpus(pod):",
        "    if False:",
        ("tests/unit/agent/test_forged_allocations.py",),
    ),
    Mutation(
        "pod guard: strangers may ask for index resources or name the scheduler",
        GUARD,
        "        variables.asksGpupoolForGpus || variables.holdsNativeGpus\n",
        "        true\n",
        ("tests/unit/test_chart_guards_second_round.py",),
    ),
    Mutation(
        "pod guard: pods/status not judged",
        GUARD,
        "        resources: [pods, pods/status]",
        "        resources: [pods]",
        ("tests/unit/test_chart_guards_second_round.py",),
    ),
    Mutation(
        "pod guard: the relay's own pod writes not judged",
        GUARD,
        "        !variables.isRelay || (request.operation == 'UPDATE'",
        "        true || (request.operation == 'UPDATE'",
        ("tests/unit/test_chart_guards_second_round.py",),
    ),
    Mutation(
        "node guard: the relay may change a node's labels and annotations",
        GUARD,
        "        variables.labels == variables.oldLabels && variables.notes == variables.oldNotes"
        " &&\n        has(",
        "        has(",
        ("tests/unit/test_chart_guards_second_round.py",),
    ),
    Mutation(
        "quota: compute-percent and dedicated pods not converted to TFLOPS",
        CORE + "core/allocator/quota.py",
        "        return math.ceil(largest_tflops * percent / 100) * count if t_known else None",
        "        return None",
        ("tests/contract/relay/test_quota_forms.py",),
    ),
    Mutation(
        "quota: a denial names the namespace's use",
        CORE + "core/allocator/quota.py",
        "fit in what is left of the quota's total {show(ceiling)}\"",
        "fit in what is left of the quota's total {show(ceiling)} (in use {show(used)})\"",
        ("tests/contract/relay/test_quota_forms.py", "tests/unit/scheduler/admission/test_mutate.py"),
    ),
    Mutation(
        "intake: binary-mode CloudEvents read from unsigned ce-* headers",
        CORE + "core/intake/relay.py",
        '    if any(name.lower().startswith("ce-") for name in request.headers):',
        "    if False:",
        ("tests/unit/intake/test_relay_intake.py", "tests/service/test_fc_handlers.py"),
    ),
    Mutation(
        "intake: FC events from any source",
        CORE + "core/intake/alibaba.py",
        "    if event.source != ECS_SOURCE:",
        "    if False:",
        ("tests/unit/intake/test_alibaba_intake.py",),
    ),
    # ---- the mutations issue 33 found surviving ---------------------------------------------------
    Mutation(
        "ledger: replay window cut to 10 minutes",
        CORE + "service/deliveries.py",
        "REPLAY_WINDOW = timedelta(minutes=30)",
        "REPLAY_WINDOW = timedelta(minutes=10)",
        ("tests/service/test_delivery_window.py",),
    ),
    Mutation(
        "ledger: an expired record taken over without its resourceVersion",
        CORE + "adapters/kube/deliveries.py",
        'state="processing", version=version)\n        try:\n            self._replace(taken)',
        'state="processing", version=None)\n        try:\n            self._replace(taken)',
        ("tests/contract/kube/test_kube_deliveries.py",),
    ),
    Mutation(
        "lease: a renewal counts from when its write returned",
        RELAY + "relay/lease.py",
        "                self._last_renew = max(self._last_renew, began)",
        "                self._last_renew = max(self._last_renew, self.clock())",
        ("tests/contract/relay/test_leader.py",),
    ),
    Mutation(
        "lease: a write returning after the deadline makes a leader",
        RELAY + "relay/lease.py",
        " and self.clock() - began < self.timings.renew_deadline:",
        ":",
        ("tests/contract/relay/test_leader.py",),
    ),
    Mutation(
        "quota: the per-pod check removed",
        CORE + "core/allocator/quota.py",
        '    where = f"GPUResourceQuota of namespace {namespace!r}"\n    if limits.single_gpu_count',
        '    return None\n    where = f"GPUResourceQuota of namespace {namespace!r}"\n'
        "    if limits.single_gpu_count",
        ("tests/contract/relay/test_quota_forms.py", "tests/unit/scheduler/admission/test_mutate.py"),
    ),
    Mutation(
        "quota: the per-pod check weakened (an amount equal to twice the bound passes)",
        CORE + "core/allocator/quota.py",
        "        if bound is None or amount is None or amount <= bound:",
        "        if bound is None or amount is None or amount <= 2 * bound:",
        ("tests/contract/relay/test_quota_forms.py",),
    ),
    Mutation(
        "sandbox CEL: int() past int64 is a number",
        CORE + "sandbox/kubeapi/cel_functions.py",
        '    if number is None:\n        raise RuleError("integer overflow")\n    return number\n',
        "    return int(text)\n",
        ("tests/unit/test_sandbox_cel_edges.py",),
    ),
    Mutation(
        "sandbox CEL: all() raises an element's error before a later false",
        CORE + "sandbox/kubeapi/cel_functions.py",
        "            error = error or raised",
        "            raise",
        ("tests/unit/test_sandbox_cel_edges.py",),
    ),
    # ---- older guards of the same routes ---------------------------------------------------------
    Mutation(
        "webhook: scheduler-owned annotations accepted at creation",
        CORE + "scheduler/admission/mutate.py",
        "    _refuse_scheduler_owned(pod)\n",
        "",
        ("tests/unit/scheduler/admission/test_tenant_isolation.py",),
    ),
    Mutation(
        "record: another pod's record accepted",
        CORE + "scheduler/pod_record.py",
        "    if not meta.uid or record.uid != meta.uid:",
        "    if False:",
        ("tests/unit/agent/test_forged_allocations.py",),
    ),
    Mutation(
        "relay bind: another scheduler's pod bound",
        RELAY + "relay/hub.py",
        "        if scheduler != SCHEDULER_NAME:",
        "        if False:",
        ("tests/contract/relay/test_bind_errors.py",),
    ),
    Mutation(
        "HMAC: a stale timestamp accepted",
        CORE + "core/intake/signature.py",
        "    if abs(now - int(stamp)) > TOLERANCE_SECONDS:",
        "    if False:",
        ("tests/unit/intake/test_signature.py",),
    ),
    # ---- issue 33, second part: the relay apart from kube-scheduler, no pending pod blocks ---------
    Mutation(
        "chart: the relay holds kube-scheduler's roles",
        RBAC,
        "    name: {{ $kubeScheduler }}\n    namespace: {{ $.Release.Namespace }}",
        "    name: {{ $relay }}\n    namespace: {{ $.Release.Namespace }}",
        ("tests/real/test_chart_rbac_real.py",),
    ),
    Mutation(
        "chart: kube-scheduler's container mounts the relay's token",
        "incluster/chart/templates/scheduler-deployment.yaml",
        "            - name: kube-scheduler-token\n              mountPath:",
        "            - name: relay-token\n              mountPath:",
        ("tests/unit/test_chart_wiring.py::test_each_container_calls_the_api_server_as_itself",),
    ),
    Mutation(
        "device plugin: an unrecorded claimant blocks every Allocate beside it",
        RELAY + "agent/deviceplugin/allocate.py",
        "            unrecorded.append(str(exc))\n            continue\n",
        "            raise AllocationRefused(str(exc)) from None\n",
        ("tests/unit/agent/test_forged_allocations.py",),
    ),
    Mutation(
        "device plugin: a grant the unrecorded pod may have taken is never given again",
        RELAY + "agent/deviceplugin/allocate.py",
        "    candidates = fresh or (granted if unrecorded else [])",
        "    candidates = fresh",
        ("tests/unit/agent/test_forged_allocations.py",),
    ),
    Mutation(
        "agent: an unrecorded pod keeps the GPU processes it started",
        RELAY + "agent/enforce.py",
        "            self._stop_unrecorded(uuid, processes)\n",
        "",
        ("tests/contract/agent/test_unrecorded_gpu_use.py",),
    ),
    Mutation(
        "template: the relay may invoke the launch function directly",
        "template.yaml",
        "      FunctionName: !Ref LaunchFunction\n      InvokedViaFunctionUrl: true\n",
        "      FunctionName: !Ref LaunchFunction\n",
        ("tests/unit/test_template_relay.py",),
    ),
)


def run(mutation: Mutation) -> str:
    """'caught', 'survived' or 'stale' (the text to replace is not there exactly once)."""
    path = ROOT / mutation.path
    original = path.read_text()
    if original.count(mutation.old) != 1:
        return "stale"
    try:
        path.write_text(original.replace(mutation.old, mutation.new))
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            *mutation.tests,
        ]
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    finally:
        path.write_text(original)
    return "caught" if result.returncode != 0 else "survived"


def main(names: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    verdicts: dict[str, int] = {}
    for mutation in chosen:
        began = time.monotonic()
        verdict = run(mutation)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        print(f"{verdict:8} {time.monotonic() - began:6.1f} s  {mutation.name}", flush=True)
    print(", ".join(f"{count} {verdict}" for verdict, count in sorted(verdicts.items())), f"of {len(chosen)}")
    return 0 if set(verdicts) <= {"caught"} else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
