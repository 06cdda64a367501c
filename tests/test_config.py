"""Configuration: discovery upward, validation with positions, CLI over file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kaffinity.config import ConfigError, Settings, find_config, load_settings, parse_feature_gates
from kaffinity.findings import Severity
from kaffinity.rules import CATEGORIES, RULES

from .kit import run

NAMES = [rule.name for rule in RULES]
#: A manifest with one helm-template finding (info: `fail-on: info` makes it count).
HELM = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Values.x }}\n"


def _load(path: Path) -> Settings:
    return load_settings(str(path), NAMES, sorted(CATEGORIES))


def test_discovered_upward_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("fail-on: info\n")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config(str(nested)) == str(tmp_path / ".kaffinity.yaml")
    (nested / "t.yaml").write_text(HELM)
    assert run("lint", "t.yaml", cwd=nested).returncode == 1
    assert run("lint", "--no-config", "t.yaml", cwd=nested).returncode == 0


def test_all_settings_are_read(tmp_path: Path) -> None:
    config = tmp_path / ".kaffinity.yaml"
    config.write_text(
        "kube-version: '1.32'\n"
        "feature-gates: {MatchLabelKeysInPodAffinity: false}\n"
        "proposals: true\n"
        "select: [input]\nignore: [helm-template]\n"
        "severity: {parse-error: warning, suppression: error}\n"
        "fail-on: none\nnamespace: shop\nexclude: [vendor]\n"
        "cluster: cluster/nodes.yaml\ncontext: [manifests]\n"
    )
    settings = _load(config)
    assert settings.kube_version == "1.32"  # the gate is beta there; locked from 1.33
    assert settings.feature_gates == {"MatchLabelKeysInPodAffinity": False}
    assert settings.proposals is True
    assert (settings.select, settings.ignore) == (("input",), ("helm-template",))
    assert settings.severity == {"parse-error": Severity.WARNING, "suppression": Severity.ERROR}
    assert settings.fail_on is None and settings.namespace == "shop" and settings.exclude == ("vendor",)
    assert settings.cluster == str(tmp_path / "cluster" / "nodes.yaml")
    assert settings.context == (str(tmp_path / "manifests"),)


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        (
            "kube-version: '1.33'\nkube_version: '1.30'\n",
            ":2:1:",
            ["unknown key 'kube_version'", "did you mean 'kube-version'"],
        ),
        ("fail-on: sometimes\n", ":1:1:", ["fail-on", "sometimes"]),
        ("select:\n  - input\n  - helm-templat\n", ":3:5:", ["unknown rule or category 'helm-templat'"]),
        ("severity:\n  parse-error: fatal\n", ":2:3:", ["fatal"]),
        ("kube-version: [1, 33]\n", ":1:1:", ["kube-version", "string"]),
        ("kube-version: '1.12'\n", ":1:1:", ["'1.12' is not one kaffinity knows (1.27 to 1.37)"]),
        ("- just\n- a list\n", ":1:1:", ["must be a mapping"]),
        (
            "kube-version: '1.33'\nfeature-gates:\n  MatchLabelKeysInPodAffinity: false\n",
            ":3:3:",
            ["MatchLabelKeysInPodAffinity is GA in Kubernetes 1.33 and locked to true"],
        ),
        (
            "feature-gates:\n  SidecarContainers: true\n  MinDomainsInPodTopologySpread: true\n",
            ":3:3:",
            ["not a feature gate of Kubernetes 1.37", "removed in 1.32"],
        ),
        ("a: [\n", ":2:1:", ["did not find expected node content"]),
        # A key given twice used to be accepted silently (a parse-error in manifests).
        (
            "kube-version: '1.30'\nfail-on: error\nkube-version: '1.33'\n",
            ":3:1:",
            ['"kube-version" already defined at line 1'],
        ),
        ("severity: {all: error}\n", ":1:12:", ["'all'"]),
    ],
)
def test_invalid_config_is_one_line_per_problem_at_its_line(
    tmp_path: Path, text: str, where: str, words: list[str]
) -> None:
    (tmp_path / ".kaffinity.yaml").write_text(text)
    (tmp_path / "t.yaml").write_text("apiVersion: v1\nkind: Pod\n")
    completed = run("lint", "t.yaml", cwd=tmp_path)
    assert completed.returncode == 2
    first = completed.stderr.splitlines()[0]
    assert first.startswith(f".kaffinity.yaml{where} error: "), first
    for word in words:
        assert word in first
    assert completed.stdout == ""


def test_empty_config_means_defaults(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("# nothing yet\n")
    settings = _load(tmp_path / ".kaffinity.yaml")
    assert settings.base_dir == str(tmp_path)
    assert replace(settings, base_dir=".") == Settings()


def test_flags_override_the_file(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("fail-on: info\nignore: [helm-template]\n")
    (tmp_path / "t.yaml").write_text(HELM)
    assert run("lint", "t.yaml", cwd=tmp_path).returncode == 0  # ignored by the file
    assert run("lint", "t.yaml", "--ignore", "parse-error", cwd=tmp_path).returncode == 1
    assert (
        run("lint", "t.yaml", "--ignore", "parse-error", "--fail-on", "error", cwd=tmp_path).returncode == 0
    )


def test_exclude_from_config_is_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("exclude: ['charts/**/templates']\nfail-on: info\n")
    chart = tmp_path / "charts" / "web" / "templates"
    chart.mkdir(parents=True)
    (chart / "deploy.yaml").write_text(HELM)
    sub = tmp_path / "charts"
    assert run("lint", ".", cwd=sub).returncode == 0
    assert run("lint", "--no-config", "--fail-on", "info", ".", cwd=sub).returncode == 1


def test_severity_override_changes_the_exit_code(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("severity: {helm-template: error}\n")
    (tmp_path / "t.yaml").write_text(HELM)
    completed = run("lint", "t.yaml", cwd=tmp_path)
    assert completed.returncode == 1
    assert "error [helm-template]" in completed.stdout


def test_feature_gate_syntax() -> None:
    assert parse_feature_gates("A=true, B=False") == {"A": True, "B": False}
    with pytest.raises(ConfigError):
        parse_feature_gates("A=maybe")


def test_exclude_from_file_and_flag_each_anchor_at_their_own_folder(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("exclude: [apps/legacy]\nfail-on: info\n")
    for name in ("apps/legacy/a.yaml", "apps/web/b.yaml", "apps/web/gen/c.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(HELM)
    # From apps/: the file's pattern stays anchored at the repository root, the flag's at apps/.
    completed = run("lint", ".", "--exclude", "web/gen", cwd=tmp_path / "apps")
    assert completed.returncode == 1
    assert [line.split(":")[0] for line in completed.stdout.splitlines() if "[helm-template]" in line] == [
        "web/b.yaml"
    ]


def test_severity_all_is_not_its_own_suggestion(tmp_path: Path) -> None:
    (tmp_path / ".kaffinity.yaml").write_text("severity: {all: error}\n")
    completed = run("lint", "-", cwd=tmp_path, stdin="apiVersion: v1\nkind: Pod\n")
    assert completed.returncode == 2 and "did you mean" not in completed.stderr


@pytest.mark.parametrize(("path", "words"), [("/dev/zero", "more than the limit"), (".", "is a folder")])
def test_config_that_is_no_regular_file(tmp_path: Path, path: str, words: str) -> None:
    """`--config /dev/zero` used to say "not found"; a device or a pipe is read (bounded)."""
    completed = run("lint", "--config", path, "-", cwd=tmp_path, stdin="apiVersion: v1\nkind: Pod\n")
    assert completed.returncode == 2
    assert words in completed.stderr and "not found" not in completed.stderr


@pytest.mark.parametrize("written", ["1.30", "'1.30'", "v1.30", "1.30.2", "'v1.30.2'"])
def test_a_version_is_read_as_written(tmp_path: Path, written: str) -> None:
    """YAML reads an unquoted 1.30 as the number 1.3: the file's own text is read instead; the
    forms kubectl and kubeconform accept (v1.30, 1.30.2) name the minor."""
    from kaffinity.config import load_settings

    path = tmp_path / ".kaffinity.yaml"
    path.write_text(f"kube-version: {written}\n")
    assert load_settings(str(path), [], []).kube_version == "1.30"


def test_the_text_1_3_is_version_1_3(tmp_path: Path) -> None:
    from kaffinity.config import ConfigError, load_settings

    path = tmp_path / ".kaffinity.yaml"
    path.write_text("kube-version: 1.3\n")
    with pytest.raises(ConfigError) as raised:
        load_settings(str(path), [], [])
    assert "'1.3' is not one kaffinity knows" in raised.value.messages[0]


def test_min_severity_in_the_config(tmp_path: Path) -> None:
    from kaffinity.config import load_settings
    from kaffinity.findings import Severity

    path = tmp_path / ".kaffinity.yaml"
    path.write_text("min-severity: warning\n")
    assert load_settings(str(path), [], []).min_severity is Severity.WARNING
