"""Source text of the values the emitter writes: literals of each dtype, and the checks and parentheses
that decide whether code can be used as an operand as it is (a name or a literal needs no binding).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Collection, Iterator

from evolution.writers.fusion.blocks import BLOCK_PREFIX


def literal(value: float | int | bool, dtype: str) -> str:
    if dtype == "i1":
        return "1" if value else "0"
    if dtype in ("fp32", "fp64"):
        number = float(value)
        if number != number:
            return "float('nan')"
        if number in (float("inf"), float("-inf")):
            return "float('inf')" if number > 0 else "float('-inf')"
        return repr(number)
    return str(int(value))


def literal_value(code: str) -> float | int:
    text = code.strip("()")
    if "float(" in text:
        return float(text.replace("float(", "").rstrip(")").strip("'"))
    return float(text) if any(c in text for c in ".einf") else int(text)


def is_literal(code: str) -> bool:
    return bool(re.fullmatch(r"\(?-?[\d.]+(e[-+]?\d+)?\)?|float\('-?(inf|nan)'\)", code))


def is_simple(code: str) -> bool:
    return code.isidentifier() or is_literal(code)


def wrapped(code: str) -> str:
    if code.isidentifier() or (code.startswith("(") and code.endswith(")") and _balanced(code[1:-1])):
        return code
    return f"({code})"


def unwrapped(code: str) -> str:
    """`code` without parentheses around the whole of it (an argument needs none); `(a) * (b)` stays."""
    if code.startswith("(") and code.endswith(")") and _balanced(code[1:-1]):
        return code[1:-1]
    return code


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


_CLOSER = {"(": ")", "[": "]", "{": "}"}


def _outside_strings(text: str) -> Iterator[tuple[int, str]]:
    """Each character of `text` outside its string literals (quotes included), with its index."""
    quote = ""
    for k, char in enumerate(text):
        if quote:
            quote = "" if char == quote and text[k - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        else:
            yield k, char


def _split_top_level(text: str, separator: str = ",") -> list[str]:
    """`text` split at each `separator` outside brackets and strings."""
    parts, depth, start = [], 0, 0
    for k, char in _outside_strings(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and k >= start and text.startswith(separator, k):
            parts.append(text[start:k].strip())
            start = k + len(separator)
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _wrap(line: str, limit: int) -> list[str]:
    """One statement longer than `limit` broken after the opening bracket whose group runs to its end: its
    contents on one line of their own where they fit, else one item a line (as black and ruff write it);
    an assignment of an operator's result has its value put in parentheses instead where that split would
    leave its head too long, open a subscript (`offs[` / `None, :` / `]`) or follow two top-level `+`
    (as black and ruff do), broken before each top-level `+` where it does not fit; else the line itself."""
    lines = _wrap_at_bracket(line, limit)
    assign = _ASSIGN.match(line)
    if any(char == "#" for _, char in _outside_strings(line)):
        # A trailing comment: the line is left as it is (fit_comments moves a long one above its line;
        # in parentheses with the value it would read as part of the value's layout).
        return lines
    if assign is None or _open_brackets(line) != 0 or len(_split_top_level(assign[3], " ")) < 2:
        # not a whole assignment (a line an earlier wrap left open), or a call's or a subscript's value
        return lines
    indent, target, value = assign.groups()
    terms = _split_top_level(value, " + ")
    if len(lines) > 1 and len(lines[0]) <= limit and not lines[0].endswith("[") and len(terms) < 3:
        return lines
    if len(indent) + 4 + len(value) <= limit:
        return [f"{indent}{target} = (", f"{indent}    {value}", f"{indent})"]
    if len(terms) < 2:
        return lines
    body = [f"{indent}    {terms[0]}", *(f"{indent}    + {term}" for term in terms[1:])]
    return [f"{indent}{target} = (", *body, f"{indent})"]


def _wrap_at_bracket(line: str, limit: int) -> list[str]:
    indent = line[: len(line) - len(line.lstrip())]
    depth, opened = 0, -1
    for k, char in _outside_strings(line):
        if char == "#":
            return [line]  # a comment: left as it is
        elif char in "([{":
            if depth == 0:
                opened = k
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0 and opened >= 0:
                tail = line[k + 1 :]
                if tail.strip() in ("", ":", ","):
                    items = _split_top_level(line[opened + 1 : k])
                    if len(items) < 2 and not (items and len(indent) + 4 + len(items[0]) < len(line)):
                        return [line]
                    head = [line[: opened + 1]]
                    inside = ", ".join(items)
                    if len(indent) + 4 + len(inside) <= limit:  # the contents fit on one line of their own
                        return [*head, f"{indent}    {inside}", f"{indent}{line[k]}{tail}"]
                    body = [f"{indent}    {item}," for item in items]
                    inner = [part for b in body for part in (_wrap(b, limit) if len(b) > limit else [b])]
                    return [*head, *inner, f"{indent}{line[k]}{tail}"]
                opened = -1
    return [line]


def _open_brackets(line: str) -> int:
    """How many brackets `line` leaves open (negative: closes), outside strings and comments."""
    depth = 0
    for _, char in _outside_strings(line):
        if char == "#":
            break
        depth += (char in "([{") - (char in ")]}")
    return depth


def wrap_long_lines(source: str, limit: int) -> str:
    """`source` with every code line over `limit` characters broken at its brackets (docstrings and
    comments are written within the limit where they are made)."""
    out: list[str] = []
    in_string = False
    inside = 0  # brackets earlier lines left open: a line of items there is broken one item a line
    for line in source.split("\n"):
        quotes = line.count('"""') + line.count("'''")
        if not in_string and len(line) > limit and quotes == 0:
            wrapped = _wrap(line, limit)
            items = _split_top_level(line.strip()[:-1]) if line.rstrip().endswith(",") else []
            if wrapped == [line] and inside > 0 and _open_brackets(line) == 0 and len(items) > 1:
                indent = line[: len(line) - len(line.lstrip())]
                wrapped = [f"{indent}{item}," for item in items]
            out.extend(wrapped)
        else:
            out.append(line)
        if quotes % 2 == 1:
            in_string = not in_string
        elif not in_string and quotes == 0:
            inside = max(inside + _open_brackets(line), 0)
    return "\n".join(out)


def fit_docstrings(source: str, limit: int) -> str:
    """`source` with each function docstring that has a line over `limit` characters filled again within
    it (the building blocks' docstrings are written for the widest engine)."""
    lines = source.split("\n")
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and ast.get_docstring(node, clean=False) is not None:
            doc = node.body[0]
            start, end = doc.lineno - 1, doc.end_lineno or doc.lineno
            if any(len(line) > limit for line in lines[start:end]):
                spans.append((start, end, doc.col_offset, ast.get_docstring(node) or ""))
    for start, end, column, text in sorted(spans, reverse=True):
        indent = " " * column
        filled = textwrap.fill(
            " ".join(text.split()), limit - 3, initial_indent=f'{indent}"""', subsequent_indent=indent
        )
        lines[start:end] = f'{filled}"""'.split("\n")
    return "\n".join(lines)


_ASSIGN = re.compile(r"^(\s*)([A-Za-z_]\w*) = (.+)$")
_VARIABLE = re.compile(r"(?<![.\w])[A-Za-z_]\w*\b(?!=[^=])")  # see _variable
# Never moved: memory, building blocks, tiles the schedule placed, and the program's index (`row`).
_NOT_INLINED = (
    "tl.load",
    "tl.store",
    "tl.atomic",
    BLOCK_PREFIX,
    "tl.arange",
    "tl.full",
    "tl.zeros",
    "tl.program_id",
)


def inline_single_use(
    text: str,
    limit: int,
    longest: int = 60,
    named: Collection[str] | None = None,
    call_margin: int = 0,
    only: re.Pattern[str] | None = None,
) -> str:
    """A kernel's temporaries read once, at the same indentation, inlined into their reader when it stays
    within `limit` characters: an engine's kernel writes `x_ptr + row * stride + cols` and
    `x * tl.rsqrt(variance + eps)` as one expression. `named`: the values whose names say what they hold
    (the reference's own names), kept; every other value read once is inlined. None: only address
    arithmetic (offsets, strides) is. Loads, block calls and aranges are never moved, nor anything past a
    statement that assigns a name it reads, nor into a loop; parentheses only where precedence needs them.
    `call_margin`: room kept on a line that calls a building block, whose name a crossover may lengthen.
    `only`: the names that may be inlined, all others kept (Inductor's numbered temporaries in a module
    that also holds the fusion writer's kernels, already laid out)."""
    lines = text.split("\n")
    changed = True
    while changed:
        changed = False
        counts: dict[str, int] = {}
        for line in lines:
            for word in _VARIABLE.findall(line.split("#", 1)[0]):
                counts[word] = counts.get(word, 0) + 1
        for i, line in enumerate(lines):
            match = _ASSIGN.match(line)
            if match is None or counts.get(match.group(2)) != 2:
                continue
            indent, name, expr = match.groups()
            address = "offs" in name or "stride" in expr
            if only is not None and not only.fullmatch(name):
                continue
            if only is None and not address and (named is None or name in named):
                continue  # a value whose name says what it holds keeps it
            if len(expr) > longest or any(marker in expr for marker in _NOT_INLINED):
                continue
            reads = set(_VARIABLE.findall(expr))
            use = _single_use(lines, i, indent, name, reads)
            if use is None:
                continue
            new = _substituted(lines[use], name, expr)
            if new is None or len(new) + (call_margin if BLOCK_PREFIX in new else 0) > limit:
                continue
            lines[use] = new
            del lines[i]
            changed = True
            break
    return "\n".join(lines)


def _substituted(line: str, name: str, expr: str) -> str | None:
    """`line` reading `expr` where it read `name`, in parentheses only where the statement would otherwise
    mean something else; None when `line` is not one whole statement (nothing then is moved into it)."""
    pattern = _variable(name)
    bare = pattern.sub(lambda _: expr, line)
    enclosed = pattern.sub(lambda _: wrapped(expr), line)
    meant = _statement_tree(enclosed)
    if meant is None:
        return None
    return bare if _statement_tree(bare) == meant else enclosed


def _statement(line: str) -> ast.Module | None:
    """The one statement on `line` parsed (an `if` header with an empty body), or None."""
    code = line.strip()
    if code.endswith(":"):  # an `if` header: its body is the next line's
        code += " pass"
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _statement_tree(line: str) -> str | None:
    tree = _statement(line)
    return None if tree is None else ast.dump(tree)


def _single_use(lines: list[str], i: int, indent: str, name: str, reads: set[str]) -> int | None:
    """The line after `i` that reads `name`, when it is at `indent` and nothing in between (at any depth)
    assigns a name the expression reads or closes the block `i` is in."""
    pattern = _variable(name)
    for j in range(i + 1, len(lines)):
        line = lines[j]
        if line.lstrip().startswith("#"):
            continue  # a comment that names the value reads nothing
        if line.strip() and len(line) - len(line.lstrip()) < len(indent):
            return None  # the block ended first
        if pattern.search(line):
            same = len(line) - len(line.lstrip()) == len(indent)
            return j if same and not line.lstrip().startswith(("for ", "while ")) else None
        if _assigned(line) & reads:
            return None
    return None


def _variable(name: str) -> re.Pattern[str]:
    """`name` read or bound as a variable: not an attribute (`tl.rsqrt`), not a keyword argument (`mask=`)."""
    return re.compile(rf"(?<![.\w]){re.escape(name)}\b(?!=[^=])")


def _assigned(line: str) -> set[str]:
    """The names the statement on `line` binds (`a = ...`, `a += ...`, a `for` target); a line that is
    not one whole statement binds what stands left of its first `=`."""
    tree = _statement(line)
    if tree is None:
        return set(_VARIABLE.findall(line.split("=", 1)[0])) if "=" in line else set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def without_redundant_parentheses(text: str) -> str:
    """`text` with the grouping parentheses no statement needs (`tl.where(mask, (x * x), 0.0)`,
    `(row * N) + cols`) taken out: the emitter wraps every operand it builds; a reader expects them only
    where precedence asks for them. A tuple's stay; so does every line that is not one whole statement."""
    return "\n".join(_line_without_redundant_parentheses(line) for line in text.split("\n"))


def _line_without_redundant_parentheses(line: str) -> str:
    meant = _statement_tree(line) if "(" in line else None
    if meant is None:
        return line
    start = 0
    while (opened := _grouping_parenthesis(line, start)) >= 0:
        closed = _closing(line, opened)
        inside = line[opened + 1 : closed]
        candidate = f"{line[:opened]}{inside}{line[closed + 1 :]}"
        tuple_ = len(_split_top_level(inside)) > 1 or inside.rstrip().endswith(",")
        if not tuple_ and _statement_tree(candidate) == meant:
            line = candidate
            start = opened
        else:
            start = opened + 1
    return line


def _grouping_parenthesis(line: str, start: int) -> int:
    """The first `(` at or after `start` that groups (no call's, outside string literals and the
    comment), or -1."""
    quote = ""
    for k in range(len(line)):
        char = line[k]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#":
            return -1
        elif char == "(" and k >= start and not (k and (line[k - 1].isalnum() or line[k - 1] in "_)]")):
            return k
    return -1


def _closing(line: str, opened: int) -> int:
    depth = 0
    for k in range(opened, len(line)):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(line[k], 0)
        if depth == 0:
            return k
    return len(line) - 1


_ROUND_TRIP = re.compile(r"\.to\(tl\.(bfloat16|float16)\)\.to\(tl\.float32\)\.to\(tl\.\1\)")


def without_round_trips(text: str) -> str:
    """`text` with `v.to(tl.bfloat16).to(tl.float32).to(tl.bfloat16)` as `v.to(tl.bfloat16)`: a value
    rounded as the reference rounds it, inlined into a store that narrows it again (float32 holds every
    bfloat16 and float16 exactly, so the round trip changes nothing). A named value rounded so and read
    only narrowed again is held narrow (`held_narrow`)."""
    return held_narrow(_ROUND_TRIP.sub(lambda m: f".to(tl.{m.group(1)})", text))


_ROUNDED = re.compile(r"^(\s*).*\.to\(tl\.(bfloat16|float16)\)\.to\(tl\.float32\)", re.M)


def rounding_explained(text: str, line_length: int) -> str:
    """`text` with a comment above its first round trip through a 16-bit float, which a reader would
    otherwise take for a slip: eager PyTorch rounds the result of each op on 16-bit tensors."""
    first = _ROUNDED.search(text)
    if first is None:
        return text
    why = f"{first[1]}# Rounded to {first[2]} and back, as the PyTorch code's op returns {first[2]}"
    if len(why) > line_length:
        return text
    return f"{text[: first.start()]}{why}\n{text[first.start() :]}"


_WIDENED = re.compile(r"^(\s*)(\w+) = (.+)\.to\(tl\.(bfloat16|float16)\)\.to\(tl\.float32\)$")


def held_narrow(text: str) -> str:
    """`text` with `residual = x.to(tl.bfloat16).to(tl.float32)`, where every later read of `residual` (up
    to its next binding) is `residual.to(tl.bfloat16)`, written `residual = x.to(tl.bfloat16)` and read as
    `residual`: the reference's `residual = x.to(orig_dtype)`, stored as it is. A binding in the function's
    own body, or in a loop's body where each round binds the name before reading it (a value the next
    round reads above its binding is left as it is)."""
    lines = text.split("\n")
    indents = [_indent(line) for line in lines if line[:1].isspace() and line.strip()]
    body = min(indents, default=0)  # the function's own statements
    for i, line in enumerate(lines):
        held = _WIDENED.match(line)
        if held is None:
            continue
        indent, name, dtype = len(held[1]), held[2], held[4]
        anywhere = re.compile(rf"(?<![.\w]){name}\b")
        if indent != body and not _bound_first_each_round(lines, i, anywhere):
            continue
        narrowed = re.compile(rf"(?<![.\w]){name}\.to\(tl\.{dtype}\)")
        reads: list[int] = []
        for j in range(i + 1, len(lines)):
            rebinding = re.match(rf"(\s*)(?:for {name}\b|{name} = )(.*)$", lines[j])
            part = rebinding[2] if rebinding else lines[j]
            if len(anywhere.findall(part)) != len(narrowed.findall(part)) or (
                rebinding and len(rebinding[1]) != indent
            ):
                reads = []  # read as float32 somewhere, or rebound on one path only: kept as it is
                break
            if narrowed.search(part):
                reads.append(j)
            if rebinding:
                break
        if not reads:
            continue
        lines[i] = f"{held[1]}{name} = {held[3]}.to(tl.{dtype})"
        for j in reads:
            lines[j] = narrowed.sub(name, lines[j])
    return "\n".join(lines)


def _bound_first_each_round(lines: list[str], i: int, name: re.Pattern[str]) -> bool:
    """Whether line `i` is in a loop's own body (not in a branch), and each round of the loop binds the
    name of line `i` before any read of it: no round reads the value the round before left."""
    indent = _indent(lines[i])
    header = next((k for k in range(i - 1, -1, -1) if lines[k].strip() and _indent(lines[k]) < indent), None)
    if header is None or not re.match(r"\s*(for|while)\b", lines[header]) or name.search(lines[header]):
        return False
    for k in range(header + 1, i + 1):
        if name.search(lines[k]) is None:
            continue
        binding = re.match(rf"\s{{{indent}}}{name.pattern} = (.*)$", lines[k])
        return binding is not None and name.search(binding[1]) is None
    return False


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
