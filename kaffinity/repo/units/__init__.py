"""Deployment units: which objects of a repository run in a cluster together.

A repository holds more than one deployment: kustomize overlays over a shared base, a folder per
environment, install variants (argo-cd's ``install.yaml`` and ``namespace-install.yaml``), a Helm
chart. Only one copy of an object -- one ``kind/namespace/name`` -- ever exists in a cluster
(kube-apiserver stores one object per name: a second ``kubectl apply`` replaces the first), so
the rules that read several objects together (categories ``graph``, ``topology``, ``rollout``)
and the offline scheduler must never see two copies at once. Each is run per *unit*: the objects
that are deployed together. The rules that read one object at a time read every object once.

How units are found (docs/repositories.md):

1. A folder with a ``kustomization.yaml`` that no other kustomization uses is a unit: its
   ``resources`` (and those of the bases and components it uses, recursively) are its objects.
   The files a kustomization names as patches, replacements, generators or transformers are
   *fragments*: parts of objects, never objects of their own, so they are not linted.
2. A Helm chart folder (``Chart.yaml``) is a unit of its own; an in-tree subchart (a chart in
   another chart's ``charts/``) belongs to its parent (:func:`chart_of`). Rendered, a chart is
   one unit per variant (:func:`chart_variants`: each ``ci/*-values.yaml``, or each
   ``helm-values:`` file).
3. The remaining files: where two files define the same object with different content, they
   are variants of each other. The folder that tells them apart (the first path component below
   their common folder: ``envs/prod`` and ``envs/staging``; or the file itself when they sit side
   by side) is a variant; every variant is a unit, with the files of the variant's folder and the
   shared files around it (those in the same folder tree that belong to no variant, and those in
   the folders above it). Files that take part in no variant form one more unit.
4. ``units:`` in ``.kaffinity.yaml`` names the units instead (``one``: the whole input is one).

Within a unit, an object defined twice with the same content is read once; defined twice with
different content (a layout the inference could not tell apart), the first in canonical order
is read and a note says so.
"""

from kaffinity.repo.units.layout import read_layout
from kaffinity.repo.units.render import render_units
from kaffinity.repo.units.unit import Layout, Unit, UnitCache

__all__ = ["Layout", "Unit", "UnitCache", "read_layout", "render_units"]
