"""Capacity planning: the pool snapshot, the gap, the offerings allowed, the exact cheapest mix.

Role: the pure pieces every decision and the `plan` command share — `snapshot` (what a pool has),
`gap` (what it needs), `requirements` and `offerings` (what it may launch), `unavailable` (the
offerings it remembers as out of capacity), `cheapest` with its
search / bound / fill / milp helpers (the exact choice), `capacity_plan` (the one pipeline the
launch decision, the CLI and the benchmark call) and `plan` (actions as data).

Must not: perform I/O, read the clock or log; import-linter keeps it below `decisions`.
"""
