"""Alibaba Cloud, behind the one `CloudProvider` interface: ECS launch / describe / delete /
list-managed (`compute`, over the `api` seam; its request in `request`, selector terms in
`selector_terms`, its error table in `errors`), credentials (`credentials`), KMS secrets (`kms`)
and the Function Compute functions' wiring (`wiring`).

Must not: import another cloud's package, or be imported by the service or the core.
"""
