"""Suffixed copies of one constant or one host helper in a flat module become one.

Two codes of different structure keep their own copies of what they define, suffixed for when they run, and
a knob variant's warps helper comes along with its constant:

    ROWS_small = 2  # rows per program
    WARPS_SCALE_small = 0.5

    def _num_warps_small(elements):
        warps = min(max(triton.next_power_of_2(elements) // 512, 1), 16)
        return min(max(int(warps * WARPS_SCALE_small), 1), 32)

and `ROWS_large`, `WARPS_SCALE_large`, `_num_warps_large` the same but for their suffix. Number constants of
one stem and one value are one constant named by the stem (`ROWS = 2`), where no function that reads them
binds that name. Helpers the same once each reads its suffixed constant as one parameter are one helper
taking it (`_num_warps(elements, warps_scale)`), each call passing the constant its copy read
(`_num_warps(ROWS * X_SIZE1_P2, WARPS_SCALE_small)`); where the constants merged, one helper reading the
merged constant. A copy a launch table threads its constant through (`*,
WARPS_SCALE_large=WARPS_SCALE_large`, called with `WARPS_SCALE_large=warps_scale` where the size asks for
another value) merges the same way, each call passing the value it gave. Every call computes what it
computed before. Only undecorated module-level functions named `<stem>_<route suffix>`, called by name with
positional arguments (and that keyword) and never used otherwise; a stem or parameter name already taken
leaves them alone. Last, a helper still taking a threaded constant as `*, WARPS_SCALE=WARPS_SCALE` takes it
as a plain parameter (`def _num_warps(elements, warps_scale)`) where every call passes a variable or nothing
(`threaded_constants_as_parameters`). Source text only, never run.
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import ROUTE_SUFFIX, RenamedReads, code, identifiers, names


def host_helpers_merged(source: str) -> str:
    """`source` (a flat module's text) with each set of host helpers alike but for the suffixed constant they
    read merged into one; `source` itself when there is none."""
    module = cst.parse_module(source)
    merged = _equal_constants_merged(module)
    for stem, copies in _suffixed_helpers(merged).items():
        merged = _merged(merged, stem, copies)
    return merged.code if merged.code != module.code else source


def threaded_constants_as_parameters(source: str) -> str:
    """`source` (a flat module's text) with each host helper a launch table threads a constant through
    (`def _num_warps(elements, *, WARPS_SCALE=WARPS_SCALE)`, called as `_num_warps(n, WARPS_SCALE=
    warps_scale)`) taking it as a plain last parameter named for its stem (`def _num_warps(elements,
    warps_scale)`, `_num_warps(n, warps_scale)`), where every call passes it as a variable or not at all (then
    the module's constant); a call passing a literal (`_entry_large(x, SCALE=3.0)`) keeps its keyword, so
    its function stays as it is."""
    module = cst.parse_module(source)
    for name in [s.name.value for s in module.body if isinstance(s, cst.FunctionDef) and not s.decorators]:
        module = _threaded_as_parameter(module, name)
    return module.code if module.code != source else source


def _threaded_as_parameter(module: cst.Module, name: str) -> cst.Module:
    function = next(s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == name)
    params = function.params
    if len(params.kwonly_params) != 1:
        return module
    constant = params.kwonly_params[0].name.value
    parameter = ROUTE_SUFFIX.sub("", constant).lower()
    bare = _bare(params)
    if (
        constant not in _constants(module)
        or not _takes_own_constant(params, constant)
        or not _plain(bare)
        or parameter in names(function)
        or not _only_called(module, {name}, {name: constant})
    ):
        return module
    passed = [
        cst.ensure_type(arg, cst.Arg).value
        for call in m.findall(module, m.Call(func=m.Name(name)))
        for arg in cst.ensure_type(call, cst.Call).args
        if arg.keyword is not None
    ]
    if not all(isinstance(value, cst.Name) for value in passed) or _shadowed(
        module, {name: constant}, {name: constant}
    ):
        return module
    added = [*bare.params, cst.Param(cst.Name(parameter))]
    rewritten = function.with_changes(params=bare.with_changes(params=added)).visit(
        RenamedReads({constant: parameter})
    )
    body = [rewritten if s is function else s for s in module.body]
    return module.with_changes(body=body).visit(
        _PassConstant(name, {name: constant}, {name}, {name: constant})
    )


def _suffixed_helpers(module: cst.Module) -> dict[str, list[str]]:
    """Undecorated module-level functions by stem, where at least two share one (`_num_warps_small`,
    `_num_warps_large` -> `_num_warps`)."""
    stems: dict[str, list[str]] = defaultdict(list)
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and not statement.decorators:
            name = statement.name.value
            if (match := ROUTE_SUFFIX.search(name)) is not None:
                stems[name[: match.start()]].append(name)
    return {stem: copies for stem, copies in stems.items() if len(copies) > 1}


def _merged(module: cst.Module, stem: str, copies: list[str]) -> cst.Module:
    """`copies` merged into one helper `stem` where their bodies are the same once each reads its suffixed
    constant (if any), or the constant a launch table threads through one of them, as one parameter."""
    functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    constants = _constants(module)
    threaded: dict[str, str] = {}  # copy -> its constant, taken as a keyword-only parameter (a launch table)
    for name in copies:
        params = functions[name].params
        if params.kwonly_params:
            constant = params.kwonly_params[0].name.value
            if constant not in constants or not _takes_own_constant(params, constant):
                return module
            threaded[name] = constant
            functions[name] = functions[name].with_changes(params=_bare(params))
    read: dict[str, str] = {}  # copy -> the suffixed (or threaded) constant it reads
    for name in copies:
        suffix = ROUTE_SUFFIX.search(name)
        assert suffix is not None
        own = [
            c
            for c in names(functions[name])
            if c in constants and (c.endswith(suffix.group(0)) or c in threaded.values())
        ]
        if len(own) > 1:
            return module
        read.update({name: own[0]} if own else {})
    if read and len(read) != len(copies):
        return module
    stems = {ROUTE_SUFFIX.sub("", c) for c in read.values()}
    parameter = stems.pop().lower() if len(stems) == 1 else ""
    taken = set().union(*(names(s) for s in module.body if not isinstance(s, cst.FunctionDef)))
    if stem in taken | set(functions) or stems or any(parameter in names(functions[n]) for n in read):
        return module
    renamed = {
        n: cst.ensure_type(
            functions[n]
            .with_changes(name=cst.Name(stem))
            .visit(RenamedReads({read[n]: parameter} if read else {})),
            cst.FunctionDef,
        )
        for n in copies
    }
    if len({code(f) for f in renamed.values()}) != 1 or not _only_called(module, set(copies), threaded):
        return module
    if _shadowed(module, read, threaded):
        return module
    helper = renamed[copies[0]]
    if read:
        if not _plain(helper.params):
            return module  # the constant goes last: only after plain positional parameters
        added = [*helper.params.params, cst.Param(cst.Name(parameter))]
        helper = helper.with_changes(params=helper.params.with_changes(params=added))
    body = [
        helper if isinstance(s, cst.FunctionDef) and s.name.value == copies[0] else s
        for s in module.body
        if not (isinstance(s, cst.FunctionDef) and s.name.value in copies[1:])
    ]
    return module.with_changes(body=body).visit(_PassConstant(stem, read, set(copies), threaded))


def _equal_constants_merged(module: cst.Module) -> cst.Module:
    """Suffixed number constants of one stem and one value (`ROWS_small = 2`, `ROWS_large = 2`) as one
    constant named by the stem (`ROWS = 2`), where the stem is free."""
    constants = _constants(module)
    groups: dict[str, list[str]] = defaultdict(list)
    for name in constants:
        if (match := ROUTE_SUFFIX.search(name)) is not None:
            groups[name[: match.start()]].append(name)
    bound = set(constants) | {
        s.name.value for s in module.body if isinstance(s, cst.FunctionDef | cst.ClassDef)
    }
    bound |= {n for s in module.body if isinstance(s, cst.SimpleStatementLine) for n in identifiers(s)}
    renames = {}
    for stem, members in groups.items():
        readers = [s for s in module.body if isinstance(s, cst.FunctionDef) and names(s) & set(members)]
        # The stem must be free where the constants are read: a reader's parameter or local of that name
        # would shadow the renamed constant.
        taken = bound.union(*(identifiers(r) for r in readers))
        if len(members) > 1 and len({constants[c] for c in members}) == 1 and stem not in taken:
            renames.update({c: stem for c in members})
    if not renames:
        return module
    seen: set[str] = set()
    body = []
    for statement in module.body:
        constant = constant_bound(statement)
        if constant is not None and constant in renames:
            if renames[constant] in seen:
                continue
            seen.add(renames[constant])
        body.append(statement)
    return cst.ensure_type(module.with_changes(body=body).visit(RenamedReads(renames)), cst.Module)


def _constants(module: cst.Module) -> dict[str, str]:
    """Module-level names bound once to a number (`WARPS_SCALE_small = 0.5`), with the number's text."""
    found = {}
    for statement in module.body:
        if (name := constant_bound(statement)) is not None:
            assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
            found[name] = code(assign.value)
    return found


def constant_bound(statement: cst.CSTNode) -> str | None:
    """The name `statement` binds to a number (`NAME = 0.5`), else None."""
    number = m.SimpleStatementLine(
        body=[m.Assign(targets=[m.AssignTarget(m.Name())], value=m.Integer() | m.Float())]
    )
    if not m.matches(statement, number):
        return None
    assign = cst.ensure_type(cst.ensure_type(statement, cst.SimpleStatementLine).body[0], cst.Assign)
    return cst.ensure_type(assign.targets[0].target, cst.Name).value


def _plain(params: cst.Parameters) -> bool:
    """Positional parameters only, none with a default."""
    extra = (params.posonly_params, params.kwonly_params, params.star_kwarg)
    return (
        not any(extra)
        and not isinstance(params.star_arg, cst.Param | cst.ParamStar)
        and all(p.default is None for p in params.params)
    )


def _bare(params: cst.Parameters) -> cst.Parameters:
    """`params` without its keyword-only part (the `*` with it), no comma left after the last."""
    plain = [
        *params.params[:-1],
        *(p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in params.params[-1:]),
    ]
    return params.with_changes(params=plain, kwonly_params=[], star_arg=cst.MaybeSentinel.DEFAULT)


def _takes_own_constant(params: cst.Parameters, constant: str) -> bool:
    """The one keyword-only parameter is `constant`, defaulting to the module's (`*, WARPS_SCALE_large=
    WARPS_SCALE_large`: a launch table passes the constant through)."""
    (param,) = params.kwonly_params if len(params.kwonly_params) == 1 else (None,)
    return (
        param is not None
        and param.name.value == constant
        and param.default is not None
        and m.matches(param.default, m.Name(constant))
        and isinstance(params.star_arg, cst.ParamStar)
    )


def _only_called(module: cst.Module, functions: set[str], threaded: dict[str, str]) -> bool:
    """Every use of `functions` outside their own definitions is a call by name with positional arguments
    only (the constant is passed after them), but for a `threaded` function's constant by its keyword."""
    uses = sum(1 for n in m.findall(module, m.Name()) if cst.ensure_type(n, cst.Name).value in functions)
    calls = [
        call
        for c in m.findall(module, m.Call(func=m.Name()))
        if cst.ensure_type((call := cst.ensure_type(c, cst.Call)).func, cst.Name).value in functions
    ]

    def plain(call: cst.Call, arg: cst.Arg) -> bool:
        keyword = threaded.get(cst.ensure_type(call.func, cst.Name).value)
        return not arg.star and (arg.keyword is None or arg.keyword.value == keyword)

    positional = all(plain(call, a) for call in calls for a in call.args)
    return positional and uses == len(calls) + len(functions)  # each definition's own name is one use


def _shadowed(module: cst.Module, read: dict[str, str], threaded: dict[str, str]) -> bool:
    """Whether a call of a function in `read` that gives no value for its constant (`_num_warps(n)`, which
    the merge makes `_num_warps(n, WARPS_SCALE)`) stands in a function binding that name itself (a parameter
    or a local `WARPS_SCALE`): passed there, it would be that binding, not the module's constant."""
    for outer in module.body:
        if not isinstance(outer, cst.FunctionDef):
            continue
        params = outer.params
        bound = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        bound |= {
            code(cst.ensure_type(t, cst.AssignTarget).target)
            for t in m.findall(outer.body, m.AssignTarget(target=m.Name()))
        }
        for found in m.findall(outer.body, m.Call(func=m.Name())):
            call = cst.ensure_type(found, cst.Call)
            callee = cst.ensure_type(call.func, cst.Name).value
            given = any(a.keyword is not None and a.keyword.value == threaded.get(callee) for a in call.args)
            if callee in read and not given and read[callee] in bound:
                return True
    return False


class _PassConstant(cst.CSTTransformer):
    """Each call of a merged copy calls the helper, passing the constant the copy read where `read` has it."""

    def __init__(self, stem: str, read: dict[str, str], copies: set[str], threaded: dict[str, str]) -> None:
        super().__init__()
        self.stem, self.read, self.copies, self.threaded = stem, read, copies, threaded

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if not isinstance(func, cst.Name) or func.value not in self.copies:
            return updated_node
        keyword = self.threaded.get(func.value)
        given = [a.value for a in updated_node.args if a.keyword is not None and a.keyword.value == keyword]
        args = [a for a in updated_node.args if a.keyword is None]
        if func.value in self.read:
            if args:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(cst.Arg(given[0] if given else cst.Name(self.read[func.value])))
        return updated_node.with_changes(func=cst.Name(self.stem), args=args)
