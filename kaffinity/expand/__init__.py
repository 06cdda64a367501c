"""The matchLabelKeys / mismatchLabelKeys merge: the label selectors kube-apiserver stores in
the pods a workload creates (KEP-3243, KEP-3633), the ``kaffinity expand`` preview, and the
safe text fixes of ``kaffinity fix``.

May import: :mod:`kaffinity.load`, :mod:`kaffinity.k8s`, :mod:`kaffinity.findings`.
"""
