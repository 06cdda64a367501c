"""The command line's options: the typer application, the option types every command shares
(their help texts are the ``--help`` output: tests/test_help.py) and the choices (formats,
severities) as enums."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from kaffinity import __version__
from kaffinity.cli.help import Group

app = typer.Typer(
    name="kaffinity",
    cls=Group,  # the same --help on every supported typer (kaffinity/cli/help.py)
    help="Lint Kubernetes pod scheduling rules (affinity, anti-affinity, topology spread, "
    "tolerations) before they reach a cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Markdown: the lines of a docstring paragraph are one paragraph, rewrapped to the terminal.
    rich_markup_mode="markdown",
)


class OutputFormat(str, Enum):
    auto = "auto"
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"
    markdown = "markdown"
    concise = "concise"


class MinSeverity(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"


class FailOn(str, Enum):
    error = "error"
    warning = "warning"
    info = "info"
    none = "none"


class Color(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kaffinity {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """kaffinity: scheduling rules, checked before deploy."""


Paths = Annotated[
    Optional[list[str]],
    typer.Argument(help="Files or folders (recursive), or - for stdin. Default: the current folder."),
]
Config = Annotated[
    Optional[str],
    typer.Option("--config", "-c", help="Config file (default: nearest .kaffinity.yaml upward)."),
]
NoConfig = Annotated[bool, typer.Option("--no-config", help="Ignore any .kaffinity.yaml.")]
Limit = Annotated[
    Optional[list[str]],
    typer.Option(
        "--limit",
        metavar="NAME=VALUE",
        help="Set a limit, above its default too (repeatable): file-size, depth, alias-nodes, pods, "
        "nodes, findings; also KAFFINITY_LIMITS. A config file may only lower them.",
    ),
]


def _kube_version(value: Optional[str]) -> Optional[str]:
    from kaffinity.config import kube_version_option

    return kube_version_option(value)


KubeVersion = Annotated[
    Optional[str],
    typer.Option(
        "--kube-version",
        help="Target Kubernetes version: 1.33, v1.33, 1.33.2 (the minor counts).",
        callback=_kube_version,
    ),
]
FeatureGates = Annotated[
    Optional[str],
    typer.Option("--feature-gates", help="Gates that differ from the defaults: Name=true,Other=false."),
]
Namespace = Annotated[
    Optional[str],
    typer.Option("--namespace", "-n", help="Namespace of objects that name none (default: default)."),
]
Output = Annotated[Optional[str], typer.Option("--output", "-o", help="Write to this file.")]
Cluster = Annotated[
    Optional[str],
    typer.Option(
        "--cluster",
        help="File or folder declaring the cluster: Nodes, Namespaces, existing Pods (kubectl get -o yaml).",
    ),
]
Closed = Annotated[
    Optional[bool],
    typer.Option(
        "--closed/--open",
        help="The input is complete: a required pod affinity nothing matches is an error, not a warning.",
    ),
]
StdinFilename = Annotated[
    Optional[str], typer.Option("--stdin-filename", help="Name to report for input read from stdin.")
]
Render = Annotated[
    Optional[bool],
    typer.Option(
        "--render/--no-render",
        help="Build kustomize overlays, render Helm charts and GitOps releases (with kustomize/kubectl "
        "and helm, or kaffinity[helm]) and lint the result, findings placed on the source files "
        "(default: on, render: in the config; --no-render reads the files as written).",
    ),
]
AllowNetwork = Annotated[
    Optional[bool],
    typer.Option(
        "--allow-network",
        help="Let rendering fetch what overlays name remotely (remote bases, URLs, helmCharts); "
        "off by default, and never from the config (also KAFFINITY_ALLOW_NETWORK=1).",
    ),
]
Offline = Annotated[
    Optional[bool],
    typer.Option(
        "--offline",
        help="Never reach the network, whatever --allow-network or KAFFINITY_ALLOW_NETWORK say "
        "(also KAFFINITY_OFFLINE=1).",
    ),
]
RenderTimeout = Annotated[
    Optional[float],
    typer.Option(
        "--render-timeout",
        metavar="SECONDS",
        help="Longest render of one unit (default 120; also KAFFINITY_RENDER_TIMEOUT).",
    ),
]
RenderBudget = Annotated[
    Optional[float],
    typer.Option(
        "--render-budget",
        metavar="SECONDS",
        help="Time for all renders of the run; units left are read as written (default 600; "
        "also KAFFINITY_RENDER_BUDGET).",
    ),
]
RenderMemory = Annotated[
    Optional[str],
    typer.Option(
        "--render-memory",
        metavar="SIZE",
        help="Memory each rendering tool may use, a Kubernetes quantity, e.g. 512Mi "
        "(default 2Gi; also KAFFINITY_RENDER_MEMORY).",
    ),
]
Unit = Annotated[
    Optional[str],
    typer.Option("--unit", help="Only this deployment unit (see lint's report; docs/repositories.md)."),
]
