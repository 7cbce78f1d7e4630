from __future__ import annotations

import difflib
import textwrap

import libcst as cst
from libcst.codemod import CodemodContext

from kernelbot.integrate.route_to_kernel import KernelCall, RouteToKernelCommand
from tests.kernelbot.integrate.integrate_testing import assert_transform, release_file

MODULE = "pkg.layers.rms_norm_triton"


def route(qualname: str, arguments: tuple[str, ...], **kwargs: object) -> RouteToKernelCommand:
    call = KernelCall(MODULE, "rms_norm_triton", "can_use_rms_norm_triton", arguments, **kwargs)  # type: ignore[arg-type]
    return RouteToKernelCommand(CodemodContext(), qualname, call)


def test_method_gets_a_guarded_call_after_its_docstring() -> None:
    assert_transform(
        route("RMSNorm.forward_native", ("x", "residual", "eps=self.eps"), returns_value=True),
        '''
        import torch


        class RMSNorm:
            @torch.no_grad()
            def forward_native(self, x, residual=None):  # keep me
                """Normalise."""
                # the original path
                return x * self.eps
        ''',
        '''
        import torch
        from pkg.layers.rms_norm_triton import can_use_rms_norm_triton, rms_norm_triton


        class RMSNorm:
            @torch.no_grad()
            def forward_native(self, x, residual=None):  # keep me
                """Normalise."""
                if can_use_rms_norm_triton(x, residual, eps=self.eps):
                    return rms_norm_triton(x, residual, eps=self.eps)
                # the original path
                return x * self.eps
        ''',
    )


def test_in_place_function_and_attribute_writes() -> None:
    assert_transform(
        route("fill", ("a", "b"), returns_value=False),
        """
        def fill(a, b): a.copy_(b)
        """,
        """
        from pkg.layers.rms_norm_triton import can_use_rms_norm_triton, rms_norm_triton

        def fill(a, b):
            if can_use_rms_norm_triton(a, b):
                rms_norm_triton(a, b)
                return
            a.copy_(b)
        """,
    )
    assert_transform(
        route(
            "Backend.update", ("bs", "seq_lens=self.seq_lens"), returns_value=True, assign_to=("self.last",)
        ),
        """
        class Backend:
            def update(self, bs):
                self.last = bs
                return bs
        """,
        """
        from pkg.layers.rms_norm_triton import can_use_rms_norm_triton, rms_norm_triton

        class Backend:
            def update(self, bs):
                if can_use_rms_norm_triton(bs, seq_lens=self.seq_lens):
                    result, self.last = rms_norm_triton(bs, seq_lens=self.seq_lens)
                    return result
                self.last = bs
                return bs
        """,
    )


def test_leaves_other_functions_of_the_same_name_untouched() -> None:
    source = textwrap.dedent(
        """
    class LayerNorm:
        def forward_native(self, x):
            return x


    def forward_native(x):
        def inner(y):
            return y
        return inner(x)
    """
    )
    command = route("RMSNorm.forward_native", ("x",), returns_value=True)
    result = command.transform_module(cst.parse_module(source)).code
    assert command.rewritten == 0
    assert result.endswith(source)  # only the scheduled import is added


def test_real_sglang_rmsnorm_diff_adds_lines_only() -> None:
    original = release_file("sglang==0.5.23", "sglang/srt/layers/layernorm.py")
    arguments = ("x", "residual", "post_residual_addition", "quant_linear", "weight=self.weight")
    command = route("RMSNorm.forward_native", arguments, returns_value=True)
    result = command.transform_module(cst.parse_module(original)).code
    assert command.rewritten == 1
    diff = [ln for ln in difflib.ndiff(original.splitlines(), result.splitlines()) if ln[:1] in "+-"]
    assert all(line.startswith("+ ") for line in diff), diff
    assert len(diff) == 3  # the import, the guard, the call


def test_a_lazy_import_waits_for_the_device_inside_the_function() -> None:
    """No import is added to the module: the kernel's is written inside the function, behind the device
    check, wrapped when it would pass the line length."""
    check = 'x.device.type == "cuda"'
    assert_transform(
        route(
            "RMSNorm.forward",
            ("x", "weight=self.weight"),
            returns_value=True,
            device_check=check,
            line_length=100,
        ),
        '''
        import torch


        class RMSNorm:
            def forward(self, x):
                """forward."""
                return x * self.weight
        ''',
        '''
        import torch


        class RMSNorm:
            def forward(self, x):
                """forward."""
                if x.device.type == "cuda":
                    from pkg.layers.rms_norm_triton import can_use_rms_norm_triton, rms_norm_triton

                    if can_use_rms_norm_triton(x, weight=self.weight):
                        return rms_norm_triton(x, weight=self.weight)
                return x * self.weight
        ''',
    )
    assert_transform(
        route("f", ("a",), returns_value=False, device_check=check.replace("x", "a"), line_length=60),
        """
        def f(a):
            a.zero_()
        """,
        """
        def f(a):
            if a.device.type == "cuda":
                from pkg.layers.rms_norm_triton import (
                    can_use_rms_norm_triton,
                    rms_norm_triton,
                )

                if can_use_rms_norm_triton(a):
                    rms_norm_triton(a)
                    return
            a.zero_()
        """,
    )


def test_a_lazy_import_waits_on_a_tensor_of_the_kernel_device_never_a_host_one() -> None:
    """`seq_lens_cpu` stays on the CPU when the kernel runs: the check before the import reads another
    tensor, here the optional one that is not None."""
    from kernelbot.integrate.envelope import Envelope, TensorRule
    from kernelbot.integrate.route_to_kernel import device_check

    def rule(name: str, optional: bool, host: bool) -> TensorRule:
        return TensorRule(name, ("int32",), (1,), (), (), True, optional, host=host)

    envelope = Envelope("cuda", (rule("seq_lens_cpu", False, True), rule("page_table", True, False)), (), ())
    call = KernelCall("pkg.k", "k_triton", "can_use_k_triton", ("seq_lens_cpu", "page_table"), False)
    assert device_check(envelope, call) == 'page_table is not None and page_table.device.type == "cuda"'
