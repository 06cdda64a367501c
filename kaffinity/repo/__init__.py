"""Repositories: kustomize overlays and Helm charts rendered, and the deployment units of a tree
(which objects run in one cluster together).

May import: :mod:`kaffinity.load`, :mod:`kaffinity.k8s`.
"""
