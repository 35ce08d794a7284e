"""The event envelopes the demo delivers, shaped exactly as each cloud and the relay send them.

Role: `EventFactory(cloud, region=…, cluster=…)` builds, for the deployed functions of `cloud`,
a schedule tick, an instance state change, and an HTTP request carrying one of the relay's
CloudEvents 1.0 (`ai.tensor-fusion.gpupool.<type>`, see docs/events.md); ids come from one
counter, so a run is repeatable. What differs by cloud is the envelope, one small piece each:
- AWS: an EventBridge `Scheduled Event` and an `EC2 Instance State-change Notification`
  (`"version": "0"`), and a Lambda Function URL request (payload format 2.0) with the IAM
  caller Lambda writes for AuthType AWS_IAM: a session of `RELAY_ROLE_ARN`;
- Alibaba Cloud: an FC timer trigger event (`triggerTime`, `triggerName` as s.yaml names each
  function's timer, empty payload), an EventBridge CloudEvent `ecs:Instance:StateChange` (the
  demo speaks EC2's states: `running` becomes `Running`, `terminated` `Deleted`), and an FC 3.0
  HTTP-trigger request with the `x-acs-content-sha256` the relay's ACS3 signature covers.

Must not: interpret events (intake does) or call a handler.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from itertools import count
from typing import Any, ClassVar, Protocol

from gpupool.core.catalog import Cloud
from gpupool.core.intake.acs3 import CONTENT_SHA256_HEADER, content_sha256
from gpupool.core.vocabulary.events import TYPE_PREFIX

__all__ = ["RELAY_ROLE_ARN", "Cloud", "EventFactory", "iso_time"]

Event = dict[str, Any]
NewId = Callable[[str], str]  # takes the next id of the run (only an envelope that carries one asks)
_HTTP = {"method": "POST", "path": "/", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"}
_CLOUD_EVENT_TYPE = "application/cloudevents+json; charset=utf-8"
# The IAM role the demo's relay calls the Function URLs as (GPUPOOL_RELAY_PRINCIPAL).
RELAY_ROLE_ARN = "arn:aws:iam::123456789012:role/gpupool-relay"


def iso_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class _Envelopes(Protocol):
    """One cloud's envelopes: what its scheduler, its instance events and its HTTP front send."""

    instance_prefix: str  # the id of a state change: sim-NNNN-<prefix>-<state>

    def scheduled(self, new_id: NewId, function: str, at: datetime) -> Event: ...
    def instance_state(self, event_id: str, instance_id: str, state: str, at: datetime) -> Event: ...
    def http(self, event_id: str, body: str, at: datetime) -> Event: ...


class _Aws:
    instance_prefix = "ec2"
    account = "123456789012"

    def __init__(self, region: str) -> None:
        self.region = region

    def _eventbridge(self, event_id: str, detail_type: str, source: str, at: datetime) -> Event:
        return {
            "version": "0",
            "id": event_id,
            "detail-type": detail_type,
            "source": source,
            "account": self.account,
            "time": iso_time(at),
            "region": self.region,
        }

    def scheduled(self, new_id: NewId, function: str, at: datetime) -> Event:
        return {
            **self._eventbridge(new_id(f"{function}-tick"), "Scheduled Event", "aws.events", at),
            "resources": [f"arn:aws:events:{self.region}:{self.account}:rule/gpupool-{function}"],
            "detail": {},
        }

    def instance_state(self, event_id: str, instance_id: str, state: str, at: datetime) -> Event:
        return {
            **self._eventbridge(event_id, "EC2 Instance State-change Notification", "aws.ec2", at),
            "resources": [f"arn:aws:ec2:{self.region}:{self.account}:instance/{instance_id}"],
            "detail": {"instance-id": instance_id, "state": state},
        }

    def http(self, event_id: str, body: str, at: datetime) -> Event:
        """A Function URL request (IAM-signed POST)."""
        return {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/",
            "rawQueryString": "",
            "headers": {"content-type": _CLOUD_EVENT_TYPE, "user-agent": "gpupool-relay/simulated"},
            "requestContext": {
                "accountId": self.account,
                "authorizer": {
                    "iam": {
                        "accountId": self.account,
                        "userArn": f"arn:aws:sts::{self.account}:assumed-role/gpupool-relay/simulated",
                    }
                },
                "http": dict(_HTTP),
                "requestId": event_id,
                "routeKey": "$default",
                "stage": "$default",
                "timeEpoch": int(at.timestamp() * 1000),
            },
            "body": body,
            "isBase64Encoded": False,
        }


class _Alibaba:
    instance_prefix = "ecs"
    account = "1234567890123456"
    timers: ClassVar[dict[str, str]] = {
        "launch": "gpupool-launch-reconcile",
        "bind": "gpupool-bind-sweep",
        "compact": "gpupool-compact-tick",
    }
    ecs_states: ClassVar[dict[str, str]] = {
        "pending": "Pending",
        "running": "Running",
        "stopping": "Stopping",
        "stopped": "Stopped",
        "shutting-down": "Deleted",
        "terminated": "Deleted",
    }

    def __init__(self, region: str) -> None:
        self.region = region

    def scheduled(self, new_id: NewId, function: str, at: datetime) -> Event:
        """A timer event carries no id (FC's timer trigger sends none)."""
        return {"triggerTime": iso_time(at), "triggerName": self.timers[function], "payload": ""}

    def instance_state(self, event_id: str, instance_id: str, state: str, at: datetime) -> Event:
        return {
            "specversion": "1.0",
            "id": event_id,
            "source": "acs.ecs",
            "type": "ecs:Instance:StateChange",
            "subject": f"acs:ecs:{self.region}:{self.account}:instance/{instance_id}",
            "time": iso_time(at),
            "datacontenttype": "application/json;charset=utf-8",
            "aliyunaccountid": self.account,
            "aliyunregionid": self.region,
            "data": {
                "resourceId": instance_id,
                "resourceType": "ALIYUN::ECS::Instance",
                "state": self.ecs_states.get(state, state),
            },
        }

    def http(self, event_id: str, body: str, at: datetime) -> Event:
        """An FC 3.0 HTTP-trigger request."""
        return {
            "version": "v1",
            "rawPath": "/",
            "body": body,
            "isBase64Encoded": False,
            "headers": {
                "Content-Type": _CLOUD_EVENT_TYPE,
                CONTENT_SHA256_HEADER: content_sha256(body.encode()),
            },
            "queryParameters": {},
            "requestContext": {
                "accountId": self.account,
                "http": dict(_HTTP),
                "requestId": event_id,
                "time": iso_time(at),
                "timeEpoch": str(int(at.timestamp() * 1000)),
            },
        }


_CLOUDS: dict[str, type[_Aws] | type[_Alibaba]] = {"aws": _Aws, "alibaba": _Alibaba}


class EventFactory:
    """Envelopes for one simulated account of `cloud`, its region and cluster."""

    def __init__(self, cloud: Cloud, *, region: str, cluster: str) -> None:
        self.cloud = cloud
        self._envelopes: _Envelopes = _CLOUDS[cloud](region)
        self._cluster = cluster
        self._ids = count(1)

    def _id(self, what: str) -> str:
        return f"sim-{next(self._ids):04d}-{what}"

    def scheduled(self, function: str, at: datetime) -> Event:
        return self._envelopes.scheduled(self._id, function, at)

    def instance_state(self, instance_id: str, state: str, at: datetime) -> Event:
        event_id = self._id(f"{self._envelopes.instance_prefix}-{state}")
        return self._envelopes.instance_state(event_id, instance_id, state, at)

    def relay(self, event_type: str, data: dict[str, str], at: datetime) -> Event:
        """A relay CloudEvent as the function's HTTP front receives it."""
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
        return self._envelopes.http(event_id, json.dumps(cloud_event), at)
