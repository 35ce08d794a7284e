"""The event envelopes the Alibaba Cloud demo delivers, shaped as Function Compute receives them.

Role: an FC timer trigger event (`triggerTime`, `triggerName` as s.yaml names each function's
timer, empty payload), an EventBridge CloudEvent `ecs:Instance:StateChange` (state in ECS's
words: the simulation speaks EC2's, so `running` becomes `Running`, `terminated` `Deleted`), and
an FC 3.0 HTTP-trigger request carrying one of the relay's CloudEvents. Ids come from a counter
so a run is repeatable. Same methods as `simulation_events.EventFactory`.

Must not: interpret events (intake does) or call a handler.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from gpupool.core.vocabulary.events import TYPE_PREFIX
from gpupool.sandbox.demo.events_aws import EventFactory, iso_time

__all__ = ["AlibabaEventFactory"]

ACCOUNT = "1234567890123456"
TIMERS = {
    "launch": "gpupool-launch-reconcile",
    "bind": "gpupool-bind-sweep",
    "compact": "gpupool-compact-tick",
}
_ECS_STATES = {
    "pending": "Pending",
    "running": "Running",
    "stopping": "Stopping",
    "stopped": "Stopped",
    "shutting-down": "Deleted",
    "terminated": "Deleted",
}


class AlibabaEventFactory(EventFactory):
    """Envelopes for one simulated Alibaba Cloud account, region and cluster (the id counter and
    the constructor are EventFactory's; every envelope is Alibaba's own)."""

    def scheduled(self, function: str, at: datetime) -> dict[str, Any]:
        return {"triggerTime": iso_time(at), "triggerName": TIMERS[function], "payload": ""}

    def instance_state(self, instance_id: str, state: str, at: datetime) -> dict[str, Any]:
        return {
            "specversion": "1.0",
            "id": self._id(f"ecs-{state}"),
            "source": "acs.ecs",
            "type": "ecs:Instance:StateChange",
            "subject": f"acs:ecs:{self._region}:{ACCOUNT}:instance/{instance_id}",
            "time": iso_time(at),
            "datacontenttype": "application/json;charset=utf-8",
            "aliyunaccountid": ACCOUNT,
            "aliyunregionid": self._region,
            "data": {
                "resourceId": instance_id,
                "resourceType": "ALIYUN::ECS::Instance",
                "state": _ECS_STATES.get(state, state),
            },
        }

    def relay(self, event_type: str, data: dict[str, str], at: datetime) -> dict[str, Any]:
        """A relay CloudEvent as the function's HTTP trigger receives it."""
        event_id = self._id(event_type.replace(".", "-"))
        cloud_event = {
            "specversion": "1.0",
            "id": event_id,
            "source": f"/gpupool/relay/{self._cluster}",
            "type": f"{TYPE_PREFIX}{event_type}",
            "time": iso_time(at),
            "datacontenttype": "application/json",
            "data": data,
        }
        return {
            "version": "v1",
            "rawPath": "/",
            "body": json.dumps(cloud_event),
            "isBase64Encoded": False,
            "headers": {"Content-Type": "application/cloudevents+json; charset=utf-8"},
            "queryParameters": {},
            "requestContext": {
                "accountId": ACCOUNT,
                "http": {"method": "POST", "path": "/", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
                "requestId": event_id,
                "time": iso_time(at),
                "timeEpoch": str(int(at.timestamp() * 1000)),
            },
        }
