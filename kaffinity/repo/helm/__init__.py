"""Helm: a chart rendered as ``helm template`` renders it (the ``helm`` binary, else the
``helm-python-sdk`` package, ``kaffinity[helm]``), and rendered manifests mapped back to their
templates by the ``# Source:`` comments.
"""
