"""The envelope: the arguments a kernel was proved correct on, as rules per parameter of the entry. The guard
the codemod writes sends a call to the kernel only inside it; anything else takes the original PyTorch path.

Rules come from the task's cases (kernelbot.integrate.derive_envelope): a tensor's dtypes, rank, the sizes of
its dims that do not vary at serving time, contiguity; a scalar's values; dims and scalars that follow the
task's `dynamic` sizes (batch, tokens) are left free, as the evaluator's hidden cases move them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorRule:
    name: str
    dtypes: tuple[str, ...]  # "bfloat16", ...
    ranks: tuple[int, ...]
    fixed_dims: tuple[tuple[int, tuple[int, ...]], ...]  # (dim, allowed sizes) for one fixed rank
    dynamic_dims: tuple[tuple[int, tuple[str, ...]], ...]  # (dim, the dynamic keys that move it)
    contiguous: bool  # every case's tensor was contiguous: the guard requires it
    optional: bool  # some cases passed None instead

    def describe(self) -> str:
        parts = [", ".join(self.dtypes)]
        parts.append(f"{'/'.join(map(str, self.ranks))}-D")
        if self.contiguous:
            parts.append("contiguous")
        for dim, sizes in self.fixed_dims:
            parts.append(f"dim {dim} in {{{', '.join(map(str, sizes))}}}")
        for dim, keys in self.dynamic_dims:
            parts.append(f"dim {dim} any size ({', '.join(keys)})")
        text = f"{self.name}: " + ", ".join(parts)
        return text + " (or None)" if self.optional else text


@dataclass(frozen=True)
class ValueRule:
    name: str
    values: tuple[object, ...]  # allowed values (empty when free)
    free: bool = False  # follows a dynamic size: any value

    def describe(self) -> str:
        if self.free:
            return f"{self.name}: any value (follows the dynamic sizes)"
        if len(self.values) == 1:
            return f"{self.name} = {self.values[0]!r}"
        return f"{self.name} in {{{', '.join(repr(v) for v in self.values)}}}"


@dataclass(frozen=True)
class Envelope:
    """What the evaluator proved: device type, per-tensor dtypes / contiguity / fixed and dynamic dims,
    per-scalar values, and the task's dynamic keys. `describe()` gives one line per rule, for the kernel
    module's docstring and the PR body."""

    device_type: str
    tensors: tuple[TensorRule, ...]
    values: tuple[ValueRule, ...]
    dynamic_keys: tuple[str, ...]

    def describe(self) -> list[str]:
        lines = [f"device: {self.device_type}"]
        lines += [rule.describe() for rule in self.tensors]
        lines += [rule.describe() for rule in self.values]
        if self.tensors:
            lines.append("autograd: off (no_grad / inference mode) or no tensor argument requires grad")
        return lines

    def rule(self, name: str) -> TensorRule | ValueRule | None:
        for rule in (*self.tensors, *self.values):
            if rule.name == name:
                return rule
        return None
