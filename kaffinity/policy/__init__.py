"""Policies: an organisation's own scheduling rules, given with ``--policy`` or ``policies:``.

A policy file holds kaffinity's own ``kaffinity.io/v1alpha1`` ``Policy`` objects
(:mod:`kaffinity.policy.load`). Each one becomes a rule of category ``policy``
(:mod:`kaffinity.policy.check`). The rule's name is the policy's name. The engine runs it like
any other rule, so its findings have positions, suppressions, severities and every output
format.

Above the rules (a policy is made into a :class:`kaffinity.rules.base.Rule`), below the engine.
May import every stage below it; never a rule module.
"""
