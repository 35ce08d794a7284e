"""The sandbox's moto EC2 endpoint empties its account on `reset()` (moto's backends are
process-wide, so a fixture that needs an empty account asks for it)."""

from __future__ import annotations

import boto3

from gpupool.sandbox.moto_ec2 import MotoEC2


def test_reset_empties_the_account() -> None:
    with MotoEC2() as moto:
        ec2 = boto3.client(
            "ec2",
            region_name="us-east-1",
            endpoint_url=moto.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        ec2.run_instances(ImageId=image, InstanceType="t3.micro", MinCount=1, MaxCount=1)
        assert ec2.describe_instances()["Reservations"]
        assert moto.reset() is moto
        assert ec2.describe_instances()["Reservations"] == []
