"""The progress indicator (kaffinity/load/progress.py): drawn on a terminal only, only after the delay,
erased before anything else is written; the hooks in the loader, the engine and the scheduler;
the command line through a real pseudo-terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from kaffinity.config import Settings
from kaffinity.engine import lint
from kaffinity.load.files import load
from kaffinity.load.progress import (
    DELAY_VARIABLE,
    NULL,
    SWITCH_VARIABLE,
    Progress,
    TerminalProgress,
    active,
    current,
    terminal,
)
from kaffinity.rules import RULES
from kaffinity.simulate.cluster import cluster_from

from .kit import REPO, no_internal_error

TTY_ENV = {"TERM": "xterm-256color"}
_CONTROL = re.compile(r"\x1b\[(\??)([0-9;]*)([A-Za-z])|[\r\n]")


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def screen(output: str) -> list[str]:
    """What a terminal shows after ``output``: text, carriage returns, newlines, erase-line and
    cursor-up sequences are played; other sequences (colours, cursor visibility) change nothing."""
    rows: list[list[str]] = [[]]
    row = column = 0
    position = 0
    for match in _CONTROL.finditer(output):
        for char in output[position : match.start()]:
            line = rows[row]
            line.extend(" " * (column - len(line) + 1))
            line[column] = char
            column += 1
        position = match.end()
        token = match.group(0)
        if token == "\r":
            column = 0
        elif token == "\n":
            row += 1
            if row == len(rows):
                rows.append([])
        elif match.group(3) == "K":
            keep = column if match.group(2) in ("", "0") else 0
            rows[row] = rows[row][:keep] if match.group(2) != "2" else []
        elif match.group(3) == "A":
            row = max(0, row - int(match.group(2) or 1))
    for char in output[position:]:
        line = rows[row]
        line.extend(" " * (column - len(line) + 1))
        line[column] = char
        column += 1
    text = ["".join(line).rstrip() for line in rows]
    while text and not text[-1]:
        text.pop()
    return text


def redrawn(stream: FakeTerminal, text: str) -> list[str]:
    """The screen, once the refresh thread has drawn ``text`` (a few times a second)."""
    deadline = time.monotonic() + 30
    while text not in "".join(screen(stream.getvalue())) and time.monotonic() < deadline:
        time.sleep(0.02)
    return screen(stream.getvalue())


def cursor_visible(output: str) -> bool:
    return output.rfind("\x1b[?25l") < output.rfind("\x1b[?25h") or "\x1b[?25l" not in output


def colours(output: str) -> list[str]:
    """SGR parameters that set a colour (30-38, 40-48, 90-107); bold and dim are not colours."""
    found = []
    for match in re.finditer(r"\x1b\[([0-9;]*)m", output):
        for code in match.group(1).split(";"):
            if code and (30 <= int(code) <= 48 or 90 <= int(code) <= 107):
                found.append(code)
    return found


# -- when there is an indicator at all ---------------------------------------------------------


def test_a_terminal_gets_an_indicator() -> None:
    assert isinstance(terminal(FakeTerminal(), environ=TTY_ENV), TerminalProgress)


@pytest.mark.parametrize(
    ("stream", "environ", "enabled"),
    [
        (io.StringIO(), TTY_ENV, True),  # not a terminal (a pipe, a file, CI logs)
        (FakeTerminal(), {"TERM": "dumb"}, True),
        (FakeTerminal(), {**TTY_ENV, SWITCH_VARIABLE: "0"}, True),
        (FakeTerminal(), TTY_ENV, False),  # --no-progress
    ],
    ids=["not-a-tty", "term-dumb", "KAFFINITY_PROGRESS=0", "disabled"],
)
def test_no_indicator_off_a_terminal_or_when_turned_off(
    stream: io.StringIO, environ: dict[str, str], enabled: bool
) -> None:
    progress = terminal(stream, environ={**environ, DELAY_VARIABLE: "0"}, enabled=enabled)
    assert progress is NULL
    with active(progress), progress.stage("reading files", 3):
        progress.tick("a.yaml")
    assert stream.getvalue() == ""


def test_a_closed_stream_is_not_a_terminal() -> None:
    with open(os.devnull, "w", encoding="utf-8") as stream:
        pass
    with pytest.raises(ValueError):
        stream.isatty()
    assert terminal(stream, environ=TTY_ENV) is NULL


def test_library_callers_get_the_null_indicator() -> None:
    assert current() is NULL
    recorder = Recorder()
    with active(recorder):
        assert current() is recorder
    assert current() is NULL
    assert recorder.closed


# -- the delay, drawing, erasing ---------------------------------------------------------------


def test_nothing_is_drawn_before_the_delay_and_the_stage_is_drawn_after() -> None:
    stream, clock = FakeTerminal(), Clock()
    progress = TerminalProgress(stream, delay=2.0, clock=clock)
    try:
        with progress.stage("reading files", 5):
            progress.tick("a.yaml")
            clock.now += 1.9
            progress.tick("b.yaml")
        with progress.stage("checking rules", 30):
            progress.tick("affinity-deadlock")
        assert stream.getvalue() == ""
        assert not progress.drawing
        clock.now += 0.2  # 2.1 s into the run
        with progress.stage("placing pods", 800, "workloads"):
            assert progress.drawing
            assert "0/800 workloads" in screen(stream.getvalue())[0]
            for _ in range(120):
                progress.tick("Deployment/shop/web")
            with progress.stage("reading files", 5):
                progress.tick("c.yaml")
                shown = redrawn(stream, "c.yaml")  # ticks are drawn by the refresh thread
        assert len(shown) == 1  # one line, redrawn in place
        assert "placing pods 120/800 workloads > reading files" in shown[0]
        assert "1/5" in shown[0]
        assert "c.yaml" in shown[0]
        assert shown[0].endswith("0:00:02")
    finally:
        progress.close()
    assert screen(stream.getvalue()) == []
    assert cursor_visible(stream.getvalue())


def test_a_long_step_is_drawn_without_waiting_for_the_next_tick() -> None:
    stream = FakeTerminal()
    progress = TerminalProgress(stream, delay=0.05)
    with active(progress), progress.stage("checking rules", 12):
        progress.tick("affinity-conflict")
        deadline = time.monotonic() + 30
        while not progress.drawing and time.monotonic() < deadline:
            time.sleep(0.01)  # the rule runs: no tick, no stage change
        assert progress.drawing
        assert "affinity-conflict" in stream.getvalue()
    assert screen(stream.getvalue()) == []


@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt()])
def test_erased_when_the_run_ends_with_an_exception(error: BaseException) -> None:
    stream = FakeTerminal()
    progress = terminal(stream, environ={**TTY_ENV, DELAY_VARIABLE: "0"})
    with pytest.raises(type(error)), active(progress), progress.stage("reading files", 2):
        progress.tick("a.yaml")
        assert "reading files" in stream.getvalue()
        raise error
    assert screen(stream.getvalue()) == []
    assert cursor_visible(stream.getvalue())
    assert current() is NULL
    progress.close()  # closing twice writes nothing more
    assert screen(stream.getvalue()) == []


def test_no_colour_with_no_color() -> None:
    outputs = {}
    for no_color in ("", "1"):
        stream = FakeTerminal()
        progress = terminal(stream, environ={**TTY_ENV, DELAY_VARIABLE: "0", "NO_COLOR": no_color})
        with active(progress), progress.stage("reading files", 2):
            progress.tick("a.yaml")
        outputs[no_color] = stream.getvalue()
    assert colours(outputs[""])
    assert colours(outputs["1"]) == []
    assert "reading files" in outputs["1"]


def test_a_short_run_imports_no_rich() -> None:
    """Below the delay (here a minute, so that a slow machine cannot cross it), nothing heavy is
    loaded: rich is imported only when drawing starts."""
    script = (
        "import io, sys\n"
        "from kaffinity.load.progress import TerminalProgress, active\n"
        "from kaffinity.load.files import load\n"
        "from kaffinity.engine import lint\n"
        "from kaffinity.config import Settings\n"
        "class T(io.StringIO):\n"
        "    def isatty(self): return True\n"
        "stream = T()\n"
        "with active(TerminalProgress(stream, delay=60)):\n"
        "    lint(load([sys.argv[1]]), Settings())\n"
        "rich = sorted(name for name in sys.modules if name.split('.')[0] == 'rich')\n"
        "print(rich, repr(stream.getvalue()))\n"
    )
    example = str(REPO / "examples" / "affinity-conflict")
    completed = subprocess.run(
        [sys.executable, "-c", script, example], capture_output=True, text=True, check=True, timeout=120
    )
    assert completed.stdout.strip() == "[] ''"


# -- the hooks ---------------------------------------------------------------------------------


class Recorder(Progress):
    """Records what the hooks report."""

    __slots__ = ("closed", "events")

    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []
        self.closed = False

    def stage(self, label: str, total: int | None = None, unit: str = "") -> AbstractContextManager[None]:
        @contextmanager
        def block() -> Iterator[None]:
            self.events.append(("begin", label, total))
            yield
            self.events.append(("end", label))

        return block()

    def tick(self, item: object = None) -> None:
        self.events.append(("tick", item))

    def close(self) -> None:
        self.closed = True


_WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers: [{name: app, image: nginx, resources: {requests: {cpu: 100m}}}]
"""


def manifests(folder: Path, *names: str) -> list[str]:
    folder.mkdir(exist_ok=True)
    paths = []
    for name in names:
        path = folder / f"{name}.yaml"
        path.write_text(_WEB.replace("NAME", name), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_the_loader_reports_each_file_read(tmp_path: Path) -> None:
    paths = manifests(tmp_path / "m", "api", "web")
    recorder = Recorder()
    with active(recorder):
        files = load([str(tmp_path / "m")])
    assert [file.name for file in files] == paths
    assert recorder.events == [
        ("begin", "finding files", None),
        ("end", "finding files"),
        ("begin", "reading files", 2),
        *(("tick", path) for path in paths),
        ("end", "reading files"),
    ]


def test_the_engine_reports_each_rule_and_the_scheduler_each_workload(tmp_path: Path) -> None:
    manifests(tmp_path / "m", "api", "web")
    cluster_path = str(REPO / "examples" / "clusters" / "unschedulable.yaml")
    files = load([str(tmp_path / "m")])
    cluster = cluster_from(load([cluster_path]))
    recorder = Recorder()
    with active(recorder):
        lint(files, Settings(cluster=cluster_path), cluster=cluster)
    checked = [rule.name for rule in RULES if rule.check is not None]
    assert recorder.events[0] == ("begin", "checking rules", len(checked))
    assert recorder.events[-1] == ("end", "checking rules")
    rule_ticks = [event[1] for event in recorder.events if event[0] == "tick" and isinstance(event[1], str)]
    assert rule_ticks == checked
    # The scheduler runs once, inside the first rule that reads the placement.
    begin = recorder.events.index(("begin", "placing pods", 2))
    end = recorder.events.index(("end", "placing pods"))
    assert recorder.events[begin - 1][0] == "tick"  # the rule that asked for it
    assert [str(event[1]) for event in recorder.events[begin + 1 : end]] == [
        "Deployment/shop/api",
        "Deployment/shop/web",
    ]


# -- the command line, through a pseudo-terminal -----------------------------------------------


class Session:
    """``kaffinity ARGS`` with stderr on a pseudo-terminal and stdout a pipe (stdin a pipe, or
    the terminal too)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, typed_stdin: bool = False) -> None:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # Ctrl-C as on a terminal: tests started in the background (`cmd &` in a script)
            # ignore SIGINT and a child inherits that, so the run under test never installed
            # Python's handler and the Ctrl-C test saw it finish normally.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self.master, slave = pty.openpty()
        environment = {**os.environ, **TTY_ENV, "COLUMNS": "120", **(env or {})}
        if "NO_COLOR" not in (env or {}):
            environment.pop("NO_COLOR", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kaffinity", *args],
            stdin=slave if typed_stdin else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=slave,
            env=environment,
        )
        os.close(slave)
        self.stdout = bytearray()
        self.received = bytearray()
        self.open = {self.master, self.stdout_fd}

    @property
    def stdout_fd(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    @property
    def terminal(self) -> str:
        """What the terminal received (the pty turns newlines into CR LF)."""
        return self.received.decode("utf-8", "replace")

    def send(self, data: bytes) -> None:
        if self.process.stdin is not None:
            self.process.stdin.write(data)
            self.process.stdin.flush()
        else:
            os.write(self.master, data)

    def end_input(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        else:
            os.write(self.master, b"\n\x04")  # end of file, typed

    def read(self, until: str = "") -> None:
        """Read stdout and the terminal until both are closed, or until the terminal shows ``until``."""
        deadline = time.monotonic() + 120
        while self.open and time.monotonic() < deadline:
            if until and until in self.terminal:
                return
            ready, _, _ = select.select(list(self.open), [], [], 1)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # EIO: the terminal's other end is closed
                    data = b""
                if not data:
                    self.open.discard(fd)
                else:
                    (self.received if fd == self.master else self.stdout).extend(data)
        assert not until, f"{until!r} never shown: {self.terminal!r}"

    def finish(self) -> int:
        self.read()
        os.close(self.master)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        return self.process.wait(timeout=60)


def run_on_terminal(*args: str, env: dict[str, str] | None = None) -> Session:
    session = Session(*args, env=env)
    session.end_input()
    session.finish()
    return session


def run_in_pipes(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, **TTY_ENV, **(env or {})}
    completed = subprocess.run(
        [sys.executable, "-m", "kaffinity", *args],
        capture_output=True,
        env=environment,
        timeout=120,
        check=False,
    )
    no_internal_error(completed.returncode, completed.stderr)
    return completed


def test_the_cli_shows_progress_on_a_terminal_and_the_report_is_unchanged(tmp_path: Path) -> None:
    manifests(tmp_path / "m", "api", "web")
    cluster = str(REPO / "examples" / "clusters" / "unschedulable.yaml")
    args = ("lint", "--no-config", "--format", "json", "--cluster", cluster, str(tmp_path / "m"))
    session = run_on_terminal(*args, env={DELAY_VARIABLE: "0"})
    assert session.process.returncode == 0
    for stage in ("reading files", "checking rules", "placing pods"):
        assert stage in session.terminal
    assert screen(session.terminal) == []  # erased
    assert cursor_visible(session.terminal)
    piped = run_in_pipes(*args, env={DELAY_VARIABLE: "0"})
    assert piped.returncode == 0
    assert bytes(session.stdout) == piped.stdout
    assert json.loads(piped.stdout)["summary"]["rules"] == {"replicas-not-spread": 2}
    assert piped.stderr == b""  # not a terminal: no progress, not even after the delay


def test_the_text_report_follows_the_erased_line(tmp_path: Path) -> None:
    """The report on the same terminal (here: stdout redirected into it) starts on a clean line."""
    folder = tmp_path / "m"
    manifests(folder, "web")
    (folder / "web.yaml").write_text(
        _WEB.replace("NAME", "web").replace("replicas: 2", "replicas: two"), encoding="utf-8"
    )
    session = run_on_terminal(
        "lint", "--no-config", "--format", "text", str(folder), env={DELAY_VARIABLE: "0"}
    )
    assert "checking rules" in session.terminal
    assert screen(session.terminal) == []
    report = session.stdout.decode()
    assert "[schema]" in report
    shown = screen(session.terminal + report.replace("\n", "\r\n"))  # as the terminal shows it
    assert shown == [line.rstrip() for line in report.rstrip("\n").split("\n")]


@pytest.mark.parametrize(
    ("flags", "env"),
    [(["--no-progress"], {}), ([], {SWITCH_VARIABLE: "0"}), ([], {"TERM": "dumb"})],
    ids=["--no-progress", "KAFFINITY_PROGRESS=0", "TERM=dumb"],
)
def test_the_cli_can_be_told_not_to_show_it(tmp_path: Path, flags: list[str], env: dict[str, str]) -> None:
    manifests(tmp_path / "m", "web")
    session = run_on_terminal(
        "lint",
        "--no-config",
        *flags,
        "--format",
        "json",
        str(tmp_path / "m"),
        env={DELAY_VARIABLE: "0", **env},
    )
    assert session.process.returncode == 0
    assert session.terminal == ""


def test_a_short_run_on_a_terminal_draws_nothing(tmp_path: Path) -> None:
    manifests(tmp_path / "m", "web")
    session = run_on_terminal("lint", "--no-config", "--format", "json", str(tmp_path / "m"))
    assert session.process.returncode == 0
    assert session.terminal == ""


def test_an_error_during_the_run_is_shown_and_the_line_erased(tmp_path: Path) -> None:
    manifests(tmp_path / "m", "web")
    missing = str(tmp_path / "missing.yaml")
    session = run_on_terminal(
        "lint", "--no-config", "--cluster", missing, str(tmp_path / "m"), env={DELAY_VARIABLE: "0"}
    )
    assert session.process.returncode == 2
    assert "reading files" in session.terminal
    assert screen(session.terminal) == [f"kaffinity: error: {missing}: cluster file not found"]
    assert cursor_visible(session.terminal)
    assert session.stdout == b""


def test_ctrl_c_erases_the_line(tmp_path: Path) -> None:
    session = Session("lint", "--no-config", "-", env={DELAY_VARIABLE: "0"})
    session.send(_WEB.replace("NAME", "web").encode())
    session.read(until="reading files")  # stdin stays open: the run waits on it
    session.process.send_signal(signal.SIGINT)
    session.end_input()
    code = session.finish()
    assert code != 0
    assert all("reading files" not in line for line in screen(session.terminal))
    assert cursor_visible(session.terminal)
    assert session.stdout == b""


def test_no_progress_while_the_input_is_typed_on_the_terminal() -> None:
    session = Session(
        "lint", "--no-config", "--format", "json", "-", env={DELAY_VARIABLE: "0"}, typed_stdin=True
    )
    session.send(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    session.end_input()
    assert session.finish() == 0
    assert "reading files" not in session.terminal
    assert '"findings": []' in session.stdout.decode()
