"""The static checks, the cheap first stage of the cascade: a candidate's source read (libcst) for every hack
class with a static signature, before anything of it runs.

    checks  the visitor and its entry points: check_static(source, task) -> findings, host_preparation(...)
    rules   the policy as data: which qualified names, modules and method names give a hack class away
    syntax  stateless questions about one node or one qualified name (which rule, a mutable container...)
    calls   questions about one call (its literal arguments, a built-in type's method, a device-facts cache)
    facts   what the checks need to know about the task (its float dtypes, dynamic sizes, reference modules)

What a host-side PyTorch operation does is evaluators.guards.host_ops' answer, shared with the runtime guards.
Nothing is imported here: the runtime guards read `facts` without loading libcst.
"""
