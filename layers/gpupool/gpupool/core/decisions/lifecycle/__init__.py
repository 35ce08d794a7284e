"""A GPUNodeClaim's lifecycle, one module per stage (after Karpenter's NodeClaim controllers).

Role: `facts` (the policy, one invocation's indexes, shared helpers), `adoption` (adopt an
instance found by tag), `registration` (which node joined for a claim), `initialization` (its
node is Ready: Bound), `liveness` (launch and registration timeouts, an instance gone: Failed),
`termination` (a deleting claim: drain, terminate, release; a Failed one: terminate, expire).
`decisions.claim_lifecycle.plan_claim_lifecycle` runs them per claim, in that order of precedence.

Must not: perform I/O or read the clock (`now` is passed in).
"""
