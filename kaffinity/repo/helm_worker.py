"""Render one chart with helm-python-sdk (Helm's Go engine) in a process of its own.

A call into the library cannot be interrupted, and Helm's engine has no memory bound: a template
line such as ``{{ range until 100000000 }}`` grows without end. So kaffinity never renders in its
own process: :func:`kaffinity.repo.helm.chart.render_chart` runs this module as a child
(:func:`kaffinity.repo.sandbox.run_tool`: a cleared environment, no network, memory and CPU limits,
killed whole on timeout). Input: one JSON argument ``{"chart", "values", "release",
"namespace"}``. Output: helm template's stream on stdout (exit 0), or one JSON line
``{"message", "file"}`` on stderr (exit :data:`kaffinity.repo.sandbox.WORKER_FAILED`).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from kaffinity.repo.sandbox import WORKER_FAILED as FAILED


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    try:
        output = render(request)
    except _Failed as failure:
        sys.stderr.write(json.dumps({"message": failure.message, "file": failure.file}) + "\n")
        return FAILED
    sys.stdout.write(output)
    sys.stdout.flush()
    return 0


class _Failed(Exception):
    def __init__(self, message: str, file: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file


def render(request: dict[str, Any]) -> str:
    import helm_python as helm

    values: dict[str, Any] = {}
    for path in request["values"]:
        try:
            with open(path, encoding="utf-8") as handle:
                merge_values(values, helm.values_from_yaml(handle.read()))
        except (OSError, UnicodeDecodeError, helm.HelmError) as error:
            raise _Failed(one_line(str(error)), path) from None
    try:
        with helm.Chart.load(request["chart"]) as chart:
            manifests = chart.render(
                values or None,
                name=request["release"],
                namespace=request["namespace"],
                is_install=True,
            )
    except helm.HelmError as error:
        raise _Failed(one_line(str(error))) from None
    except Exception as error:  # noqa: BLE001 - reported as the chart's problem
        raise _Failed(f"{type(error).__name__}: {one_line(str(error))}") from None
    return as_helm_output(manifests)


#: A document separator line (``---``, maybe followed by a comment).
SEPARATOR = re.compile(r"^---(?:[ \t].*)?$", re.M)


def merge_values(base: dict[str, Any], override: dict[str, Any]) -> None:
    """Later values files win, maps merged key by key (helm's pkg/cli/values ``mergeMaps``)."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge_values(base[key], value)
        else:
            base[key] = value


def as_helm_output(manifests: dict[str, str]) -> str:
    """helm template's stream: each manifest after ``---`` and ``# Source:`` (helm's
    pkg/action ``renderResources``: NOTES.txt and partials are not manifests; a template's
    empty documents are dropped, as releaseutil.SplitManifests does)."""
    out: list[str] = []
    for name in sorted(manifests):
        base = name.rsplit("/", 1)[-1]
        if base.startswith("_") or base == "NOTES.txt" or name.endswith("/NOTES.txt"):
            continue
        for piece in SEPARATOR.split(manifests[name]):
            if piece.strip() and not all(
                not line.strip() or line.lstrip().startswith("#") for line in piece.splitlines()
            ):
                out.append(f"---\n# Source: {name}\n{piece.strip(chr(10))}\n")
    return "".join(out)


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line, cut at ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


if __name__ == "__main__":  # pragma: no cover - run through sandbox.worker_command
    sys.exit(main(sys.argv[1:]))
