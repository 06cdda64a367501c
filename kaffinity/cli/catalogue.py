"""``kaffinity rules`` and ``kaffinity schema``: the rule catalogue (a rule explained) and the
JSON schemas kaffinity ships, printed (kaffinity.report.docs, kaffinity.load.resources)."""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kaffinity.cli.options import KubeVersion, Output
from kaffinity.cli.output import say
from kaffinity.load.display import quote_name
from kaffinity.run.notes import error_line

if TYPE_CHECKING:
    from kaffinity.rules.base import Rule


class RulesFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def rules(
    name: Annotated[
        Optional[str], typer.Argument(help="A rule to explain; all rules are listed without it.")
    ] = None,
    output_format: Annotated[
        RulesFormat, typer.Option("--format", "-f", help="Output format.")
    ] = RulesFormat.text,
) -> None:
    """List the rules, or explain one (what it finds, why it matters, example, fix)."""
    from kaffinity.report.docs import rule_catalogue, rule_json, rule_table, rule_text
    from kaffinity.rules import BY_NAME, RULES

    if name is not None:
        rule = BY_NAME.get(name)
        if rule is None:
            import difflib

            close = difflib.get_close_matches(name, list(BY_NAME), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            say(f"kaffinity: error: unknown rule '{name}'{hint}")
            raise typer.Exit(2)
        selected: tuple[Rule, ...] = (rule,)
    else:
        selected = RULES
    if output_format is RulesFormat.json:
        typer.echo(rule_json(selected))
    elif output_format is RulesFormat.markdown:
        typer.echo(rule_catalogue(selected), nl=False)
    elif sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        _print_rich(selected, explain=name is not None)
    elif name is not None:
        typer.echo(rule_text(selected[0]))
    else:
        typer.echo(rule_table(selected))


def _print_rich(rules: tuple[Rule, ...], *, explain: bool) -> None:
    """On a terminal: the catalogue as a table, a rule's docs as rendered Markdown."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table

    console = Console()
    if explain:
        rule = rules[0]
        fixable = ", fixable by kaffinity fix" if rule.fixable else ""
        console.print(f"[bold]{rule.name}[/bold]  {rule.category}, {rule.severity.value} by default{fixable}")
        console.print(Markdown(f"{rule.summary}\n\n{rule.docs}"))
        return
    table = Table("rule", "category", "severity", "fix", "summary", box=None, header_style="bold")
    for rule in rules:
        table.add_row(
            rule.name, rule.category, rule.severity.value, "yes" if rule.fixable else "", rule.summary
        )
    console.print(table)


def schema(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="kubernetes (manifests, for --kube-version), config (.kaffinity.yaml), "
            "cluster (a ClusterTopology file), output (the report of lint --format json), "
            "baseline (a baseline file), policy (a Policy), "
            "facts (the kaffinity variable of a policy expression), admission (a ValidatingAdmissionPolicy).",
        ),
    ] = "kubernetes",
    kube_version: KubeVersion = None,
    output: Output = None,
    list_schemas: Annotated[bool, typer.Option("--list", help="List the schemas and exit.")] = False,
) -> None:
    """Print a JSON schema kaffinity ships, byte for byte: for an editor's YAML language server
    (docs/editors.md) or any JSON Schema 2020-12 validator."""
    from kaffinity.config import DEFAULT_KUBE_VERSION, KUBE_VERSIONS, ConfigError, validate_kube_version
    from kaffinity.load.resources import schema_text

    described = {
        "config": ("config.schema.json", ".kaffinity.yaml"),
        "cluster": ("cluster.schema.json", "a ClusterTopology file (--cluster)"),
        "output": ("output.schema.json", "the report of lint --format json"),
        "baseline": ("baseline.schema.json", "a baseline file (kaffinity baseline write)"),
        "policy": ("policy.schema.json", "a kaffinity.io/v1alpha1 Policy (--policy)"),
        "facts": ("facts.schema.json", "the kaffinity variable of a policy expression"),
        "admission": (
            "admission.schema.json",
            "ValidatingAdmissionPolicy and binding fields kaffinity reads",
        ),
    }
    if list_schemas:
        rows = [(key, file, what) for key, (file, what) in described.items()]
        for version in KUBE_VERSIONS:
            default = ", the default" if version == DEFAULT_KUBE_VERSION else ""
            what = f"Kubernetes {version} manifests (--kube-version {version}{default})"
            rows.append(("kubernetes", f"kubernetes-{version}.schema.json", what))
        width = max(len(file) for _, file, _ in rows)
        for key, file, what in rows:
            typer.echo(f"{key:<10}  {file:<{width}}  {what}")
        raise typer.Exit(0)
    problem = None
    if name == "kubernetes":
        version = kube_version or DEFAULT_KUBE_VERSION
        try:
            validate_kube_version(version)
        except ConfigError as error:
            problem = error_line(error.messages[0])
        file = f"kubernetes-{version}.schema.json"
    elif name not in described:
        problem = f"kaffinity: error: unknown schema '{name}' (one of kubernetes, {', '.join(described)})"
    elif kube_version is not None:
        problem = f"kaffinity: error: --kube-version applies to the kubernetes schema, not to '{name}'"
    else:
        file = described[name][0]
    if problem:
        say(problem)
        raise typer.Exit(2)
    data = schema_text(file).encode("utf-8")  # bytes: no newline translation on any platform
    if not output:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(output, "wb") as handle:
            handle.write(data)
    except OSError as error:
        say(f"kaffinity: error: {quote_name(output)}: cannot write: {error.strerror or error}")
        raise typer.Exit(2) from None
