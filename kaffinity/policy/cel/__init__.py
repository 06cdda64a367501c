"""CEL as Kubernetes has it, per Kubernetes version, for ValidatingAdmissionPolicies run offline.

Owns the CEL environment: cel-expr-python (Google's cel-cpp) with, for each Kubernetes minor
kaffinity knows, exactly the libraries and options that kube-apiserver offers at that version
(:mod:`~kaffinity.policy.cel.environment` lists them), Kubernetes' own libraries restated in
Python (one module each: ``lists``, ``regex``, ``urls``, ``quantity``, ``ip``, ``format``,
``semver``), cel-go's strings extension (``strings``, ``formatting``: ``string.format`` as
kube-apiserver prints), and how YAML values become CEL data (:mod:`~kaffinity.policy.cel.convert`).
Imports ``cel_expr_python``; nothing outside this package may import it at module import time.

API (``from kaffinity.policy.cel.environment import ...``):

* ``compile_expression(text, kube_version, variables) -> Compiled`` (``variables``: name to
  ``cel.Type``, e.g. ``{"object": cel.Type.DYN}``); raises ``CelCompileError`` with
  ``.message`` (one line), ``.line`` and ``.column`` (1-based, in ``text``). When a newer
  Kubernetes has what the expression uses, the message says so: "`quantity` needs Kubernetes
  1.28 or later (kube-version is 1.27)".
* ``activation(kube_version, variables, data) -> cel.Activation``: one object's data (variable
  name to YAML value: loader ``PosDict``s are copied into plain dicts, which cel-expr-python
  requires); build it once per object and evaluate every expression with it (cel-expr-python
  converts it on first use, then reuses it: ~5 us an evaluation instead of a full conversion).
* ``Compiled.evaluate(activation_or_plain_data) -> object``: a plain Python value, or
  ``CelEvaluationError`` (``.message``) for a CEL error (``quantity('bad')``, ``1/0``, a missing
  field).
  ``Compiled.return_type()`` is the checked type (``dyn`` when ``Compiled.checked`` is False).
  A value returned (a VAP ``variables`` entry, an opaque quantity included) can be passed back
  as data for the next expression.
* ``environment(kube_version, variables) -> cel.Env``: cached per version and variables.
* ``KUBE_MINORS``: the minors (27 ... 37).

Not supported, and why: the ``authorizer`` library (needs a cluster); CEL optionals as an
expression's *result* (cel-expr-python cannot return them; inside an expression they work);
``optional.unwrap``/``unwrapOpt`` (not in cel-cpp); opaque types are
maps (``type(quantity('1'))`` is ``map``; see :mod:`~kaffinity.policy.cel.values`); the
cost of cel-cpp's own functions (:mod:`~kaffinity.policy.cel.limits` counts what it can);
refusing mixed-type list and map literals (``[1, 'a']``); ``sum``/``min``/``max`` of durations
and timestamps. :mod:`~kaffinity.policy.cel.environment` lists every difference from cel-go;
tests/differential/differences.yaml (``cel``) lists each one the differential test against
kube-apiserver's own environment finds, with its reason.
"""
