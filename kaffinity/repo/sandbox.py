"""Rendering confined: what a checkout may make kustomize, kubectl kustomize and Helm do.

Rendering is on by default, and a pull request can only turn it off (``render: false`` in its own
``.kaffinity.yaml``), so everything the tools read is attacker input. The rules here (issue 31):

- **Paths.** Every path the checkout hands a tool resolves (symlinks followed, as the tools follow
  them) inside the repository root: a chart is walked with ``lstat`` before Helm loads it (Helm's
  loader follows symlinks: a link to ``/proc/self/environ`` read by ``.Files.Get`` would print the
  runner's environment), and each path a kustomization names is resolved. Only the person running
  kaffinity widens that (``Sandbox.roots``).
- **Network.** Off unless the person running kaffinity allows it (``--allow-network``,
  ``KAFFINITY_ALLOW_NETWORK=1``; never ``.kaffinity.yaml``), and off whatever allows it with
  ``--offline`` or ``KAFFINITY_OFFLINE=1``: a URL in any field of a kustomization
  is refused before the tool runs, and the tools run in a network namespace where the system
  offers one, else behind a proxy that refuses (with ``GIT_ALLOW_PROTOCOL=file``).
- **Resources.** Each tool (and Helm's Go engine, helm-python-sdk, in a child process) runs with a
  cleared environment, in a session of its own killed whole on timeout, under ``RLIMIT_DATA``
  (Go's heap counts there; ``RLIMIT_AS`` stops Go's runtime from reserving its arenas at all) and
  ``RLIMIT_CPU``; its output is read in bounded chunks and the tool killed past ``file-size``. A
  total budget for the run bounds them all.

Limits are the runner's: the command line and the environment set them; nothing in the checkout.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kaffinity.load.repository import within

#: Seconds one unit may take to render (a stuck tool must not hang a commit hook).
DEFAULT_TIMEOUT = 120.0
#: Seconds all the renders of one run may take together; the units left are read as written.
DEFAULT_BUDGET = 600.0
#: Bytes of writable private memory (``RLIMIT_DATA``) one tool may use: well above what a large
#: chart needs (a 4 MB CRD bundle renders in under 300 MB), well below a runner's memory.
DEFAULT_MEMORY = 2 * 1024**3
#: Bytes of error output kept from a tool (its first error line is what is reported).
ERROR_OUTPUT = 1024 * 1024
#: Entries walked in one chart before it is refused (a chart is tens of files; a vendored tree
#: of millions must not stall the run).
WALK_ENTRIES = 100_000

#: Exit status of the Helm SDK worker (kaffinity.repo.helm_worker) when the render failed as Helm
#: reports failures (a bad template, bad values): its message is on stderr, as JSON.
WORKER_FAILED = 10

ALLOW_NETWORK_ENV = "KAFFINITY_ALLOW_NETWORK"
#: Forbids the network whatever allows it (``--offline``; beats ``KAFFINITY_ALLOW_NETWORK``).
OFFLINE_ENV = "KAFFINITY_OFFLINE"
TIMEOUT_ENV = "KAFFINITY_RENDER_TIMEOUT"
BUDGET_ENV = "KAFFINITY_RENDER_BUDGET"
MEMORY_ENV = "KAFFINITY_RENDER_MEMORY"

#: A port nothing listens on (discard): the proxy every request of a tool goes to when the
#: network is off. Go's net/http takes it from HTTP_PROXY/HTTPS_PROXY (golang.org/x/net/http/
#: httpproxy), git from http.proxy/ALL_PROXY; Go never proxies loopback addresses, which the
#: network namespace (where there is one) and kaffinity's own URL check cover.
REFUSING_PROXY = "http://127.0.0.1:9"


@dataclass(frozen=True, slots=True)
class Sandbox:
    """What rendering may do: set by the person running kaffinity, never by the checkout."""

    #: Tools may reach the network (remote bases, URLs in a kustomization, helmCharts).
    network: bool = False
    #: Seconds per unit.
    timeout: float = DEFAULT_TIMEOUT
    #: Seconds for every render of the run together.
    budget: float = DEFAULT_BUDGET
    #: Bytes of memory per tool (RLIMIT_DATA).
    memory: int = DEFAULT_MEMORY
    #: Folders that paths from the checkout may lead into; empty: the repository around each
    #: unit (:func:`repository_root`).
    roots: tuple[str, ...] = ()
    #: The person running kaffinity forbade the network (``--offline``, ``KAFFINITY_OFFLINE``):
    #: ``network`` is False whatever else asked for it; a note may say ``--offline`` rather than
    #: suggest ``--allow-network``.
    offline: bool = False


DEFAULT_SANDBOX = Sandbox()


class SandboxError(ValueError):
    """A bad value for a render limit (command line or environment)."""


def sandbox_from(
    network: bool | None = None,
    timeout: float | None = None,
    budget: float | None = None,
    memory: str | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    offline: bool | None = None,
) -> Sandbox:
    """The sandbox the command line asks for, the environment filling what it leaves out.
    ``offline`` (``--offline``, else ``KAFFINITY_OFFLINE``) forbids the network whatever
    ``network`` or ``KAFFINITY_ALLOW_NETWORK`` say."""
    env = os.environ if environ is None else environ
    if offline is None:
        offline = _yes(env.get(OFFLINE_ENV))
    if network is None:
        network = _yes(env.get(ALLOW_NETWORK_ENV))
    return Sandbox(
        network=network and not offline,
        offline=offline,
        timeout=_seconds(timeout, env.get(TIMEOUT_ENV), DEFAULT_TIMEOUT, "--render-timeout", TIMEOUT_ENV),
        budget=_seconds(budget, env.get(BUDGET_ENV), DEFAULT_BUDGET, "--render-budget", BUDGET_ENV),
        memory=_size(memory if memory is not None else env.get(MEMORY_ENV)),
    )


def _yes(text: str | None) -> bool:
    return (text or "").strip().lower() in ("1", "true", "yes", "on")


def _seconds(value: float | None, text: str | None, default: float, flag: str, variable: str) -> float:
    if value is None and text:
        try:
            value = float(text)
        except ValueError:
            raise SandboxError(f"{variable}: not a number of seconds: {text!r}") from None
    if value is None:
        return default
    if not math.isfinite(value) or value <= 0:
        raise SandboxError(f"{flag}: must be a positive number of seconds, not {value:g}")
    return value


def _size(text: str | None) -> int:
    """A Kubernetes quantity of bytes (``512Mi``, ``2G``, ``1048576``), as ``--max-file-size``
    and ``limits: file-size`` read it (:func:`kaffinity.k8s.quantity.parse_quantity`)."""
    from kaffinity.k8s.quantity import parse_quantity

    if text is None or not text.strip():
        return DEFAULT_MEMORY
    size = parse_quantity(text.strip())
    if size is None or not size.is_finite():
        raise SandboxError(f"render memory: not a size: {text!r} (e.g. 512Mi, 2Gi)")
    if size < 16 * 1024**2:
        raise SandboxError(f"render memory: {text!r} is below 16Mi, too little for any tool")
    return min(int(size), 2**62)


class Budget:
    """The time left for the renders of one run."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()


# --- where paths may lead --------------------------------------------------------------------


def repository_root(path: str) -> str:
    """The work tree around ``path``: the nearest folder above it (or itself) holding ``.git``
    (git refuses ``.git`` as a name inside a tree, so a checkout cannot plant one), else the
    working directory when ``path`` is inside it, else ``path``'s own folder. Real paths."""
    from kaffinity.load.repository import work_tree

    real = os.path.realpath(path)
    start = real if os.path.isdir(real) else os.path.dirname(real)
    top = work_tree(start)
    if top is not None:
        return top
    here = os.path.realpath(os.getcwd())
    return here if inside(start, (here,)) else start


def roots_for(paths: Iterable[str]) -> tuple[str, ...]:
    """The repository roots of the paths linted (:func:`repository_root` of each; a --changed
    listing's thousands of files looked at once per folder)."""
    folders = dict.fromkeys(path if os.path.isdir(path) else os.path.dirname(path) or "." for path in paths)
    return tuple(dict.fromkeys(repository_root(folder) for folder in folders))


def inside(path: str, roots: Sequence[str]) -> bool:
    """Whether ``path``, symlinks resolved, is one of ``roots`` or below one."""
    real = os.path.realpath(path)
    return any(within(real, _real(root)) for root in roots)


def joined_inside(top: str, relative: str) -> str | None:
    """``top/relative`` (normalised) when it stays inside ``top``, symlinks resolved, else None:
    a path a checkout names relative to a folder of its own (a Flux ``spec.path``, an Argo CD
    ``valueFiles`` entry)."""
    path = os.path.normpath(os.path.join(top, relative))
    return path if inside(path, (top,)) else None


@functools.lru_cache(maxsize=64)
def _real(root: str) -> str:
    return os.path.realpath(root)


def confined_file(path: str, roots: Sequence[str]) -> bool:
    """A regular file inside ``roots`` (symlinks resolved): the only kind kaffinity reads because
    a tool's output or error names it."""
    if not inside(path, roots):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def path_problem(path: str, roots: Sequence[str], file_size: int) -> str | None:
    """Why the file or folder at ``path`` may not be handed to a tool: it leads outside the
    repository, is not a regular file or folder (a FIFO blocks a reader; a device, /proc), or is
    larger than ``file-size``. None: it may (or it does not exist: the tool says so)."""
    if not os.path.lexists(path):
        return None
    try:
        info = os.stat(path)
    except OSError:
        return f"{path} is a dangling symlink"
    if not inside(path, roots):
        return f"{path} leads outside the repository (to {os.path.realpath(path)})"
    if stat.S_ISDIR(info.st_mode):
        return None
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a regular file"
    if info.st_size > file_size:
        return f"{path} is larger than the limit of {file_size} bytes (limits: file-size)"
    return None


def walk_problem(folder: str, roots: Sequence[str], file_size: int) -> tuple[str, str] | None:
    """The first entry below ``folder`` a tool that reads the whole folder (Helm's chart loader,
    which follows symlinks: helm pkg/chart/loader/directory.go walks with sympath.Walk) must not
    see, and why: a symlink that is dangling or leads outside ``roots``, anything but regular
    files and folders, a file past ``file-size``. Walked with ``lstat``; a symlinked folder inside
    the roots is walked too, each real folder once."""
    seen: set[str] = set()
    pending = [folder]
    entries = 0
    while pending:
        current = pending.pop()
        real = os.path.realpath(current)
        if real in seen:
            continue
        seen.add(real)
        try:
            listing = list(os.scandir(current))
        except OSError as error:
            return current, f"cannot be read ({error.strerror or error})"
        for entry in listing:
            entries += 1
            if entries > WALK_ENTRIES:
                return folder, f"holds more than {WALK_ENTRIES:,} files"
            if entry.is_symlink():
                problem = path_problem(entry.path, roots, file_size)
                if problem is not None:
                    return entry.path, _symlink_reason(entry.path, problem)
                if os.path.isdir(entry.path):
                    pending.append(entry.path)
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as error:
                return entry.path, f"cannot be read ({error.strerror or error})"
            if stat.S_ISDIR(info.st_mode):
                if entry.name != ".git":
                    pending.append(entry.path)
            elif not stat.S_ISREG(info.st_mode):
                return entry.path, "is not a regular file (a FIFO, a device or a socket)"
            elif info.st_size > file_size:
                return entry.path, f"is larger than the limit of {file_size} bytes (limits: file-size)"
    return None


def _symlink_reason(path: str, problem: str) -> str:
    if "dangling" in problem:
        return "is a dangling symlink"
    if "outside the repository" in problem:
        return f"is a symlink that leads outside the repository (to {os.path.realpath(path)})"
    if "not a regular file" in problem:
        return f"is a symlink to something that is not a regular file ({os.path.realpath(path)})"
    return problem.removeprefix(path + " ")


# --- running a tool --------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    """What a tool printed and how it ended (``code``: its exit status, negative for a signal)."""

    output: str
    errors: str
    code: int
    #: Why kaffinity stopped it (its output past the limit, its time spent), or None.
    stopped: str | None = None


@dataclass(slots=True)
class _Reader:
    limit: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    over: bool = False


def tool_environment(scratch: str, network: bool) -> dict[str, str]:
    """A cleared environment for a tool: the PATH, a home and Helm/XDG folders in ``scratch``, an
    empty kubeconfig (Helm renders client-only; ``lookup`` finds no cluster), git that never
    prompts; with the network off, every proxy variable pointing at a port that refuses and git
    limited to local repositories (git's GIT_ALLOW_PROTOCOL). None of the runner's credentials,
    tokens or proxies pass unless the network is allowed (then its proxy settings do)."""
    home = os.path.join(scratch, "home")
    for folder in ("home", "cache", "config", "data", "tmp"):
        os.makedirs(os.path.join(scratch, folder), exist_ok=True)
    kubeconfig = os.path.join(scratch, "kubeconfig")
    with open(kubeconfig, "w", encoding="utf-8"):
        pass
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": home,
        "TMPDIR": os.path.join(scratch, "tmp"),
        "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": os.path.join(scratch, "cache"),
        "XDG_CONFIG_HOME": os.path.join(scratch, "config"),
        "XDG_DATA_HOME": os.path.join(scratch, "data"),
        "HELM_CACHE_HOME": os.path.join(scratch, "cache", "helm"),
        "HELM_CONFIG_HOME": os.path.join(scratch, "config", "helm"),
        "HELM_DATA_HOME": os.path.join(scratch, "data", "helm"),
        "KUBECONFIG": kubeconfig,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    proxies = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    if network:
        for name in (*proxies, "SSL_CERT_FILE", "SSL_CERT_DIR"):
            for variant in (name, name.lower()):
                if variant in os.environ:
                    env[variant] = os.environ[variant]
    else:
        for name in proxies:
            value = "" if name == "NO_PROXY" else REFUSING_PROXY
            env[name] = env[name.lower()] = value
        env["GIT_ALLOW_PROTOCOL"] = "file"
    return env


@functools.cache
def _namespace_prefix() -> tuple[str, ...]:
    """``unshare`` arguments that run a command with no network (a network namespace of its own,
    only a loopback that is down), when the system allows it; probed once."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return ()
    for prefix in ((unshare, "--net"), (unshare, "--map-root-user", "--net")):
        try:
            done = subprocess.run(
                [*prefix, "true"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
                check=False,
                env={"PATH": os.environ.get("PATH", os.defpath)},
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return prefix
    return ()


def isolated() -> bool:
    """Whether tools run in a network namespace of their own (else behind the refusing proxy)."""
    return bool(_namespace_prefix())


def run_tool(
    command: Sequence[str],
    sandbox: Sandbox,
    *,
    timeout: float,
    output_limit: int,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> Outcome | str:
    """Run ``command`` confined (see the module's docs); what it printed, or why it could not run.

    Output is read in chunks as it comes; past ``output_limit`` bytes the tool is killed and the
    outcome says so, as it does for a tool past ``timeout`` seconds (its whole process group).
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kaffinity-tool-") as scratch:
        environment = tool_environment(scratch, sandbox.network)
        if env:
            environment.update(env)
        prefix = () if sandbox.network else _namespace_prefix()
        memory = sandbox.memory
        cpu = max(1, math.ceil(timeout) * 2 + 1)  # two cores' worth: the wall clock decides first

        # Imported here, not in the child: renders run from several threads (--jobs), and an
        # import between fork and exec could wait for a lock another thread held at the fork.
        import resource

        def limit() -> None:  # in the child, between fork and exec: setrlimit only
            resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (memory, memory))

        try:
            process = subprocess.Popen(
                [*prefix, *command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd or scratch,
                env=environment,
                start_new_session=True,
                preexec_fn=limit if os.name == "posix" else None,  # noqa: PLW1509 - setrlimit only
            )
        except OSError as error:
            return f"cannot run {command[0]}: {error.strerror or error}"
        assert process.stdout is not None and process.stderr is not None
        out, err = _Reader(output_limit), _Reader(ERROR_OUTPUT)
        threads = [
            threading.Thread(target=_drain, args=(process.stdout, out, process), daemon=True),
            threading.Thread(target=_drain, args=(process.stderr, err, None), daemon=True),
        ]
        for thread in threads:
            thread.start()
        stopped: str | None = None
        deadline = time.monotonic() + timeout
        try:
            # The output's end (the tool closing it as it exits) wakes this at once, where
            # Popen.wait(timeout) polls with sleeps of up to 50 ms.
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            stopped = f"did not finish within {timeout:g} s"
            _kill(process)
        finally:
            _kill(process)
            for thread in threads:
                thread.join(5)
            process.stdout.close()
            process.stderr.close()
        process.wait()
        if out.over:
            stopped = f"printed more than the limit of {output_limit} bytes (limits: file-size)"
        elif stopped is None and process.returncode == -getattr(signal, "SIGXCPU", 24):
            stopped = f"used more than {cpu} s of CPU time"
        output = b"".join(out.chunks).decode("utf-8", "replace")
        errors = b"".join(err.chunks).decode("utf-8", "replace")
        return Outcome(output, errors, process.returncode, stopped)


def _drain(stream: object, reader: _Reader, process: subprocess.Popen[bytes] | None) -> None:
    """Read ``stream`` in chunks into ``reader`` up to its limit; past it, stop keeping what comes
    (the error stream) or kill the process (the output: a partial render is no render)."""
    read = stream.read1 if hasattr(stream, "read1") else stream.read  # type: ignore[attr-defined]
    while True:
        try:
            chunk = read(65536)
        except (OSError, ValueError):
            return
        if not chunk:
            return
        if reader.size + len(chunk) > reader.limit:
            reader.over = True
            if process is not None:
                _kill(process)
                return
            continue
        reader.chunks.append(chunk)
        reader.size += len(chunk)


def _kill(process: subprocess.Popen[bytes]) -> None:
    """The tool and whatever it left in its session (a git it spawned)."""
    killpg = getattr(os, "killpg", None)  # POSIX; elsewhere the tool alone
    try:
        if killpg is None:
            raise ProcessLookupError
        killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            process.kill()


def worker_command() -> list[str]:
    """The command of the Helm SDK worker (:mod:`kaffinity.repo.helm_worker`): this interpreter,
    isolated (``-I``: no PYTHON* variables, no working folder on the path, so a checkout's
    ``kaffinity/`` folder is never imported), with kaffinity's own folder put on its path."""
    import kaffinity

    package = os.path.dirname(os.path.dirname(os.path.abspath(kaffinity.__file__)))
    bootstrap = (
        f"import sys; sys.path.insert(0, {package!r}); "
        "from kaffinity.repo.helm_worker import main; sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-I", "-B", "-c", bootstrap]
