"""The framework's shape: one plugin module per upstream plugin, each paired with its upstream
test table and its test module, and the default profile's order."""

from __future__ import annotations

from pathlib import Path

from kaffinity.simulate.framework import profile

from .upstream import DATA, load

PLUGINS = Path(__file__).resolve().parents[2] / "kaffinity" / "simulate" / "plugins"
HERE = Path(__file__).resolve().parent


def _plugin_modules() -> list[str]:
    return sorted(path.stem for path in PLUGINS.glob("*.py") if path.stem != "__init__")


def test_every_plugin_module_has_its_table_and_test_module() -> None:
    modules = _plugin_modules()
    assert len(modules) >= 9
    assert [name for name in modules if not (DATA / f"{name}.yaml").is_file()] == []
    assert [name for name in modules if not (HERE / f"test_{name}.py").is_file()] == []


def test_every_table_belongs_to_a_plugin_module() -> None:
    assert sorted(path.stem for path in DATA.glob("*.yaml")) == _plugin_modules()


def test_each_table_names_the_plugin_its_module_models() -> None:
    """A table's ``plugin`` is the upstream name of the plugin whose module shares its name."""
    upstream = {name.lower(): name for name in (*profile.FILTER_PLUGINS, profile.PREEMPTION)}
    upstream["noderesources"] = profile.NODE_RESOURCES_FIT  # the folder holds Fit (and the scores)
    for path in sorted(DATA.glob("*.yaml")):
        assert load(path)["plugin"] == upstream[path.stem], path.name


def test_the_default_profile_keeps_upstreams_filter_order() -> None:
    """pkg/scheduler/apis/config/v1/default_plugins.go: the order decides which reason a node gets."""
    assert profile.FILTER_PLUGINS == (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
    )
    assert (*profile.FILTER_PLUGINS, "DefaultPreemption", "Autoscaling") == profile.FILTERS
