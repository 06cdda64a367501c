"""GitOps releases as deployment units: what a Flux or Argo CD controller would deploy
(:mod:`kaffinity.repo.gitops.releases`), each kind in its package (:mod:`kaffinity.repo.gitops.flux`,
:mod:`kaffinity.repo.gitops.argo`), rendered as its controller renders it.
"""
