"""Tracing a task's reference into ATen graphs, run in a subprocess (it imports torch, changes Dynamo's global
state and takes seconds): `python -m evolution.writers.fusion.trace TASK --out REPORT.json [--device cpu]`.

The reference is compiled by Dynamo with dynamic shapes (no duck sizing, ints and floats not specialised)
through a backend that hands the captured graph to AOTAutograd for its functional ATen form (input mutations
kept in the graph as copy_ into the input) and records it; nothing is compiled, the graph runs eagerly. Every
case's inputs are run through the compiled reference: a case whose guards an earlier graph satisfies reuses
it, any other makes a new specialisation (a new dtype, another branch taken). The task's dynamic case keys are
set to a proxy value for tracing (a size of 1 would be specialised to a constant), so those sizes stay
symbolic.

    task      trace_task: the report of one task (its signature, its graphs, or why it cannot be traced)
    inputs    the inputs to trace with: dynamic keys set to proxy sizes; which symbols follow those keys
    capture   the Dynamo / AOTAutograd run over every case, one graph per specialisation
    encode    an FX graph and its shape environment as plain data (model.Graph's dict)
    labels    the reference's variable for each graph node that one assignment names
    sizes     the reference's variable for each size it binds one to (`num_experts = x.shape[1]`)
    __main__  the subprocess's command line

What both writers share (the subprocess's launch, the case order, the return value's structure, the
signature's defaults, the refusal and its one-line causes) is evolution.writers.tracing's.

torch is imported inside the functions that use it, so that these modules import without loading torch.
"""
