"""Validation of one object at a time: kaffinity's extended JSON schemas (and their compiled
yes/no check) and the port of kube-apiserver's validation of the scheduling fields.

May import: :mod:`kaffinity.load`, :mod:`kaffinity.k8s`, :mod:`kaffinity.findings`,
:mod:`kaffinity.config`, :mod:`kaffinity.expand`.
"""
