"""What a repository names remotely -- Helm charts and git sources -- fetched into the user's cache.

Chart dependencies (``Chart.yaml``/``Chart.lock``), Flux sources (``HelmRepository``,
``OCIRepository``, ``GitRepository``) and Argo CD sources name charts and trees that are not in the
checkout. They are fetched only when the person running kaffinity allows the network
(``Sandbox.network``: ``--allow-network``, ``KAFFINITY_ALLOW_NETWORK``, the Action's input; never
the repository's config), into a cache in the user's cache folder, never inside the repository.

- :func:`~kaffinity.repo.fetch.charts.fetch_chart` -- a chart from an HTTP(S) Helm repository (its
  ``index.yaml``) or an OCI registry (``oci://host/path``, the chart at
  ``oci://host/path/name:version``).
- :func:`~kaffinity.repo.fetch.git.fetch_git` -- a tree of a git repository at a branch, tag, semver
  range or commit.

Both return :class:`~kaffinity.repo.fetch.cache.Fetched` (a folder in the cache the caller reads and
never writes) or :class:`~kaffinity.repo.fetch.cache.NotFetched` (one line why; ``offline`` when
only the network being off stopped it).

**Offline** (the network not allowed): what is exact and immutable and already in the cache is used
-- a chart at an exact version (``1.2.3``, fetched before from the same repository URL; its archive
was checked against the index's digest or the registry's content digest then), a git tree at a full
commit -- and nothing else: a range, a branch or a tag needs a lookup, so it is
``NotFetched(offline=True)``. With the network, an exact chart version or a commit in the cache is
used without a request too (Helm's own repository cache keeps ``name-version.tgz`` the same way); a
range asks the index (or the registry's tag list) each time.

**Cache**: ``$KAFFINITY_REMOTE_CACHE`` (tests), else ``remote/`` in the user's cache folder
(``$XDG_CACHE_HOME/kaffinity``, ``~/.cache/kaffinity``: where kaffinity.cache keeps its key, held to
the same rule: not a symlink, the user's own, not writable by others). It is never inside a
repository being linted (``sandbox.roots``). An entry is a folder named by a digest of what it holds
(kind, URL, name, version or commit), made under a temporary name and renamed into place (a
concurrent run sees it whole or not at all), with ``entry.json`` saying what it is. Archives are
extracted as Helm's loader reads them (pkg/chart/loader/archive.go ``LoadArchiveFiles``: the first
path component dropped; absolute paths, ``..`` refused; at most
:data:`~kaffinity.repo.fetch.cache.MAX_CHART_SIZE` bytes in all, a file at most
``limits.file_size``) and further: links, devices and more than
:data:`~kaffinity.repo.sandbox.WALK_ENTRIES` entries refuse the archive.

**Bounded**: only ``http``/``https``/``oci`` for charts (``file://`` never: a checkout's URL must
not read the disk), at most :data:`~kaffinity.repo.fetch.http.MAX_REDIRECTS` redirects (to
http/https only), a timeout per request (``sandbox.timeout``), at most ``limits.file_size`` bytes
per download (an index: :data:`~kaffinity.repo.fetch.charts.MAX_INDEX_SIZE`). OCI over plain HTTP
only for ``localhost``/``127.0.0.1``/``::1`` (or ``plain_http=True``, as ``helm --plain-http``); an
anonymous Bearer token is asked for when the registry challenges (the distribution token flow helm's
pkg/registry and oras-go follow), and the ``Authorization`` header never follows a redirect. No
credentials of the user's are read (no ``~/.config/helm``, no docker config): a private repository
is not fetched.

**git** runs as a subprocess through :func:`kaffinity.repo.sandbox.run_tool` (cleared environment,
limits, timeout, ``GIT_ALLOW_PROTOCOL=https:http:ssh:git`` -- ``file`` only when the caller says the
URL is the runner's own, ``local=True``), in a repository kaffinity made with no template (so no
hooks), ``core.hooksPath=/dev/null``, no submodules, symlinks checked out as plain files
(``core.symlinks=false``): nothing from the fetched repository runs.
"""
