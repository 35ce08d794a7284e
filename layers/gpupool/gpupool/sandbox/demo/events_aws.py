"""The event envelopes the simulation delivers, shaped exactly as AWS and the relay send them.

Role: build an EventBridge `Scheduled Event`, an `EC2 Instance State-change Notification`
(both with `"version": "0"`), and a Lambda Function URL request (payload format 2.0) carrying
one of the relay's CloudEvents 1.0 (`ai.tensor-fusion.gpupool.<type>`, see docs/events.md).
Ids come from a counter so a run is repeatable.

Must not: interpret events (intake does) or call a handler.
"""

from __future__ import annotations

import json
from datetime import datetime
from itertools import count
from typing import Any

from gpupool.core.vocabulary.events import TYPE_PREFIX

__all__ = ["EventFactory", "iso_time"]

ACCOUNT = "123456789012"


def iso_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class EventFactory:
    """Envelopes for one simulated account, region and cluster."""

    def __init__(self, *, region: str, cluster: str) -> None:
        self._region = region
        self._cluster = cluster
        self._ids = count(1)

    def _id(self, what: str) -> str:
        return f"sim-{next(self._ids):04d}-{what}"

    def scheduled(self, function: str, at: datetime) -> dict[str, Any]:
        return {
            "version": "0",
            "id": self._id(f"{function}-tick"),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT,
            "time": iso_time(at),
            "region": self._region,
            "resources": [f"arn:aws:events:{self._region}:{ACCOUNT}:rule/gpupool-{function}"],
            "detail": {},
        }

    def instance_state(self, instance_id: str, state: str, at: datetime) -> dict[str, Any]:
        return {
            "version": "0",
            "id": self._id(f"ec2-{state}"),
            "detail-type": "EC2 Instance State-change Notification",
            "source": "aws.ec2",
            "account": ACCOUNT,
            "time": iso_time(at),
            "region": self._region,
            "resources": [f"arn:aws:ec2:{self._region}:{ACCOUNT}:instance/{instance_id}"],
            "detail": {"instance-id": instance_id, "state": state},
        }

    def relay(self, event_type: str, data: dict[str, str], at: datetime) -> dict[str, Any]:
        """A relay CloudEvent as the function's URL receives it (IAM-signed POST)."""
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
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": "/",
            "rawQueryString": "",
            "headers": {
                "content-type": "application/cloudevents+json; charset=utf-8",
                "user-agent": "gpupool-relay/simulated",
            },
            "requestContext": {
                "accountId": ACCOUNT,
                "http": {"method": "POST", "path": "/", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
                "requestId": event_id,
                "routeKey": "$default",
                "stage": "$default",
                "timeEpoch": int(at.timestamp() * 1000),
            },
            "body": json.dumps(cloud_event),
            "isBase64Encoded": False,
        }
