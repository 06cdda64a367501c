"""``kaffinity policy test`` and ``policy check``: the policies' own commands (docs/policies.md),
their runs in kaffinity.run.policy, the results worded and printed here."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Optional

import typer

from kaffinity.cli.options import Config, KubeVersion, NoConfig
from kaffinity.cli.output import notes_said, say
from kaffinity.load.display import escape, quote_name
from kaffinity.run.inputs import SettingsOptions, settings_from
from kaffinity.run.notes import Notes

policy_app = typer.Typer(
    help="Work with policies (docs/policies.md).", no_args_is_help=True, add_completion=False
)


@policy_app.command("test")
def policy_test(
    paths: Annotated[
        list[str],
        typer.Argument(help="Folders or files of policies and fixtures (# expect: POLICY markers)."),
    ],
    policy: Annotated[
        Optional[list[str]],
        typer.Option("--policy", help="More policy files or folders (repeatable)."),
    ] = None,
    kube_version: KubeVersion = None,
    config: Config = None,
    no_config: NoConfig = False,
) -> None:
    """Check policies against fixtures: each fixture's policy findings must fall exactly on its
    '# expect: POLICY' lines. Exit code 0: every fixture passes; 1: one fails; 2: bad input."""
    from kaffinity.run.policy import check_paths, policy_test_run

    notes = Notes()
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        check_paths(paths)
        settings = settings_from(SettingsOptions(config, no_config, kube_version), notes)
        settings = replace(settings, select=("policy",), ignore=())
        run = policy_test_run(paths, settings, policy or ())
    failed = 0
    for fixture in run.fixtures:
        if fixture.passed:
            typer.echo(f"ok    {escape(fixture.file)} ({len(fixture.reported)} finding(s))")
            continue
        failed += 1
        typer.echo(f"FAIL  {escape(fixture.file)}")
        for rule, line in fixture.missing:
            typer.echo(f"      {escape(fixture.file)}:{line}: expected [{escape(rule)}], not reported")
        for rule, line, column, message in fixture.unexpected:
            said = f"unexpected [{escape(rule)}] {escape(message)}"
            typer.echo(f"      {escape(fixture.file)}:{line}:{column}: {said}")
        for problem in fixture.load_errors:
            typer.echo(f"      {escape(problem)}")
    for message in run.policy_errors:
        say(message)
    typer.echo(f"{len(run.fixtures)} fixture(s), {run.policies} policy(ies): {failed} failed.")
    if not run.policies:
        say("kaffinity: error: no policy found")
    if run.policy_errors or not run.policies or any(fixture.load_errors for fixture in run.fixtures):
        raise typer.Exit(2)  # bad input: a policy, or a fixture that cannot be read
    raise typer.Exit(1 if failed else 0)


@policy_app.command("check")
def policy_check(
    paths: Annotated[
        list[str],
        typer.Argument(help="Policy files or folders: kaffinity Policies and ValidatingAdmissionPolicies."),
    ],
    kube_version: KubeVersion = None,
    config: Config = None,
    no_config: NoConfig = False,
) -> None:
    """Lint the policies themselves: expressions that do not compile, fields the matched kinds
    lack or read unguarded, params no file holds. Exit code 0: clean; 1: problems; 2: bad input."""
    from kaffinity.findings import Severity
    from kaffinity.run.policy import check_paths, policy_check_run

    notes = Notes()
    with notes_said(notes):  # the run's notes, said as it ends: before its outcome, or its error
        check_paths(paths)
        problems = policy_check_run(
            paths, settings_from(SettingsOptions(config, no_config, kube_version), notes)
        )
    for problem in problems:
        typer.echo(escape(str(problem)))
    counts = {severity: sum(1 for p in problems if p.severity is severity) for severity in Severity}
    said = ", ".join(
        f"{count} {severity.value}{'s' if count != 1 else ''}" for severity, count in counts.items()
    )
    typer.echo(f"{said} in the policies of {', '.join(quote_name(path) for path in paths)}.")
    raise typer.Exit(1 if counts[Severity.ERROR] or counts[Severity.WARNING] else 0)
