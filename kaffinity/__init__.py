"""kaffinity: lint Kubernetes pod scheduling rules before they reach a cluster."""

__version__ = "0.1.0"
