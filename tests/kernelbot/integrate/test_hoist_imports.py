"""The imports a crossover leaves below the first parent's code join the module's import block, one `from`
line per module; imports a function, a branch or a later binding means where they are stay."""

from __future__ import annotations

import textwrap

import libcst as cst

from kernelbot.integrate.hoist_imports import hoisted_imports
from kernelbot.integrate.kernel_module import _without_unused_imports


def hoisted(source: str) -> str:
    return hoisted_imports(cst.parse_module(textwrap.dedent(source))).code


# A bucket crossover as build_child writes it (its markers stripped): the second parent's typing names one
# a line, at the start of that parent's code; the first parent imports lazily in a function.
CROSSOVER = '''
    """RMSNorm kernels."""

    from __future__ import annotations

    import torch


    def _rms_norm_large(x):
        import math

        return x * math.sqrt(2)


    # --- bucket crossover: candidate B's code, its module-level names suffixed ---
    from typing import Optional
    from typing import Tuple
    # Launch parameters, one set per kernel.
    K0_XBLOCK_small = 1


    def _rms_norm_small(x: torch.Tensor, residual: Optional[torch.Tensor]) -> Tuple[torch.Tensor, ...]:
        return (x, residual)
    '''


def test_a_crossovers_late_imports_join_the_block_as_one_line() -> None:
    assert hoisted(CROSSOVER) == textwrap.dedent(
        '''
        """RMSNorm kernels."""

        from __future__ import annotations

        import torch
        from typing import Optional, Tuple


        def _rms_norm_large(x):
            import math

            return x * math.sqrt(2)


        # --- bucket crossover: candidate B's code, its module-level names suffixed ---
        # Launch parameters, one set per kernel.
        K0_XBLOCK_small = 1


        def _rms_norm_small(x: torch.Tensor, residual: Optional[torch.Tensor]) -> Tuple[torch.Tensor, ...]:
            return (x, residual)
        '''
    )


def test_every_module_level_import_is_above_the_first_other_statement() -> None:
    module = hoisted_imports(cst.parse_module(textwrap.dedent(CROSSOVER)))
    kinds = [_is_import(s) for s in module.body[1:]]  # after the docstring
    assert kinds == sorted(kinds, reverse=True)  # imports, then the rest
    assert module.code.count("from typing import") == 1
    assert "\n    import math\n" in module.code  # a function's import stays in it


def test_a_late_future_import_goes_first_and_a_repeated_import_goes() -> None:
    source = """
        import torch
        import triton
        x = 1
        import torch
        from __future__ import annotations
        from triton import language as tl, language as tl
        """
    assert hoisted(source) == textwrap.dedent(
        """
        from __future__ import annotations
        import torch
        import triton
        from triton import language as tl
        x = 1
        """
    )


def test_imports_meant_where_they_are_stay() -> None:
    """Under `if`/`try` (guarded), a name the module also binds (the later binding must keep winning), a
    star import (its names are unknown here)."""
    source = """
        import torch

        def Tensor():
            pass

        if torch.cuda.is_available():
            import triton
        try:
            import numpy
        except ImportError:
            numpy = None
        from torch import Tensor
        from math import *
        """
    assert hoisted(source) == textwrap.dedent(source)


def test_a_commented_import_line_moves_as_it_is() -> None:
    """`# noqa` or `# type: ignore` says something about that import: it is neither merged nor re-worded."""
    source = """
        from typing import Optional
        x = 1
        from typing import Tuple  # noqa: E402
        """
    assert hoisted(source) == textwrap.dedent(
        """
        from typing import Optional
        from typing import Tuple  # noqa: E402
        x = 1
        """
    )


def test_a_module_with_its_imports_at_the_top_is_unchanged() -> None:
    source = textwrap.dedent(
        """
        from __future__ import annotations

        import torch
        from typing import Optional as Opt, Tuple


        def f(x: Opt[torch.Tensor]) -> Tuple[int]:
            return (1,)
        """
    )
    module = cst.parse_module(source)
    assert hoisted_imports(module).code == source


def test_the_merged_line_still_loses_the_names_nothing_reads() -> None:
    """build_kernel_module drops the imports only a flattened-away route used: one name of a merged line
    goes, the rest of the line stays."""
    source = textwrap.dedent(CROSSOVER).replace(" -> Tuple[torch.Tensor, ...]", "")
    code = _without_unused_imports(hoisted_imports(cst.parse_module(source))).code
    assert "\nfrom typing import Optional\n" in code and "Tuple" not in code


def _is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )
