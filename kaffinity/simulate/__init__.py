"""The offline scheduler: the declared cluster (``--cluster``), the default profile's filters,
PostFilter (preemption, then the autoscaler), placing every pod, and rolling updates on the
placed state.

May import: :mod:`kaffinity.load`, :mod:`kaffinity.k8s`, :mod:`kaffinity.expand`,
:mod:`kaffinity.findings`, :mod:`kaffinity.config`.
"""
