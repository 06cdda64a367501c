"""Start-up stays light: what ``kaffinity --version`` and a one-file lint import.

kaffinity runs on every commit (pre-commit), so a run pays for its imports each time (the goal:
``--version`` under 0.15 s, a one-file lint under 0.4 s). The simulator (``kaffinity.simulate.framework``,
``place``, ``pending``, ``rollout``) is needed only with ``--cluster``; networkx only for graph
algorithms; jsonschema and ruamel only once manifests are read. Each command runs in a fresh
interpreter (``python -c``) that calls the CLI's entry point and then lists ``sys.modules``:
the time itself is measured by the benchmarks, not asserted here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from .kit import EXAMPLES, REPO, no_internal_error

_SIMULATOR = (
    "kaffinity.simulate.framework.schedule_one",
    "kaffinity.simulate.rollout",
    "kaffinity.explain.pending",
    "kaffinity.simulate.place",
)

# Runs the real entry point in-process; whatever it exits with, prints the imported modules on a
# marked last line of stdout.
_PROBE = """
import sys
sys.argv = ["kaffinity", *sys.argv[1:]]
from kaffinity.cli import main
try:
    main()
except SystemExit as exit:
    code = exit.code
else:
    code = 0
print("\\nMODULES " + " ".join(sorted(sys.modules)))
print("EXIT", code)
"""


def _imported(*args: str) -> tuple[set[str], str, str]:
    """The modules imported by ``kaffinity ARGS``, its output (without the probe's) and exit code.

    Each run has a cache folder of its own: a cold run, whatever other tests of the suite's
    shared cache linted before (a warm hit reads no schema, so it would import less)."""
    environment = {key: value for key, value in os.environ.items() if key != "GITHUB_ACTIONS"}
    with tempfile.TemporaryDirectory() as cache:
        completed = subprocess.run(
            [sys.executable, "-c", _PROBE, *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**environment, "NO_COLOR": "1", "KAFFINITY_CACHE_DIR": cache},
            timeout=120,
            check=False,
        )
    no_internal_error(completed.returncode, completed.stderr)
    lines = completed.stdout.splitlines()
    assert lines[-1].startswith("EXIT "), completed.stderr
    assert lines[-2].startswith("MODULES "), completed.stderr
    return set(lines[-2].split()[1:]), "\n".join(lines[:-2]), lines[-1].split()[1]


def _packages(modules: set[str], *names: str) -> set[str]:
    """The ``names`` (packages with their submodules) among ``modules``."""
    return {name for name in names for module in modules if module == name or module.startswith(name + ".")}


def test_version_imports_no_parser_schema_or_graph_library() -> None:
    modules, output, code = _imported("--version")
    assert code == "0"
    assert output.strip().startswith("kaffinity ")
    assert _packages(modules, "jsonschema", "networkx", "ruamel") == set()
    assert _packages(modules, *_SIMULATOR, "kaffinity.explain.why", "kaffinity.run.explain") == set()


def test_explain_help_imports_no_simulator_and_explain_does() -> None:
    """``kaffinity explain --help`` stays light; a real explain imports the simulator and
    explain's own modules (the probe sees them when they are used)."""
    modules, output, code = _imported("explain", "--help")
    assert code == "0"
    assert "CAPTURE" in output
    assert _packages(modules, *_SIMULATOR, "kaffinity.explain.why", "kaffinity.run.explain") == set()
    modules, output, code = _imported("explain", str(EXAMPLES / "captures" / "shop.yaml"), "--format", "json")
    assert code == "1"
    assert {"kaffinity.explain.why", "kaffinity.run.explain", "kaffinity.simulate.place"} <= modules


def test_one_file_lint_without_a_cluster_imports_no_simulator() -> None:
    path = str(EXAMPLES / "revision-unscoped" / "fail.yaml")
    modules, output, code = _imported("lint", path, "--fail-on", "warning")
    # The lint really ran: it read and validated the file and reported its findings.
    assert code == "1"
    assert "[revision-unscoped]" in output
    assert {"kaffinity.load.parse", "kaffinity.engine", "jsonschema"} <= modules
    assert _packages(modules, *_SIMULATOR, "networkx") == set()


def test_a_lint_with_a_cluster_does_import_the_simulator() -> None:
    # The probe's counterpart: the same check sees the simulator when a rule needs it.
    path = str(EXAMPLES / "no-eligible-node" / "fail.yaml")
    cluster = str(EXAMPLES / "clusters" / "no-eligible-node.yaml")
    modules, output, code = _imported("lint", path, "--cluster", cluster)
    assert code == "1"
    assert "[no-eligible-node]" in output
    assert _packages(modules, *_SIMULATOR) == set(_SIMULATOR)


def test_a_lint_imports_the_policy_and_cel_engines_only_with_a_policy() -> None:
    """A lint without policies never loads the policy package or CEL; with a
    ValidatingAdmissionPolicy it does (the probe sees them when they are used)."""
    path = str(EXAMPLES / "revision-unscoped" / "fail.yaml")
    modules, output, _ = _imported("lint", path)
    assert "[revision-unscoped]" in output  # it really linted
    assert _packages(modules, "kaffinity.policy", "cel_expr_python") == set()
    modules, output, code = _imported(
        "lint", path, "--policy", str(EXAMPLES / "policies" / "admission.yaml"), "--select", "policy"
    )
    assert code in ("0", "1"), output
    assert "kaffinity.policy.vap" in modules
    assert _packages(modules, "kaffinity.policy", "cel_expr_python") == {
        "kaffinity.policy",
        "cel_expr_python",
    }
