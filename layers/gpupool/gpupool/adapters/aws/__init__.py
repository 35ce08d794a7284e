"""AWS, behind the one `CloudProvider` interface: EC2 launch / describe / terminate / list-managed
(`compute`, its request in `request`, its error table in `errors`), botocore sessions and their
cut data (`session`, `botocore_data`), Secrets Manager (`secrets_manager`), EKS access (`eks`) and
the Lambda functions' wiring (`wiring`).

Must not: import another cloud's package, or be imported by the service or the core.
"""
