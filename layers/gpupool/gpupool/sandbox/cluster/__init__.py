"""The real control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
KWOK and Karpenter's own controller, built from their Go modules (`build`) and run as processes.

Must not: be imported by anything the layer or the image ships; it runs only beside a checkout.
"""
