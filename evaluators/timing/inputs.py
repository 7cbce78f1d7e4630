"""Input sets for the timing stage: each implementation gets its own tensors, and calls that the reference
would accumulate into (seq_lens += 1, a cumsum written in place) each get a private copy of the mutated
arguments, restored from a pristine copy before every timed batch, so that call 200 of a graph replay sees the
same valid inputs as call 1 (an index that keeps growing would otherwise walk off its table).

Inputs are `(args, kwargs)` pairs; a tensor inside them is addressed by a path of indices/keys, e.g.
(0, 2) for args[2], (1, "out") for kwargs["out"], (0, 1, 0) for args[1][0].
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from evaluators.config import TimingConfig
from evaluators.correctness.bits import count_true

Inputs = tuple[tuple, dict]
Path = tuple[Any, ...]


def tensor_paths(obj: Any, prefix: Path = ()) -> Iterator[tuple[Path, torch.Tensor]]:
    """Every tensor inside nested tuples/lists/dicts, with its path."""
    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, (tuple, list)):
        for i, item in enumerate(obj):
            yield from tensor_paths(item, (*prefix, i))
    elif isinstance(obj, dict):
        for key, item in obj.items():
            yield from tensor_paths(item, (*prefix, key))


def get_at(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def replace_at(obj: Any, path: Path, value: Any) -> Any:
    """A copy of `obj` with the element at `path` replaced (containers rebuilt along the path only)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, dict):
        new = dict(obj)
        new[head] = replace_at(obj[head], rest, value)
        return new
    items = list(obj)
    items[head] = replace_at(items[head], rest, value)
    return tuple(items) if isinstance(obj, tuple) else items


def map_tensors(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple):
        return tuple(map_tensors(item, fn) for item in obj)
    if isinstance(obj, list):
        return [map_tensors(item, fn) for item in obj]
    if isinstance(obj, dict):
        return {key: map_tensors(item, fn) for key, item in obj.items()}
    return obj


def clone_inputs(inputs: Inputs) -> Inputs:
    """Deep copy of the tensors (same strides where possible); other values are shared."""
    return map_tensors(inputs, lambda t: t.detach().clone())


def same_layout_copy(t: torch.Tensor) -> torch.Tensor:
    """A new tensor with t's size, stride, dtype and device, holding t's values."""
    out = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out


def changed_values(before: torch.Tensor, after: torch.Tensor) -> int:
    """How many elements differ in value (NaN equals NaN: a NaN left in place is not a change). By value, not
    by bits like evaluators.correctness.bits.changed_elements: this tells which arguments the trusted
    reference writes, where -0.0 over 0.0 is no write worth a per-call copy; the bitwise one judges a
    candidate's writes."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return after.numel()
    differ = before != after
    if before.dtype.is_floating_point or before.dtype.is_complex:
        differ &= ~(torch.isnan(before) & torch.isnan(after))
    return count_true(differ)


def run_and_diff(
    fn: Callable[..., Any], inputs: Inputs, sync: Callable[[], None]
) -> tuple[Any, dict[Path, int]]:
    """Call fn on `inputs` (which it may mutate) and count, per tensor path, the elements the call changed."""
    before = {path: t.detach().clone() for path, t in tensor_paths(inputs)}
    args, kwargs = inputs
    out = fn(*args, **kwargs)
    sync()
    changed = {path: changed_values(before[path], t) for path, t in tensor_paths(inputs)}
    return out, changed


def _copy_all(dsts: list[torch.Tensor], srcs: list[torch.Tensor]) -> None:
    if not dsts:
        return
    foreach = getattr(torch, "_foreach_copy_", None)
    if foreach is not None:
        try:
            foreach(dsts, srcs)
            return
        except (RuntimeError, TypeError):  # mixed layouts or an old torch: plain copies below
            pass
    for dst, src in zip(dsts, srcs, strict=True):
        dst.copy_(src)


class InputSet:
    """One implementation's inputs for one case, with per-call copies of the arguments the reference mutates.

    Shared (unmutated) arguments are the same tensor objects in every call.
    """

    def __init__(self, inputs: Inputs, mutated: list[Path], calls: int = 1) -> None:
        self.base: Inputs = inputs
        self.mutated = [p for p in mutated if isinstance(get_at(inputs, p), torch.Tensor)]
        self.pristine = {p: same_layout_copy(get_at(inputs, p)) for p in self.mutated}
        self._calls: list[Inputs] = []
        self._copies: list[list[torch.Tensor]] = []
        self.resize(calls)

    @property
    def mutated_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.pristine.values())

    @property
    def calls(self) -> int:
        return len(self._calls)

    def resize(self, calls: int) -> None:
        """Prepare `calls` distinct call inputs (copies only of mutated tensors; the rest is shared)."""
        calls = max(1, calls)
        self._calls, self._copies = [], []
        for _ in range(calls):
            call = self.base
            copies = []
            for path in self.mutated:
                copy = same_layout_copy(self.pristine[path])
                copies.append(copy)
                call = replace_at(call, path, copy)
            self._calls.append(call)
            self._copies.append(copies)

    def call(self, k: int) -> Inputs:
        return self._calls[k]

    def restore(self) -> None:
        """Put the pristine values back into every call's copy of the mutated arguments."""
        if not self.mutated:
            return
        dsts = [t for copies in self._copies for t in copies]
        srcs = [self.pristine[p] for _ in self._copies for p in self.mutated]
        _copy_all(dsts, srcs)

    def load(self, fresh: Inputs) -> list[str]:
        """Copy fresh values (same case, another seed) into the SAME tensors.

        Shared arguments are overwritten in place, mutated ones via their pristine copy (restore() spreads
        them). Returns the paths that could not be loaded (shape or dtype differs between seeds).
        """
        skipped = []
        fresh_by_path = dict(tensor_paths(fresh))
        for path, tensor in tensor_paths(self.base):
            src = fresh_by_path.get(path)
            dst = self.pristine.get(path, tensor)
            if src is None or src.shape != dst.shape or src.dtype != dst.dtype:
                skipped.append(repr(path))
                continue
            dst.copy_(src.to(dst.device))
        return skipped


def graph_input_sets(config: TimingConfig, inputs: Inputs) -> int:
    """Input sets each implementation alternates over in the graph regime: more for small inputs."""
    nbytes = sum(t.numel() * t.element_size() for _, t in tensor_paths(inputs))
    return config.small_input_sets if nbytes <= config.small_input_bytes else config.graph_input_sets
