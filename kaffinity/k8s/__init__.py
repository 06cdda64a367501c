"""The Kubernetes model: typed, immutable views of the objects kaffinity reasons about.

Owns the objects (workloads, pod templates, terms, budgets, nodes), label and name syntax, label
selectors as apimachinery matches them, resource quantities, feature gates per version, and the
controllers' rolling-update arithmetic.

May import: :mod:`kaffinity.load`.
"""
