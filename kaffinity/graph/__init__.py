"""The affinity graph: which workloads each scheduling term and disruption budget reaches, the
analyses rules share over it, and its pictures (``kaffinity graph``).

May import: :mod:`kaffinity.load`, :mod:`kaffinity.k8s`, :mod:`kaffinity.expand`,
:mod:`kaffinity.findings`, :mod:`kaffinity.config`, :mod:`kaffinity.simulate` (the declared
cluster's pods and namespaces).
"""
