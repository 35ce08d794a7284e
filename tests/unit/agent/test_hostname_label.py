"""The `kubernetes.io/hostname` label the agent writes on its GPU objects: the node's name while it
is a valid label value, a stable shortened form past 63 characters (the nodes Karpenter's KWOK
provider names after their NodeClaim reach 65 and more), and the GPU object carrying it."""

from __future__ import annotations

import re

from gpupool_incluster.agent.discovery import GpuFacts, gpu_object, hostname_label
from gpupool_incluster.agent.nvml import DeviceInfo

LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LONG = "kwok-tf-4f23b4-2a22ff65-coyotetranslucent-5-cf4rzpsrvf-1533197075"


def test_a_short_name_is_its_own_label() -> None:
    assert hostname_label("ip-10-0-1-7.ec2.internal") == "ip-10-0-1-7.ec2.internal"
    assert hostname_label("n" * 63) == "n" * 63


def test_a_long_name_gets_a_valid_stable_label_of_its_own() -> None:
    label = hostname_label(LONG)
    assert len(label) <= 63 and LABEL_VALUE.match(label), label
    assert label == hostname_label(LONG)
    assert label.startswith(LONG[:54])
    assert hostname_label(LONG[:-1] + "6") != label


def test_the_gpu_object_of_a_long_named_node_names_the_node_in_its_status() -> None:
    device = DeviceInfo(uuid="GPU-1", name="NVIDIA T4", memory_total=16 * 1024**3, index=0, numa_node=0)
    body = gpu_object(GpuFacts(device), node=LONG, pool="p")
    assert body["metadata"]["labels"]["kubernetes.io/hostname"] == hostname_label(LONG)
    assert body["status"]["nodeSelector"] == {"kubernetes.io/hostname": LONG}
