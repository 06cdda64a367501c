"""A chart rendered as ``helm template`` renders it: the ``helm`` binary, else helm-python-sdk in a
confined process of its own (:mod:`kaffinity.repo.helm_worker`); the dependencies a chart lacks
vendored or reported (:mod:`kaffinity.repo.dependencies`), and a failure read at the template and
line the tool names."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kaffinity.load.parse import DEFAULT_LIMITS, Limits, LoadProblem, SourceFile, parse
from kaffinity.load.source import (
    Span,
)
from kaffinity.repo import engines
from kaffinity.repo.engines import counted, first_error, run_render_tool, text_of
from kaffinity.repo.helm.sources import map_helm_sources, template_path
from kaffinity.repo.rendered import RENDER_PROBLEM, Rendered
from kaffinity.repo.sandbox import (
    DEFAULT_SANDBOX,
    Outcome,
    Sandbox,
    confined_file,
    repository_root,
    run_tool,
)

if TYPE_CHECKING:
    from kaffinity.repo.dependencies import Plan


# --- Helm ----------------------------------------------------------------------------------


def render_chart(
    chart_dir: str,
    values_files: Sequence[str] = (),
    release: str = "release-name",
    namespace: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    *,
    timeout: float | None = None,
    sandbox: Sandbox = DEFAULT_SANDBOX,
    values_objects: Sequence[Any] = (),
    kube_version: str | None = None,
) -> Rendered:
    """Render a chart as ``helm template RELEASE CHART [--namespace NS] [-f VALUES]...`` would,
    and point each object at its template (see :func:`map_helm_sources`).

    ``release`` defaults to helm template's own default name. The ``helm`` binary wins when it
    is on the PATH; else helm-python-sdk renders, in a child process
    (:mod:`kaffinity.repo.helm_worker`). Confined (kaffinity.repo.sandbox): the chart is walked
    first (:func:`kaffinity.repo.preflight.check_chart`: a symlink leading outside the
    repository, a values file outside it or past kaffinity's limits refuse it), and either
    engine runs with no network, a cleared environment, memory and time limits.

    ``kube_version``: the Kubernetes version the chart is rendered for (``Capabilities.KubeVersion``,
    a chart's ``kubeVersion`` constraint): kaffinity's ``--kube-version``. A helm built without
    Helm's release ldflags (``go install``) says v1.20.0 otherwise, and refuses charts that
    require newer (helm.sh/helm/v3 pkg/chartutil/capabilities.go); helm-python-sdk renders for
    the version it was built with.

    ``values_objects``: values given inline (a HelmRelease's ``spec.values``, an Application's
    ``valuesObject``), applied after the files in order, as further ``--values`` files are.
    """
    from kaffinity.repo.preflight import check_chart

    started = time.perf_counter()
    engine = engines.helm_engine()  # looked up when called: a test may stand in for it
    chart_file = os.path.join(chart_dir, "Chart.yaml")
    roots = sandbox.roots or (repository_root(chart_dir),)
    seconds = sandbox.timeout if timeout is None else timeout

    def failed(message: str, where: str = chart_file, span: Span | None = None) -> Rendered:
        problem = SourceFile(
            where, text_of(where, limits, roots), (), (LoadProblem(RENDER_PROBLEM, message, span),)
        )
        return Rendered(chart_dir, engine, (problem,), time.perf_counter() - started)

    if not os.path.isfile(chart_file):
        return failed(f"cannot render: no Chart.yaml in {chart_dir}", chart_dir)
    if engine is None:
        return failed(
            "cannot render: no helm on the PATH and helm-python-sdk is not installed (kaffinity[helm])"
        )
    for values in values_files:
        if not os.path.isfile(values):
            return failed(f"cannot render: values file {values} not found")
    refusal = check_chart(chart_dir, values_files, roots, limits, network=sandbox.network)
    if refusal is not None:
        return failed(refusal.message, refusal.file, refusal.span)
    from kaffinity.repo.dependencies import plan, scratch_chart

    # Chart.yaml's dependencies (kaffinity.repo.dependencies): those missing from charts/ are
    # taken from the repository (file://) or the remote cache into a scratch copy of the chart;
    # those that cannot be are findings at their Chart.yaml item, and the rest still renders.
    needs = plan(chart_dir, roots, limits, sandbox)
    with tempfile.TemporaryDirectory(prefix="kaffinity-values-") as scratch:
        # Inline values as files of their own (JSON is YAML), after the user's files.
        inline = []
        for index, values in enumerate(values_objects):
            path = os.path.join(scratch, f"values-{index}.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(values, handle)
            inline.append(path)
        render_dir = chart_dir
        if needs is not None and not needs.complete:
            copy = os.path.join(scratch, "chart")
            os.mkdir(copy)
            render_dir = scratch_chart(needs, copy)
            # What was fetched is held to the rules the checkout is (a schema's $ref, links).
            refusal = check_chart(render_dir, (), (copy,), limits, network=sandbox.network)
            if refusal is not None:
                return failed(refusal.message.replace(copy, "<dependencies>"))
        rendered = _render_chart(
            chart_dir,
            [*values_files, *inline],
            release,
            namespace,
            kube_version,
            limits,
            seconds,
            sandbox,
            roots,
            engine,
            started,
            failed,
            render_dir=render_dir,
        )
    if needs is not None and needs.missing:
        return _missing_dependencies(rendered, needs, limits, roots)
    return rendered


def _missing_dependencies(rendered: Rendered, needs: Plan, limits: Limits, roots: Sequence[str]) -> Rendered:
    """``rendered`` (the chart without the dependencies it lacks) with one ``chart-dependency``
    problem per missing dependency, at its item of Chart.yaml. When the chart did not render,
    the missing dependencies are the cause as far as anyone can tell: ``helm template`` refuses
    such a chart outright (pkg/action/dependency.go CheckDependencies), and the parent's
    templates often read the dependency's values or helpers (argo-cd's HA values enable
    redis-ha; the error then names a template of the parent, not the dependency). So: the
    dependency problems alone, the first carrying Helm's error, the chart not rendered."""
    from kaffinity.repo.dependencies import DEPENDENCY_RULE, vendor_command

    failure = next((problem for _, problem in rendered.problems if problem.rule == RENDER_PROBLEM), None)
    problems = []
    for number, (dependency, why) in enumerate(needs.missing):
        message = (
            f"dependency {dependency.name} {dependency.version or '*'} "
            f"({dependency.repository or 'no repository'}) is not in charts/: {why}; "
            f"the chart is rendered without it (`{vendor_command(needs.chart_dir)}` vendors it)"
        )
        if failure is not None and number == 0:
            message = message.replace(
                "the chart is rendered without it",
                f"the chart does not render without it ({failure.message})",
            )
        problems.append(LoadProblem(DEPENDENCY_RULE, message, dependency.span))
    listing = SourceFile(needs.file, text_of(needs.file, limits, roots), (), tuple(problems))
    if failure is not None:
        return Rendered(rendered.unit, rendered.engine, (listing,), rendered.seconds, built=False)
    return replace(rendered, files=(*rendered.files, listing))


def _render_chart(
    chart_dir: str,
    values_files: Sequence[str],
    release: str,
    namespace: str | None,
    kube_version: str | None,
    limits: Limits,
    seconds: float,
    sandbox: Sandbox,
    roots: Sequence[str],
    engine: str,
    started: float,
    failed: Callable[..., Rendered],
    *,
    render_dir: str | None = None,
) -> Rendered:
    """Render ``render_dir`` (a scratch copy of ``chart_dir`` with its dependencies, or the chart
    itself), mapped back to ``chart_dir``'s templates."""
    chart_file = os.path.join(chart_dir, "Chart.yaml")
    source = render_dir or chart_dir
    if engine == "helm binary":
        command = ["helm", "template", release, source]
        if namespace:
            command += ["--namespace", namespace]
        if kube_version:
            command += ["--kube-version", kube_version]
        for values in values_files:
            command += ["--values", values]
        outcome = run_render_tool(command, seconds, limits, sandbox)
        if isinstance(outcome, str):
            return failed(f"helm template: {outcome}")
        if outcome.stopped is not None:
            return failed(f"helm template: stopped: it {outcome.stopped}")
        if outcome.code != 0:
            return failed(
                f"helm template failed: {first_error(outcome.errors)}",
                *_template_location(outcome.errors, chart_dir, chart_file, roots),
            )
        output = outcome.output
    else:
        rendered = _sdk_render(source, values_files, release, namespace, seconds, limits, sandbox)
        if isinstance(rendered, _Failure):
            where = (
                (rendered.file, rendered.span)
                if rendered.file and confined_file(rendered.file, roots)
                else _template_location(rendered.message, chart_dir, chart_file, roots)
            )
            return failed(f"helm-python-sdk: {rendered.message}", *where)
        output = rendered
    stream = parse(f"helm template {chart_dir}", output, limits)
    mapped = map_helm_sources(stream, chart_dir, limits, roots)
    return Rendered(chart_dir, engine, mapped.files, time.perf_counter() - started, mapped.sections)


@dataclass(frozen=True, slots=True)
class _Failure:
    message: str
    file: str | None = None
    span: Span | None = None


def _sdk_render(
    chart_dir: str,
    values_files: Sequence[str],
    release: str,
    namespace: str | None,
    timeout: float,
    limits: Limits,
    sandbox: Sandbox,
) -> str | _Failure:
    """Render with helm-python-sdk (Helm's Go engine) into ``helm template``'s output shape:
    ``---``, ``# Source: <template>``, one manifest each; partials and NOTES.txt left out as
    helm template does. In a child process (:mod:`kaffinity.repo.helm_worker`) under the
    sandbox's limits: a call into the library cannot be interrupted, and a template can ask
    for any amount of memory; the child is killed on timeout, never left running."""
    from kaffinity.repo.sandbox import WORKER_FAILED, worker_command

    request = {
        "chart": os.path.abspath(chart_dir),
        "values": [os.path.abspath(path) for path in values_files],
        "release": release,
        "namespace": namespace,
    }
    outcome = counted(
        run_tool(
            [*worker_command(), json.dumps(request)],
            sandbox,
            timeout=timeout,
            output_limit=limits.file_size,
        )
    )
    if isinstance(outcome, str):
        return _Failure(outcome)
    if outcome.stopped is not None:
        return _Failure(f"stopped: rendering {outcome.stopped}")
    if outcome.code == WORKER_FAILED:
        try:
            failure = json.loads(outcome.errors.strip().splitlines()[-1])
            file = failure.get("file")
            return _Failure(str(failure["message"]), file if isinstance(file, str) else None)
        except (ValueError, IndexError, KeyError, AttributeError):
            pass
    if outcome.code != 0:
        return _Failure(_crash(outcome, sandbox))
    return outcome.output


def _crash(outcome: Outcome, sandbox: Sandbox) -> str:
    """Why a tool ended without its own error report: its memory limit, a signal, else its
    first error line."""
    errors = outcome.errors
    if (
        any(text in errors for text in ("out of memory", "cannot allocate memory", "MemoryError"))
        or outcome.code == -9
    ):
        return (
            f"stopped: rendering needed more than the memory limit of {sandbox.memory // 1024**2} MiB "
            "(--render-memory)"
        )
    if outcome.code < 0:
        return f"stopped by signal {-outcome.code}"
    return first_error(errors)


_TEMPLATE_ERROR = re.compile(
    r"(?P<path>[^\s():\"]+\.(?:yaml|yml|tpl|json|txt)):(?P<line>\d+)(?::(?P<column>\d+))?"
)


def _template_location(
    errors: str, chart_dir: str, chart_file: str, roots: Sequence[str]
) -> tuple[str, Span | None]:
    """Where a template error points (``template: web/templates/x.yaml:12:3: ...``, ``parse
    error at (web/templates/x.yaml:12)``): lines of the template source, as Go's text/template
    counts them. "YAML parse error on x.yaml: ... line N" counts lines of the *rendered*
    output, so only the template is named then."""
    match = _TEMPLATE_ERROR.search(errors)
    if match is not None:
        path = template_path(match.group("path"), chart_dir, roots)
        if path is not None:
            return path, Span(int(match.group("line")), int(match.group("column") or 1))
    match = re.search(r"YAML parse error on (\S+?):", errors)
    if match is not None:
        path = template_path(match.group(1), chart_dir, roots)
        if path is not None:
            return path, None
    return chart_file, None
