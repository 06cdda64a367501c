"""Policies: an organisation's own scheduling rules, given with ``--policy`` or ``policies:``.

A policy file holds (:mod:`kaffinity.policy.load`):

- kaffinity's own ``kaffinity.io/v1alpha1`` ``Policy`` objects: a JSON Schema and/or a CEL
  expression on a workload's object, pod template or pod spec (:mod:`~kaffinity.policy.check`),
  which may read what kaffinity knows of it (:mod:`~kaffinity.policy.facts`);
- ValidatingAdmissionPolicies with their bindings and params (:mod:`~kaffinity.policy.admission`),
  matched (:mod:`~kaffinity.policy.matching`) and evaluated (:mod:`~kaffinity.policy.vap`) as
  kube-apiserver would on a CREATE of each manifest.

Each policy becomes a rule of category ``policy`` named after it; the engine runs it like any
other rule, so its findings have positions, suppressions, severities and every output format.
Expressions are compiled once per run (:mod:`~kaffinity.policy.expressions`) in Kubernetes' CEL
environment of ``--kube-version`` (:mod:`kaffinity.policy.cel`). ``kaffinity policy test`` runs
policies against fixtures (:mod:`~kaffinity.policy.testing`), ``kaffinity policy check`` lints
them (:mod:`~kaffinity.policy.review`).

Above the rules (a policy is made into a :class:`kaffinity.rules.base.Rule`), below the engine.
May import every stage below it; never a rule module.
"""
