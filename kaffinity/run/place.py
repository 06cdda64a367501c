"""``kaffinity place``'s run: every pod of the given workloads placed on the declared cluster by
the offline scheduler (kaffinity.simulate.place), each deployment unit on its own (``--unit``:
one of them), and the placements as text or JSON (kaffinity.report.placements)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from kaffinity.run.inputs import names
from kaffinity.run.layout import choose_unit, layout
from kaffinity.run.notes import Notes, Outcome, RunError
from kaffinity.run.workspace import input_problems, load, load_cluster

if TYPE_CHECKING:
    from kaffinity.config import Settings
    from kaffinity.run.inputs import Stdin


def filter_plugins(filters: Optional[str]) -> tuple[str, ...]:
    """The filter plugins ``--filters`` names, in the scheduler's order (all without it); an
    unknown name is a usage error."""
    from kaffinity.simulate.framework.profile import FILTERS

    if filters is None:
        return FILTERS
    chosen = names([filters]) or ()
    unknown = [name for name in chosen if name not in FILTERS]
    if unknown:
        raise RunError(
            f"kaffinity: error: unknown filter plugin {', '.join(unknown)} (known: {', '.join(FILTERS)})",
        )
    return tuple(name for name in FILTERS if name in chosen)


def place_run(
    paths: Optional[list[str]],
    settings: Settings,
    stdin: Stdin,
    enabled: tuple[str, ...],
    unit: Optional[str],
    output_format: str,
    notes: Notes,
) -> Outcome:
    """Exit code 0 when every pod is placed, 1 when some stay Pending, 2 on bad input."""
    from kaffinity.k8s.model import build_inventory
    from kaffinity.report.placements import render_json, render_text
    from kaffinity.simulate.place import TooManyPods, place_all

    if settings.cluster is None:
        raise RunError("kaffinity: error: place needs --cluster FILE (or cluster: in the config)")
    files = load(paths, settings, stdin)
    cluster = load_cluster(settings)
    assert cluster is not None
    files, units = layout(files, paths, settings, notes)
    broken = input_problems(files, settings, units, notes, cluster)
    chosen_units = (
        [choose_unit(units, unit, notes)] if unit is not None or not units.several else list(units.units)
    )
    runs = []
    for chosen in chosen_units:  # each unit on the cluster as declared: only one of them is deployed
        inventory = build_inventory(chosen.documents, settings.namespace, settings.workload_kinds)
        try:
            placement = place_all(
                inventory.workloads,
                cluster,
                version=settings.kube_version,
                gates=settings.feature_gates,
                namespaces=inventory.namespaces,
                filters=enabled,
                record=output_format == "json",
                classes=inventory.priority_classes,
                max_pods=settings.limits.pods,
                pdbs=inventory.pdbs,
                max_nodes=settings.limits.nodes,
                documents=inventory.documents,
            )
        except TooManyPods as error:
            where = f"unit {chosen.name}: " if len(chosen_units) > 1 else ""
            raise RunError(f"kaffinity: error: {where}{error}; no pod was placed") from None
        runs.append((chosen.name, placement))
    shown = runs if len(runs) > 1 else []
    run = runs[0][1]
    if output_format == "json":
        text = render_json(run, shown)
    else:
        # A unit read as written is not what gets deployed (an overlay without its patches, a
        # release without its chart): its header says so, beside the run's note.
        why = {each.name: each.not_rendered for each in chosen_units if each.not_rendered}
        text = render_text(
            run,
            [
                (f"{name} (read as written: {why[name]})" if name in why else name, each)
                for name, each in shown
            ],
        )
    return Outcome(text, (), 2 if broken else 1 if any(each.pending for _, each in runs) else 0)
