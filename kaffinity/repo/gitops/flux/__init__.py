"""Flux releases: ``Kustomization`` and ``HelmRelease`` (toolkit.fluxcd.io) as units.

A Flux repository holds what the controllers build, not the pods themselves:

- a ``Kustomization`` (kustomize.toolkit.fluxcd.io) names a folder of a source (``spec.sourceRef``:
  a ``GitRepository``, ``OCIRepository``, ``Bucket`` or ``ExternalArtifact``; ``spec.path``)
  that kustomize-controller builds: a ``kustomization.yaml`` is generated when the folder has
  none (fluxcd/pkg kustomize/kustomize_generator.go, ``generateKustomization``: every ``.yaml``/
  ``.yml`` file below it, a sub-folder with a kustomization of its own as one resource), the
  Kustomization's ``targetNamespace``, ``patches``, ``images``, ``components``,
  ``namePrefix``/``nameSuffix`` and ``commonMetadata`` are added (``Generator.WriteFile``), and
  ``postBuild`` substitutes variables in each object built (kustomize_varsub.go,
  ``SubstituteVariables``);
- a ``HelmRelease`` (helm.toolkit.fluxcd.io) names a chart (``spec.chart.spec`` with a
  ``HelmRepository``, ``GitRepository`` or ``Bucket`` source, or ``spec.chartRef`` to an
  ``OCIRepository`` or ``HelmChart``) that helm-controller renders with ``valuesFrom`` then
  ``values`` (helm-controller internal/chartutil/values.go, ``ChartValuesFromReferences``), and
  post-renders with kustomize (``postRenderers[].kustomize``: patches, images).

Each is rendered here as its controller would, with kaffinity's own confined renderers
(:func:`kaffinity.repo.kustomize.build.render_kustomization`,
:func:`kaffinity.repo.helm.chart.render_chart`).
A source is *this repository* when it is a ``GitRepository`` whose URL is a remote of the
checkout (``.git/config``, read as a file), or the ``flux-system`` GitRepository that ``flux
bootstrap`` writes (fluxcd/flux2 pkg/manifestgen/sync: ``flux-system/flux-system`` syncs the
repository it is committed to); anything else is remote and fetched only when the network is
allowed (:mod:`kaffinity.repo.fetch`). docs/repositories.md ("Flux") says what is and is not done.
"""

from kaffinity.repo.gitops.flux.discovery import releases

__all__ = ["releases"]
