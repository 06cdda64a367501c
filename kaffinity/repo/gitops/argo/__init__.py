"""Argo CD releases: ``Application`` and ``ApplicationSet`` (argoproj.io) as units.

Each Application is rendered as Argo CD's repo-server renders it (argo-cd
reposerver/repository/repository.go, ``GenerateManifests``), one release named
``Application <namespace>/<name>`` (the Application's own namespace, ``argocd`` when unset):

- its sources: ``spec.source``, or every entry of ``spec.sources`` (multi-source); a source with
  ``ref`` and neither ``path`` nor ``chart`` only lends its files to ``$<ref>/...`` value files;
- where a source's files are: ``repoURL`` naming *this* repository (a remote of the checkout, or
  -- a guess the run's notes state -- the checkout folder's name,
  :func:`kaffinity.repo.gitops.releases.this_repository`) is read from the checkout at ``path``;
  a Helm repository with ``chart:`` (HTTP, ``oci://`` or a bare registry host, as Argo's
  ``IsHelmOci`` allows) is fetched with :func:`kaffinity.repo.fetch.charts.fetch_chart`, another git
  repository with :func:`kaffinity.repo.fetch.git.fetch_git` --
  only when the network is allowed, otherwise the release is read as written and the run's note
  lists it;
- its type as util/app/discovery ``AppType`` finds it: an explicit ``helm:``/``kustomize:``/
  ``directory:``/``plugin:`` block, else ``kustomization.yaml`` (it wins, being walked after
  ``Chart.yaml``), else ``Chart.yaml``, else a directory of manifests;
- **helm** (``helmTemplate`` and util/helm ``template``): ``helm template <releaseName>`` in the
  namespace ``spec.destination.namespace``; ``valueFiles`` in order (relative to the source path,
  ``/``-rooted ones to the repository's top, ``$ref/...`` to a ``ref`` source's top; missing ones
  skipped under ``ignoreMissingValueFiles``), then ``valuesObject`` (or ``values``, a YAML
  string), then ``parameters`` and ``fileParameters`` as ``--set``/``--set-string``/``--set-file``
  (Helm's strvals: dotted paths, ``[i]`` list indexes, ``\\.`` escapes, typed scalars);
- **kustomize** (util/kustomize ``Build``): ``namePrefix``, ``nameSuffix``, ``images``,
  ``commonLabels``, ``commonAnnotations``, ``namespace``, ``patches``, ``components`` and
  ``replicas`` as fields of a kustomization around the source
  (:func:`kaffinity.repo.kustomize.build.render_kustomization`'s ``wrapper_fields``), as ``kustomize edit``
  adds them to the source's own;
- **directory** (``findManifests``): the ``*.yaml``/``*.yml``/``*.json`` files of the path,
  below it with ``recurse``, kept by ``include`` and dropped by ``exclude`` (Argo's glob, ``*``
  crossing ``/``, ``{a,b}`` alternatives); jsonnet is not evaluated (the release says so).

An Application another one renders (app of apps) is a release too: those in the repository's
files, and those only a parent's render produces (found by rendering the parent, at most
:data:`MAX_DEPTH` levels down); each Application once, by namespace and name.

ApplicationSets (argo-cd applicationset/generators): the ``list``, ``git`` (``directories`` and
``files``, when its ``repoURL`` is this repository), ``matrix`` and ``merge`` generators are
evaluated and the template rendered with each parameter set (fasttemplate, or Go templates under
``goTemplate: true``: :mod:`kaffinity.repo.gitops.argo.template`); each Application generated is a
release as above. Other generators (clusters, scmProvider, pullRequest, clusterDecisionResource,
plugin) need a cluster or an API: the ApplicationSet is one release read as written, and says why.
"""

from kaffinity.repo.gitops.argo.discovery import releases

__all__ = ["releases"]
