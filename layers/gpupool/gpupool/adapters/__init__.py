"""Adapters: the ports implemented with real clients (boto3 EC2, the Kubernetes client, EKS
tokens), each translating its SDK's errors into the service's domain errors at the boundary.
"""
