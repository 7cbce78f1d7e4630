"""Sizes the host reads from tensor values: an unbacked symbol (`u0`) that the graph defines by reading a
0-d tensor into a Python int (`int(seq_lens_cpu[:bs].max())`, `.item()`), or that a slice with such a bound
gives its extent. The host computes each as the reference does, from the ops the graph ran on the tensor
(host torch code: a kernel never computes what the host reads), and the kernel takes it as a run-time size.

A host value the reference names (`max_seq_len_k = int(seq_lens_cpu[:bs].max()) + seq_len_delta`) becomes
the symbol itself: the graph's expressions are rewritten over it (`s2 + u0` -> `u0`), so the host binds the
reference's variable once and every size over it reads that name.
"""

from __future__ import annotations

import re
from typing import Any

_ITEM = "aten._local_scalar_dense.default"
_VIEWS = ("aten.slice.Tensor", "aten.unsqueeze.default", "aten.squeeze.dim", "aten.view.default")
_SYMBOL = re.compile(r"\bu\d+\b")
_ASSERT = "aten._assert_scalar.default"


def unbacked_symbol(value: Any) -> str | None:
    """The name of the unbacked symbol a SymInt is (`u0`), else None."""
    import sympy

    expr = getattr(getattr(value, "node", None), "expr", None)
    if isinstance(expr, sympy.Symbol) and expr.name.startswith("u"):
        return expr.name
    return None


def is_host_node(target: str) -> bool:
    """A node that reads a tensor's value to the host or asserts a fact about a host value."""
    return target in (_ITEM, _ASSERT)


class HostValues:
    """The unbacked symbols of one graph and the host code of each, gathered over its nodes in order."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources  # placeholder name -> host expression
        self.reads: dict[str, str] = {}  # symbol -> the node whose value it reads
        self.nodes: dict[str, dict[str, Any]] = {}  # encoded nodes by name
        self.placeholder_shapes: dict[str, list[str]] = {}
        self.kinds: dict[str, str] = {}  # symbol -> int | float
        self.extents: dict[str, tuple[str, list[Any]]] = {}  # symbol -> (size sliced, slice bounds)
        self.named: dict[str, Any] = {}  # symbol -> what the reference adds to the read to name it
        self.bounds: dict[str, Any] = {}  # symbol -> the named expression over host values it stands for
        self.roots: dict[str, str] = {}  # extent symbol -> the argument whose view the slice cuts

    def item(self, symbol: str, read: str, kind: str) -> None:
        self.reads[symbol] = read
        self.kinds[symbol] = kind

    def host_codes(self) -> dict[str, str]:
        """Symbol -> host code, each after the symbols its code reads."""
        codes: dict[str, str] = {}
        for symbol in sorted({*self.reads, *self.extents, *self.bounds}, key=lambda s: int(s[1:])):
            if symbol in self.reads:
                code = f"{self.kinds[symbol]}({self._code({'node': self.reads[symbol]})})"
                rest = self.named.get(symbol)
                if rest is not None:
                    negative = str(rest).startswith("-")
                    code += f" - {_python(str(-rest))}" if negative else f" + {_python(str(rest))}"
            elif symbol in self.bounds:
                code = _python(str(self.bounds[symbol]))
            else:
                size, bounds = self.extents[symbol]
                code = f"len(range({_python(size)}){self._slice(bounds)})"
            codes[symbol] = code
        ordered: dict[str, str] = {}
        while len(ordered) < len(codes):
            ready = [
                s
                for s in codes
                if s not in ordered and all(d in ordered or d not in codes for d in _SYMBOL.findall(codes[s]))
            ]
            for symbol in ready or [s for s in codes if s not in ordered]:
                ordered[symbol] = codes[symbol]
        return ordered

    def name_bounds(self, size_names: dict[str, str]) -> dict[str, str]:
        """A named size over host values that is no symbol (`max_seq_pages = ceil_div(max_seq_len_k,
        page_size)`, a slice bound) made a symbol of its own, which the host binds under that name; returns
        the expression -> symbol to substitute."""
        from evolution.writers.fusion import symbols

        mapping: dict[str, str] = {}
        taken = {*self.reads, *self.extents}
        count = max(int(s[1:]) for s in taken) + 1 if taken else 0
        for text in size_names:
            expr = symbols.parse(text)
            if expr.is_Symbol or not any(s.name.startswith("u") for s in expr.free_symbols):
                continue
            symbol = f"u{count}"
            count += 1
            self.bounds[symbol] = expr
            mapping[text] = symbol
        return mapping

    def extent_names(self, size_names: dict[str, str]) -> dict[str, str]:
        """A name for each slice extent bounded by a named size (`page_table[:, :max_seq_pages]`:
        `page_table_max_seq_pages`)."""
        found: dict[str, str] = {}
        for symbol, (_, bounds) in self.extents.items():
            end = bounds[1] if len(bounds) > 1 else None
            if bounds[0] not in (0, None) or (len(bounds) > 2 and bounds[2] not in (1, None)):
                continue
            bound = size_names.get(str(end["sym"])) if isinstance(end, dict) and "sym" in end else None
            root = self.roots.get(symbol, "")
            if bound and root.isidentifier():
                found[symbol] = f"{root}_{bound}"
        return found

    def name_values(self, size_names: dict[str, str]) -> dict[str, str]:
        """Make a read plus sizes the reference binds to a name (`max_seq_len_k = int(..) + seq_len_delta`,
        `s2 + u0`) the symbol itself; returns the symbol -> expression to substitute."""
        from evolution.writers.fusion import symbols

        mapping: dict[str, str] = {}
        for text in size_names:
            expr = symbols.parse(text)
            for symbol in self.reads:
                u = next((s for s in expr.free_symbols if s.name == symbol), None)
                rest = expr - u if u is not None else None
                if rest is None or any(s.name.startswith("u") for s in rest.free_symbols):
                    continue
                if symbol not in self.named and rest != 0:
                    self.named[symbol] = rest
                    mapping[symbol] = str(u - rest)
        return mapping

    def node(self, encoded: dict[str, Any]) -> None:
        """Record an encoded node; an unbacked extent its output introduces (a slice with a bound over a
        host value) is the length of that slice."""
        self.nodes[encoded["name"]] = encoded
        if encoded["target"] != "aten.slice.Tensor" or not encoded["outputs"]:
            return
        args = encoded["args"]
        dim = int(args[1]) if len(args) > 1 else 0
        extent = encoded["outputs"][0]["shape"][dim]
        if not (extent.startswith("u") and extent[1:].isdigit()) or extent in self.extents:
            return
        source = args[0]
        shape = self._shape(source)
        if shape is None:
            return
        self.extents[extent] = (shape[dim], args[2:5])
        self.roots[extent] = self._root(source)

    def host_only(self, kept: list[dict[str, Any]], outputs: Any, mutations: list[Any]) -> set[str]:
        """The nodes only the host reads: those an item reads and what they read, less what a kernel node,
        an output or a written input also reads."""
        host: set[str] = set()
        pending = list(self.reads.values())
        while pending:
            name = pending.pop()
            if name in host or name not in self.nodes:
                continue
            host.add(name)
            refs: set[str] = set()
            _refs(self.nodes[name]["args"], refs)
            pending += list(refs)
        return host - _used_by_kernel(kept, host, outputs, mutations, self.nodes)

    def _root(self, ref: Any) -> str:
        """The argument a chain of views (slices, unsqueezes) starts from, else ""."""
        while isinstance(ref, dict) and "node" in ref:
            if ref["node"] in self.sources:
                return self.sources[ref["node"]]
            node = self.nodes.get(ref["node"])
            if node is None or node["target"] not in _VIEWS:
                return ""
            ref = node["args"][0]
        return ""

    def _shape(self, ref: Any) -> list[str] | None:
        if not isinstance(ref, dict) or "node" not in ref:
            return None
        node = self.nodes.get(ref["node"])
        if node is not None:
            return node["outputs"][0]["shape"] if node["outputs"] else None
        return self.placeholder_shapes.get(ref["node"])

    def _slice(self, bounds: list[Any]) -> str:
        start = bounds[0] if bounds else 0
        end = bounds[1] if len(bounds) > 1 else None
        step = bounds[2] if len(bounds) > 2 else 1
        text = (_arg(start) if start not in (0, None) else "") + ":"
        text += _arg(end) if end is not None and end != 9223372036854775807 else ""
        text += f":{_arg(step)}" if step not in (1, None) else ""
        return f"[{text}]"

    def _code(self, ref: Any) -> str:
        """Host torch code for an encoded value."""
        import torch

        if not (isinstance(ref, dict) and "node" in ref):
            return _arg(ref)
        name = ref["node"]
        if name in self.sources:
            return self.sources[name]
        node = self.nodes[name]
        target, args = node["target"], node["args"]
        if target == "aten.slice.Tensor":
            dim = int(args[1]) if len(args) > 1 else 0
            return f"{self._code(args[0])}[{':, ' * dim}{self._slice(args[2:5])[1:-1]}]"
        op = target.removeprefix("aten.")
        rest = [self._code(a) for a in args[1:]] + [f"{k}={self._code(v)}" for k, v in node["kwargs"].items()]
        if args and hasattr(torch.Tensor, op.split(".")[0]):  # the tensor method of the op (`x.gt(0)`)
            return f"{self._code(args[0])}.{op.split('.')[0]}({', '.join(rest)})"
        return f"torch.ops.aten.{op}({', '.join([self._code(a) for a in args[:1]] + rest)})"


def _used_by_kernel(
    kept: list[dict[str, Any]], host: set[str], outputs: Any, mutations: list[Any], nodes: dict
) -> set[str]:
    """Of the host nodes, those a kernel node, an output or a written input reads (directly or through
    other nodes)."""
    used: set[str] = set()
    _refs([outputs, mutations], used)
    for node in kept:
        if node["name"] not in host:
            _refs(node["args"], used)
            _refs(node["kwargs"], used)
    pending = [n for n in used if n in host]
    found: set[str] = set()
    while pending:
        name = pending.pop()
        if name in found:
            continue
        found.add(name)
        refs: set[str] = set()
        _refs(nodes[name]["args"], refs)
        pending += [r for r in refs if r in host]
    return found


def _refs(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        if "node" in value:
            found.add(value["node"])
        for v in value.values():
            _refs(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _refs(v, found)


def _python(text: str) -> str:
    from evolution.writers.fusion import symbols

    expr = symbols.parse(text)
    return symbols.python(expr, {s: s for s in symbols.symbols_of(expr)})


def _arg(value: Any) -> str:
    if isinstance(value, dict) and "sym" in value:
        return _python(str(value["sym"]))
    if isinstance(value, dict) and "dtype" in value:
        return f"torch.{value['dtype']}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_arg(v) for v in value) + "]"
    return repr(value)
