"""The envelope: the arguments a kernel was proved correct on, as rules per parameter of the entry. The guard
the codemod writes sends a call to the kernel only inside it; anything else takes the original PyTorch path.

Rules come from the task's cases (kernelbot.integrate.derive_envelope) and state what the kernel needs, never
the sizes it happened to be checked at: a tensor's device, dtypes, rank and contiguity, and that its element
count fits the int32 offsets a Triton kernel computes; a number's type (sizes and float parameters reach the
kernel at run time); the values of switches (booleans, strings, None) that choose a code path.
"""

from __future__ import annotations

from dataclasses import dataclass

# Triton computes offsets from program ids and `tl.arange` in int32: a tensor of 2**31 elements or more would
# overflow them, whatever the kernel's block sizes.
INT32_ELEMENTS = 2**31


@dataclass(frozen=True)
class TensorRule:
    name: str
    dtypes: tuple[str, ...]  # "bfloat16", ...
    ranks: tuple[int, ...]
    # (dim, sizes the cases had) for dims no size key moved: what was checked, not a condition of the guard
    fixed_dims: tuple[tuple[int, tuple[int, ...]], ...]
    dynamic_dims: tuple[tuple[int, tuple[str, ...]], ...]  # (dim, the size keys that move it)
    contiguous: bool  # every case's tensor was contiguous: the guard requires it
    optional: bool  # some cases passed None instead
    # The task keeps it on the CPU whatever the device (an input spec's `seq_lens.cpu()`), as the engine
    # does: host code reads it, no kernel does, and the guard asks for a CPU tensor.
    host: bool = False

    def describe(self) -> str:
        parts = [", ".join(self.dtypes)]
        parts.append(f"{'/'.join(map(str, self.ranks))}-D")
        if self.contiguous:
            parts.append("contiguous")
        parts.append("fewer than 2**31 elements")
        if self.host:
            parts.append("on the CPU")
        text = f"{self.name}: " + ", ".join(parts)
        return text + " (or None)" if self.optional else text


@dataclass(frozen=True)
class ValueRule:
    name: str
    values: tuple[object, ...]  # allowed values (empty when free)
    free: bool = False  # a size or a float parameter: any value of its type
    kind: str = ""  # free rules: "int" (a size) or "float" (a float parameter; ints pass too)

    def describe(self) -> str:
        if self.free:
            return f"{self.name}: any {self.kind or 'value'}"
        if len(self.values) == 1:
            return f"{self.name} = {self.values[0]!r}"
        return f"{self.name} in {{{', '.join(repr(v) for v in self.values)}}}"


@dataclass(frozen=True)
class SameSize:
    """A size two tensors shared in every case, and in every case built with a size moved: the kernel
    indexes both with it (a residual shaped as its input, a weight as long as a row). `dim` None: the whole
    shape. `optional`: `name` may be None (the call passes no such tensor); `other` is always a tensor."""

    name: str
    other: str
    dim: int | None = None
    other_dim: int | None = None
    optional: bool = False

    def condition(self) -> str:
        if self.dim is None:
            text = f"{self.name}.shape == {self.other}.shape"
        else:
            text = f"{self.name}.shape[{self.dim}] == {self.other}.shape[{self.other_dim}]"
        return f"({self.name} is None or {text})" if self.optional else text


@dataclass(frozen=True)
class Envelope:
    """What the evaluator proved: device type, per-tensor dtypes / contiguity / fixed and dynamic dims,
    per-scalar values, and the task's dynamic keys. `describe()` gives one line per rule, for the kernel
    module's docstring and the PR body."""

    device_type: str
    tensors: tuple[TensorRule, ...]
    values: tuple[ValueRule, ...]
    dynamic_keys: tuple[str, ...]
    # Activation dtypes the engine serves that no case was built in: refused by the guard, said in words.
    unchecked_dtypes: tuple[str, ...] = ()
    same_sizes: tuple[SameSize, ...] = ()  # sizes tensors share: the guard asks for them, not for values

    def describe(self) -> list[str]:
        lines = [f"device: {self.device_type}"]
        lines += [rule.describe() for rule in self.tensors]
        lines += [rule.describe() for rule in self.values]
        if self.same_sizes:
            lines.append("sizes shared: " + ", ".join(link.condition() for link in self.same_sizes))
        if self.tensors:
            lines.append("autograd: off (no_grad / inference mode) or no tensor argument requires grad")
        if self.unchecked_dtypes:
            it = "it" if len(self.unchecked_dtypes) == 1 else "them"
            dtypes = ", ".join(self.unchecked_dtypes)
            lines.append(f"not in {dtypes}: the engine serves {it}, but no case checked the kernel in {it}")
        return lines

    def rule(self, name: str) -> TensorRule | ValueRule | None:
        rules: tuple[TensorRule | ValueRule, ...] = (*self.tensors, *self.values)
        for rule in rules:
            if rule.name == name:
                return rule
        return None
