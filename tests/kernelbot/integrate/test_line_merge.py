from __future__ import annotations

from kernelbot.integrate.line_merge import merge_formatted

# An upstream file whose import block the formatter would fold, and an edit further down.
ORIGINAL = "from a import (\n    b,\n)\n\n\ndef f(x):\n    return x\n"
FORMATTED = "from a import b\n\n\ndef f(x):\n    return x\n"


def test_keeps_untouched_lines_as_upstream_wrote_them() -> None:
    edited_formatted = (
        "from a import b\nfrom k import kern\n\n\n"
        "def f(x):\n    if kern(x):\n        return kern(x)\n    return x\n"
    )
    merged = merge_formatted(ORIGINAL, FORMATTED, edited_formatted)
    assert merged == (
        "from a import (\n    b,\n)\nfrom k import kern\n\n\n"
        "def f(x):\n    if kern(x):\n        return kern(x)\n    return x\n"
    )


def test_clean_upstream_gives_the_formatted_edit() -> None:
    edited = "from a import b\n\n\ndef f(x):\n    return x + 1\n"
    assert merge_formatted(FORMATTED, FORMATTED, edited) == edited


def test_no_edit_leaves_the_file_untouched() -> None:
    assert merge_formatted(ORIGINAL, FORMATTED, FORMATTED) == ORIGINAL


def test_an_edit_inside_the_lines_the_formatter_changes_gives_up() -> None:
    assert merge_formatted(ORIGINAL, FORMATTED, "from a import b, c\n\n\ndef f(x):\n    return x\n") is None
