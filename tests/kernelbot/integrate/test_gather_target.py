from __future__ import annotations

import textwrap

import libcst as cst

from kernelbot.integrate.gather_target import GatherTargetVisitor, Target, runs_compiled
from tests.kernelbot.integrate.integrate_testing import release_file

SOURCE = textwrap.dedent(
    """
    import torch
    import triton


    class Layer:
        \"\"\"A layer.\"\"\"

        def forward(self, x):
            def helper(y):
                return y

            return helper(x)

        @staticmethod
        def static(x):
            print(x)

        async def later(self, x):
            return x

        def stream(self, x):
            yield x

        @torch.jit.script
        def scripted(self, x):
            return x


    @triton.jit
    def kernel(x_ptr):
        pass
    """
)


def gather(qualname: str, source: str = SOURCE) -> list[Target]:
    visitor = GatherTargetVisitor(qualname)
    cst.parse_module(source).visit(visitor)
    return visitor.found


def test_collects_a_method_and_what_the_rewrite_needs() -> None:
    [target] = gather("Layer.forward")
    assert target.is_method and not target.is_static and target.returns_value and not target.refusals
    assert target.owner is not None and target.owner.get_docstring() == "A layer."
    [static] = gather("Layer.static")
    assert static.is_static and not static.is_method and not static.returns_value


def test_refuses_what_cannot_be_rewritten() -> None:
    assert "async" in gather("Layer.later")[0].refusals[0]
    assert "generator" in gather("Layer.stream")[0].refusals[0]
    assert "TorchScript" in gather("Layer.scripted")[0].refusals[0]
    assert "Triton kernel already" in gather("kernel")[0].refusals[0]


def test_finds_nothing_for_nested_or_missing_names() -> None:
    assert gather("helper") == [] and gather("Layer.forward.helper") == [] and gather("Other.forward") == []


def test_real_sglang_layernorm() -> None:
    source = release_file("sglang==0.5.23", "sglang/srt/layers/layernorm.py")
    [target] = gather("RMSNorm.forward_native", source)
    assert target.is_method and target.returns_value and not target.refusals
    assert [p.name.value for p in target.node.params.params][:2] == ["self", "x"]


def test_a_function_under_torch_compile_is_said_to_be_compiled() -> None:
    source = textwrap.dedent(
        """
        @torch.compile(dynamic=True, backend=get_compiler_backend())
        def apply_scaling_penalties(logits, scaling_penalties):
            logits[:] = logits * scaling_penalties

        def plain(x):
            return x
        """
    )
    [compiled] = gather("apply_scaling_penalties", source)
    [plain] = gather("plain", source)
    assert compiled.compiled and compiled.decorators == ("torch.compile",)
    assert not plain.compiled and not compiled.refusals
    # What the confirmation asks before it times the kernel (compiled where the engine compiles it).
    assert runs_compiled(source, "apply_scaling_penalties") and not runs_compiled(source, "plain")
    assert not runs_compiled(source, "missing") and not runs_compiled("def (:", "plain")
