"""Simulations: GPU-sharing traces replayed through the placement modes, and days of demand
through gpupool's real services beside TensorFusion's replayed rules.

Role: `placement` (`gpupool simulate placement`) and `capacity` (`gpupool simulate capacity`).

Must not: be imported by the deployed functions, touch a real cloud or cluster, or print (the
CLI does).
"""
