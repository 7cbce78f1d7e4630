"""Who caused a runtime event, and is it allowed: the policy behind the Sandbox's audit hook.

Every runtime guard (audit hook, thread wrapper, ATen op recorder) asks the same question first: is the
candidate on the stack, and if so, is the event the candidate's own doing or Triton's (Triton compiles into
its cache, runs ptxas, copies arguments in the interpreter: that is allowed)? `Attributor.origin` answers it
by walking the stack from the innermost frame outwards:

    "direct"    the first frame outside the standard library is the candidate's
    "indirect"  the candidate is on the stack, below some other library (torch.save, numpy.fromfile)
    "triton"    a Triton frame sits between the candidate and the event
    None        the candidate is not on the stack (the harness's own activity)
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, FrameType

from evaluators.guards.roots import library_roots, norm_path

# Top-level packages of kernelbot itself; a candidate importing them is reaching into the evaluator.
HARNESS_PACKAGES = frozenset({"evaluators", "kernelbot", "extractors", "evolution"})
# Python packages that reach the CUDA driver/runtime directly (access-policy windows, persisting L2).
DRIVER_PACKAGES = frozenset({"cuda", "pycuda", "cuda_bindings"})
_DRIVER_SYMBOL_HINTS = ("accesspolicy", "persist", "setattribute", "setlimit", "l2")
_NETWORK_PREFIXES = ("socket.", "urllib.", "http.", "ftplib.", "smtplib.", "poplib.", "imaplib.", "nntplib.")
_PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "pty.spawn",
        "os.startfile",
    }
)
_FS_EVENTS = frozenset(
    {
        "os.remove",
        "os.unlink",
        "os.rename",
        "os.replace",
        "os.mkdir",
        "os.rmdir",
        "os.chmod",
        "os.chown",
        "os.symlink",
        "os.link",
        "os.truncate",
        "os.utime",
        "os.chdir",
        "shutil.rmtree",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.move",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.chown",
        "shutil.make_archive",
        "shutil.unpack_archive",
        "mmap.__new__",
        "resource.setrlimit",
        "resource.prlimit",
    }
)
_HARNESS_HOOK_EVENTS = frozenset({"sys.setprofile", "sys.settrace", "sys.addaudithook"})
_INTROSPECTION_EVENTS = frozenset(
    {"sys._current_frames", "gc.get_objects", "gc.get_referrers", "gc.get_referents"}
)
# Every event the hook looks at; anything else returns at once (the hook runs on every audited call).
INTERESTING_EVENTS = frozenset(
    {
        "open",
        "os.listdir",
        "os.scandir",
        "os.putenv",
        "os.unsetenv",
        "import",
        "ctypes.dlopen",
        "ctypes.dlsym",
        "ctypes.dlsym/handle",
        "ctypes.cdata",
        "ctypes.addressof",
        "ctypes.string_at",
        "ctypes.call_function",
        "object.__getattr__",
        "compile",
        "code.__new__",
        "exec",
        "sys._getframe",
        "sqlite3.connect",
    }
    | _PROCESS_EVENTS
    | _FS_EVENTS
    | _HARNESS_HOOK_EVENTS
    | _INTROSPECTION_EVENTS
)
_COMPILE_PARTS = (f"torch{os.sep}_dynamo{os.sep}", f"torch{os.sep}_inductor{os.sep}")
# Attributes whose read is audited ("object.__getattr__"): the ways from a traceback or generator to frames.
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})


def triton_cache_dirs() -> tuple[str, ...]:
    """Directories Triton writes compiled kernels to (knobs in new Triton, env / ~/.triton otherwise)."""
    dirs = [os.environ.get("TRITON_CACHE_DIR", ""), os.path.join(os.path.expanduser("~"), ".triton")]
    try:
        from triton import knobs

        dirs.append(str(knobs.cache.dir))
    except Exception:  # older Triton has no knobs; the env / home defaults above apply
        pass
    return tuple(norm_path(d) for d in dirs if d)


def _package_dir(name: str) -> str:
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    return norm_path(os.path.dirname(file)) if file else ""


@dataclass(frozen=True)
class Violation:
    kind: str  # a key of HACK_CLASSES
    evidence: str


class Attributor:
    """Classifies code files (candidate / triton / stdlib / other) and walks stacks to attribute events."""

    def __init__(self, candidate_file: str | os.PathLike, extra_library_files: tuple[str, ...] = ()) -> None:
        self.candidate_file = norm_path(candidate_file)
        self.candidate_raw = os.fspath(candidate_file)
        import triton  # noqa: F401  (loaded in every worker anyway; its location must be known)

        self.triton_dir = _package_dir("triton")
        paths = sysconfig.get_paths()
        self.stdlib_dirs = tuple({norm_path(paths["stdlib"]), norm_path(paths["platstdlib"])})
        self._kinds: dict[str, str] = {}
        self._extra = frozenset(norm_path(f) for f in extra_library_files)

    def file_kind(self, filename: str) -> str:
        kind = self._kinds.get(filename)
        if kind is None:
            kind = self._kinds[filename] = self._classify(filename)
        return kind

    def _classify(self, filename: str) -> str:
        if filename in (self.candidate_raw, self.candidate_file):
            return "candidate"
        if filename.startswith("<frozen") or filename.startswith("<string>"):
            return "stdlib"
        path = norm_path(filename) if not filename.startswith("<") else filename
        if path == self.candidate_file:
            return "candidate"
        if path in self._extra:
            return "other"
        if self.triton_dir and path.startswith(self.triton_dir + os.sep):
            return "triton"
        if any(path.startswith(d + os.sep) for d in self.stdlib_dirs) and "-packages" not in path:
            return "stdlib"
        return "other"

    def origin(self, frame: FrameType | None) -> str | None:
        seen_library = False
        while frame is not None:
            kind = self.file_kind(frame.f_code.co_filename)
            if kind == "candidate":
                return "indirect" if seen_library else "direct"
            if kind == "triton":
                return "triton"
            if kind == "other":
                seen_library = True
            frame = frame.f_back
        return None

    def innermost_library_file(self, frame: FrameType | None) -> str:
        """The file of the innermost frame that is neither the standard library nor the candidate."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if self.file_kind(filename) in ("other", "triton"):
                return filename
            frame = frame.f_back
        return ""

    def candidate_frame(self, frame: FrameType | None) -> FrameType | None:
        while frame is not None:
            if self.file_kind(frame.f_code.co_filename) == "candidate":
                return frame
            frame = frame.f_back
        return None

    def where(self, frame: FrameType | None) -> str:
        """'candidate.py:12 in fn' for the innermost candidate frame (the evidence's location)."""
        cand = self.candidate_frame(frame)
        if cand is None:
            return "outside the candidate"
        return f"{os.path.basename(cand.f_code.co_filename)}:{cand.f_lineno} in {cand.f_code.co_name}"


class AuditPolicy:
    """Decides whether one audited event, already attributed to the candidate, is a violation."""

    def __init__(self, attributor: Attributor, protected_paths: tuple[str | os.PathLike, ...]) -> None:
        self.attributor = attributor
        self.protected = tuple(norm_path(p) for p in protected_paths)
        # Where the libraries really live (torch on PYTHONPATH too), never the task or the candidate's folder.
        candidate_dir = os.path.dirname(attributor.candidate_file)
        self.read_roots = library_roots(HARNESS_PACKAGES, (*self.protected, candidate_dir))
        self.listing_roots = tuple(norm_path(p) for p in sys.path if p and os.path.isdir(p))
        self.cache_roots = triton_cache_dirs()
        self.system_read_roots = ("/proc", "/sys", "/dev")

    @staticmethod
    def _under(path: str, roots: tuple[str, ...]) -> bool:
        return any(path == r or path.startswith(r + os.sep) for r in roots)

    @staticmethod
    def interesting(event: str) -> bool:
        return event in INTERESTING_EVENTS or event.startswith(_NETWORK_PREFIXES)

    def check(self, event: str, args: tuple, origin: str, frame: FrameType | None) -> Violation | None:
        violation = self._check(event, args, origin, frame)
        if violation is not None and origin == "indirect":
            library = self.attributor.innermost_library_file(frame)
            if any(part in library for part in _COMPILE_PARTS):
                # torch.compile's machinery (cache dirs, env, compiler subprocesses) acting for the candidate.
                return Violation("pytorch_fallback", f"torch.compile machinery: {violation.evidence}")
        return violation

    def _check(self, event: str, args: tuple, origin: str, frame: FrameType | None) -> Violation | None:
        where = self.attributor.where(frame)
        if event == "open":
            return self._check_open(args, where)
        if event in ("os.listdir", "os.scandir"):
            path = args[0] if args and args[0] is not None else "."
            if isinstance(path, int):
                return None
            target = norm_path(path)
            if self._under(target, self.protected) or not (
                self._under(target, self.read_roots)
                or target in self.listing_roots
                or self._under(target, self.cache_roots)
            ):
                return Violation("sandbox_escape", f"lists directory {path} ({where})")
            return None
        if event in ("os.putenv", "os.unsetenv"):
            return Violation("sandbox_escape", f"changes the environment: {event}{args[:1]!r} ({where})")
        if event == "import":
            # Only the candidate's own imports: torch and numpy import optional modules lazily.
            return self._check_import(str(args[0]), where) if origin == "direct" else None
        if event in _PROCESS_EVENTS:
            shown = repr(args[:2])[:200]
            return Violation("threads_processes", f"starts a process: {event}{shown} ({where})")
        if event.startswith(_NETWORK_PREFIXES):
            return Violation("sandbox_escape", f"network access: {event}{repr(args[:2])[:160]} ({where})")
        if event in _FS_EVENTS:
            return Violation(
                "sandbox_escape", f"file-system operation {event}{repr(args[:2])[:200]} ({where})"
            )
        if event == "sqlite3.connect":
            # No kernel needs a database; the run store is one (scores, lineage) and any other is a file.
            shown = repr(args[0])[:200] if args else "?"
            return Violation("store_tamper", f"opens the SQLite database {shown} ({where})")
        if event in _HARNESS_HOOK_EVENTS:
            return Violation("harness_patch", f"calls {event} (replaces the harness's instruments) ({where})")
        if event in _INTROSPECTION_EVENTS:
            return Violation("sandbox_escape", f"inspects the evaluator's objects via {event} ({where})")
        if event.startswith("ctypes."):
            return self._check_ctypes(event, args, origin, where)
        if event in ("compile", "code.__new__") and origin == "direct" and len(args) > 1:
            source = args[0] if event == "compile" else None
            return self._check_code_filename(args[1], source, where)
        if event == "exec" and origin == "direct" and args and isinstance(args[0], CodeType):
            return self._check_executed_code(args[0], where)
        if event == "object.__getattr__" and origin == "direct" and len(args) > 1 and args[1] in _FRAME_ATTRS:
            return Violation("sandbox_escape", f"reads {args[1]} to reach the evaluator's frames ({where})")
        if event == "sys._getframe" and frame is not None:
            caller = self.attributor.file_kind(frame.f_code.co_filename)
            via_inspect = os.path.basename(frame.f_code.co_filename) == "inspect.py"
            if caller == "candidate" or (via_inspect and origin == "direct"):
                return Violation("sandbox_escape", f"walks the call stack (sys._getframe) ({where})")
        return None

    def _check_open(self, args: tuple, where: str) -> Violation | None:
        path, mode, flags = ((*tuple(args), None, None, None))[:3]
        if path is None or isinstance(path, int):
            return None  # an already-open descriptor (os.fdopen): its opening was audited
        target = norm_path(path if not isinstance(path, bytes) else os.fsdecode(path))
        writing = bool(mode and any(c in str(mode) for c in "wax+")) or bool(
            isinstance(flags, int)
            and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
        )
        if target == self.attributor.candidate_file:
            return Violation("sandbox_escape", f"writes its own file {path} ({where})") if writing else None
        if self._under(target, self.protected):
            return Violation("sandbox_escape", f"opens the evaluator's file {path} ({where})")
        if self._under(target, self.cache_roots) or target == os.devnull:
            return None
        if writing:
            if "__pycache__" in target and self._under(target, self.read_roots):
                return None  # the import system caching bytecode of a library module
            return Violation("sandbox_escape", f"writes file {path} ({where})")
        if self._under(target, self.read_roots) or self._under(target, self.system_read_roots):
            return None
        return Violation("sandbox_escape", f"reads file {path} ({where})")

    def _check_import(self, module: str, where: str) -> Violation | None:
        top = module.split(".", 1)[0]
        if top in HARNESS_PACKAGES:
            return Violation("sandbox_escape", f"imports the evaluator's module {module} ({where})")
        if top in DRIVER_PACKAGES:
            return Violation("persisting_l2", f"imports the CUDA driver bindings {module} ({where})")
        return None

    def _check_ctypes(self, event: str, args: tuple, origin: str, where: str) -> Violation | None:
        if origin != "direct":
            return None  # torch and numpy use ctypes internally
        name = str(args[1] if event == "ctypes.dlsym" and len(args) > 1 else args[0] if args else "")
        lowered = name.lower()
        if event == "ctypes.dlopen" and "cud" in lowered:
            return Violation("persisting_l2", f"loads the CUDA library {name} through ctypes ({where})")
        if event.startswith("ctypes.dlsym") and any(h in lowered for h in _DRIVER_SYMBOL_HINTS):
            return Violation("persisting_l2", f"looks up the driver symbol {name} ({where})")
        return Violation("sandbox_escape", f"native code access through {event} {name[:120]} ({where})")

    def _check_executed_code(self, code: CodeType, where: str) -> Violation | None:
        """Running a library file's code is what an import does; code that only carries a library's file name
        (compiled from an AST, where the compile event shows no file name) is a forgery."""
        filename = code.co_filename
        if self._forges_origin(filename, lambda path: _is_file_code(code, path)):
            return Violation("sandbox_escape", f"runs code that claims to come from {filename} ({where})")
        return None

    def _check_code_filename(self, filename: object, source: object, where: str) -> Violation | None:
        """Code whose file name points into a library would be attributed to that library: a forgery, unless
        it is that file's own text. The import system compiles a library module from its file when no
        bytecode cache is usable (a read-only site-packages: `from triton.language.extra import libdevice` on
        the H200 image), and the candidate's frame is the nearest one that is not the import system's."""
        if self._forges_origin(filename, lambda path: _is_file_text(source, path)):
            return Violation("sandbox_escape", f"creates code that claims to come from {filename} ({where})")
        return None

    def _forges_origin(self, filename: object, is_that_file: Callable[[str], bool]) -> bool:
        """Whether code named `filename` claims a file it is not from (is_that_file says, given the normalised
        path, whether the code really is that file's): an evaluator file always; any other path unless the
        code is that file's own, inside the library roots or not, since a frame of a file that is not the
        candidate's counts as a library's and its events as the library's doing."""
        if not isinstance(filename, (str, bytes)) or not filename or str(filename).startswith("<"):
            return False
        target = norm_path(os.fsdecode(filename))
        if target == self.attributor.candidate_file:
            return False
        return self._under(target, self.protected) or not is_that_file(target)


def _file_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _is_file_code(code: CodeType, path: str) -> bool:
    """Whether `code` is what the text of the file at `path` compiles to (as the import system, from a
    bytecode cache or from the text, would give it)."""
    text = _file_bytes(path)
    try:
        return text is not None and code == compile(text, code.co_filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False


def _is_file_text(source: object, path: str) -> bool:
    """Whether `source` (what compile() got) is exactly the text of the file at `path`; an AST or a code
    object is not what the import system compiles."""
    text = _file_bytes(path) if isinstance(source, (str, bytes)) else None
    if text is None:
        return False
    return source == (text if isinstance(source, bytes) else text.decode("utf-8", "replace"))
