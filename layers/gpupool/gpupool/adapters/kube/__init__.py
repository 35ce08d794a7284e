"""Kubernetes, for every cloud: the `Cluster` port (`cluster`, with `reader`, `listing`,
`reading`, `tables`, `coordination`), Karpenter's API (`karpenter`), the delivery ledger
(`deliveries`), access (`auth`), the transport and its error table (`transport`, `errors`),
TokenReview access checks (`token_access`), the RBAC list (`calls`) and the ports' wiring
(`wiring`).

Must not: import a cloud's package (a cloud's access mode, as EKS's, is passed in) or a cloud SDK.
"""
