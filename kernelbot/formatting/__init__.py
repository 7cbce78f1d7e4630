"""The target repository's formatters: which ones a work tree asks for and running them at pinned versions.

    tools      run each pinned `tool==version` from its own virtual environment on the files given
               (format_files, run_tool, tool_venv, TOOLS, FormatterError)
    tree       the formatter a work tree asks for: its pre-commit pins, else the profile's
               (formatter_for_tree)
    precommit  what a `.pre-commit-config.yaml` says: its hooks, pins, arguments and files (read_config)

`tools`' names are importable from the package itself, where callers have always found them.
"""

from kernelbot.formatting.tools import (
    TOOLS,
    FormatOutcome,
    FormatterError,
    ensure_tool,
    format_files,
    run_tool,
    tool_venv,
    tools_dir,
)

__all__ = [
    "TOOLS",
    "FormatOutcome",
    "FormatterError",
    "ensure_tool",
    "format_files",
    "run_tool",
    "tool_venv",
    "tools_dir",
]
