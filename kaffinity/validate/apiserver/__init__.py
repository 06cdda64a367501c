"""The API server's own validation of scheduling fields, for one object at one version.

A faithful port of the checks kube-apiserver runs when a Pod or a pod template is created, as
far as they concern scheduling (``pkg/apis/core/validation/validation.go``:
``validateAffinity``, ``validatePodAffinityTerm``, ``validateMatchLabelKeysAndMismatchLabelKeys``,
``validateTopologySpreadConstraints``, ``ValidateTolerations``; the metav1 label selector and
label checks of k8s.io/apimachinery), with the same field paths and the same messages; what
``pkg/api/pod/warnings.go`` answers with a warning; and what ``pkg/api/pod/util.go``
(``dropDisabledFields``) drops silently when a feature gate is off.

What the extended schemas already report (types, unknown fields, values outside an enumeration,
proposal fields) is not reported again here. A value of the wrong type is skipped; a null or
missing value reads as Go's zero value, as the API server decodes it.

For a bare Pod the create-time merge of ``matchLabelKeys`` / ``mismatchLabelKeys`` into the
label selectors (``podStrategy.PrepareForCreate``, :func:`kaffinity.expand.merge.merge_keys`) runs
before validation, as upstream; pod templates, and Pods that exist already, are validated
without it (the ``merged-selector-rejected`` rule validates the pods a template creates).

The package follows kube-apiserver's own split: :mod:`~kaffinity.validate.apiserver.fields`
(the target, the problems in field.Error's words, metav1 labels and selectors),
:mod:`~kaffinity.validate.apiserver.affinity`, :mod:`~kaffinity.validate.apiserver.tolerations`
and :mod:`~kaffinity.validate.apiserver.spread` (pkg/apis/core/validation),
:mod:`~kaffinity.validate.apiserver.policy` (pkg/apis/policy/validation: disruption budgets),
and :mod:`~kaffinity.validate.apiserver.pod` (:func:`validate`: an object's scheduling fields).
"""

from kaffinity.validate.apiserver.fields import (
    API_VALIDATION,
    API_WARNING,
    DEPRECATED_NODE_LABELS,
    GATED_FIELD_DROPPED,
    Problem,
    Target,
)
from kaffinity.validate.apiserver.pod import validate
from kaffinity.validate.apiserver.policy import budget_refused

__all__ = [
    "API_VALIDATION",
    "API_WARNING",
    "DEPRECATED_NODE_LABELS",
    "GATED_FIELD_DROPPED",
    "Problem",
    "Target",
    "budget_refused",
    "validate",
]
