"""``kaffinity expand``'s run: the label selectors kube-apiserver stores in the pods each workload
creates (kaffinity.expand.preview), from the files as written (nothing is rendered for them)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Optional

from kaffinity.run.layout import layout
from kaffinity.run.notes import Notes, Outcome
from kaffinity.run.workspace import input_problems, load

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.run.inputs import Stdin


def expand_run(
    paths: Optional[list[str]], settings: Settings, stdin: Stdin, output_format: str, notes: Notes
) -> Outcome:
    """The previews as a diff, YAML or JSON (``text`` None: nothing to show); exit code 0, 2 on
    bad input."""
    from kaffinity.expand.preview import previews, render_diff, render_json, render_yaml

    files = load(paths, settings, stdin)
    # The previews read the files as written: nothing to render for them.
    files, units = layout(files, paths, replace(settings, render=False), notes)
    broken = input_problems(files, settings, units, notes)
    version, gates = settings.kube_version, settings.feature_gates
    objects = [file for file in files if os.path.normpath(file.name) not in units.fragments]
    items = list(previews(objects, version, gates, settings.namespace, settings.workload_kinds))
    text = ""
    if output_format == "json":
        text = render_json(items, version, gates)
    elif output_format == "yaml":
        text = render_yaml(files, items, version)
    elif items:
        text = render_diff(items, version)
    after: tuple[str, ...] = ()
    if not items and output_format != "json":
        after = ("kaffinity: no workload uses matchLabelKeys or mismatchLabelKeys",)
    return Outcome(text or None, after, 2 if broken else 0)
