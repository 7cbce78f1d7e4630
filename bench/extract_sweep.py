"""Extract every op of two engine releases without a spec and say which reach a task whose reference runs.

  PYTHONPATH=. python -m bench.extract_sweep [--only lmdeploy|sglang] [--match TEXT] [--json F] [--timeout S]

The functions swept (CPU; no GPU needed):
- every `Default*Impl.forward` of lmdeploy 0.18.0's `lmdeploy/pytorch/backends/default` (its default backend:
  the PyTorch implementation of each op),
- every `forward_native` method under sglang 0.5.23's `sglang/srt/layers` (the PyTorch path of each op).

Each is extracted as `kernelbot extract --repo pypi:<release> --function <target>` would, with drafted inputs;
the extractor's own probe runs the reference on them. The table says, per function, whether a task was
written, whether its reference ran, and the reason when not. Releases come from the source cache
(extractors.release_sources: downloaded on first use, reused after). Exit status 0 when every lmdeploy op
whose body is PyTorch and at least 90 % of the sglang methods extract (the acceptance of the sweep).
"""

from __future__ import annotations

import argparse
import ast
import json
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

LMDEPLOY = "lmdeploy==0.18.0"
SGLANG = "sglang==0.5.23"
SGLANG_SHARE = 0.9  # of forward_native methods that must extract


@dataclass(frozen=True)
class Target:
    release: str
    function: str  # module:Qualname
    pytorch: bool = True  # the body computes with PyTorch (not a custom kernel, not abstract)
    why_not: str = ""


@dataclass
class Row:
    release: str
    function: str
    pytorch: bool
    extracted: bool = False
    ran: bool = False
    reason: str = ""
    seconds: float = 0.0


def lmdeploy_targets(root: Path) -> Iterator[Target]:
    base = root / "lmdeploy" / "pytorch" / "backends" / "default"
    for path in sorted(base.glob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for cls in _classes(path):
            if cls.name.startswith("Default") and cls.name.endswith("Impl"):
                method = _method(cls, "forward")
                if method is not None:
                    kind = _foreign_kernel(path, method)
                    yield Target(LMDEPLOY, f"{module}:{cls.name}.forward", not kind, kind)


def sglang_targets(root: Path) -> Iterator[Target]:
    base = root / "sglang" / "srt" / "layers"
    for path in sorted(base.rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for cls in _classes(path):
            method = _method(cls, "forward_native")
            if method is not None:
                kind = _foreign_kernel(path, method)
                yield Target(SGLANG, f"{module}:{cls.name}.forward_native", not kind, kind)


def _classes(path: Path) -> list[ast.ClassDef]:
    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def _foreign_kernel(path: Path, method: ast.FunctionDef) -> str:
    """Why the method's body is not PyTorch ('' when it is): it raises NotImplementedError, or it calls a
    name imported from the engine's own kernel packages (Triton / CUDA extensions)."""
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if body and isinstance(body[-1], ast.Raise) and not any(isinstance(s, ast.Return) for s in body):
        return "no PyTorch path (it only raises)"
    tree = ast.parse(path.read_text())
    kernels: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and "kernels" in node.module.split("."):
            for alias in node.names:
                kernels[alias.asname or alias.name] = node.module
    called = {n.func.id for n in ast.walk(method) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    foreign = sorted(called & set(kernels))
    return f"calls kernels {', '.join(foreign)}" if foreign else ""


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Timeout


def sweep_one(target: Target, root: Path, out: Path, timeout: float) -> Row:
    from extractors.extract import ExtractOptions, extract

    row = Row(target.release, target.function, target.pytorch, reason=target.why_not)
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(max(1, int(timeout)))
    try:
        summary = extract(ExtractOptions(root, target.function, out=out, force=True))
        row.extracted = True
        row.ran = summary.probe is not None and summary.probe.ran
        if not row.ran:
            row.reason = summary.probe.error if summary.probe else "not probed"
    except _Timeout:
        row.reason = f"timed out after {timeout:.0f} s"
    except Exception as exc:  # any refusal or bug: the table says which
        row.reason = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    finally:
        signal.alarm(0)
    row.seconds = time.monotonic() - started
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["lmdeploy", "sglang"])
    parser.add_argument("--match", default="", help="only functions whose name contains this")
    parser.add_argument("--json", type=Path, help="write the rows here")
    # a norm at a 1024-token prefill takes over 120 s on a loaded 2-core machine
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds per function")
    args = parser.parse_args(argv)
    from extractors.release_sources import fetch_release

    targets: list[tuple[Target, Path]] = []
    if args.only in (None, "lmdeploy"):
        root = fetch_release(LMDEPLOY)
        targets += [(t, root) for t in lmdeploy_targets(root)]
    if args.only in (None, "sglang"):
        root = fetch_release(SGLANG)
        targets += [(t, root) for t in sglang_targets(root)]
    targets = [(t, r) for t, r in targets if args.match in t.function]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kernelbot-sweep-") as scratch:
        for i, (target, root) in enumerate(targets):
            if not target.pytorch:
                rows.append(Row(target.release, target.function, False, reason=target.why_not))
            else:
                rows.append(sweep_one(target, root, Path(scratch) / f"t{i}", args.timeout))
            _print_row(rows[-1])
            sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return _summary(rows)


def _print_row(row: Row) -> None:
    status = "ran" if row.ran else "extracted" if row.extracted else "-"
    status = status if row.pytorch else "not PyTorch"
    print(f"{row.function:<90} {status:<11} {row.seconds:5.1f}s {row.reason[:300]}")


def _summary(rows: list[Row]) -> int:
    ok = True
    for release in dict.fromkeys(r.release for r in rows):
        mine = [r for r in rows if r.release == release and r.pytorch]
        ran = sum(r.ran for r in mine)
        extracted = sum(r.extracted for r in mine)
        share = ran / len(mine) if mine else 1.0
        need = 1.0 if release == LMDEPLOY else SGLANG_SHARE
        ok &= share >= need
        print(
            f"{release}: {len(mine)} PyTorch functions, {extracted} extracted, {ran} with a reference that "
            f"ran ({share:.0%}; needed {need:.0%})"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
