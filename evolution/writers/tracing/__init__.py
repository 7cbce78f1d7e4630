"""What both kernel writers do to trace a task's reference, in one place: each writer has its own tracer
(the fusion writer's Dynamo + AOTAutograd graphs, the Inductor writer's generated code), and they share

    launch     the tracing subprocess: started in an OS box with a time limit, its report read back
    cases      which cases are traced and in what order
    results    the reference's return value as a structure over graph outputs and arguments; argument kinds
    signature  the entry function read from reference.py and its defaults made to stand alone in a candidate
    torch_compat  what the tracers change in torch while tracing, for releases that refuse what later
                  ones trace
    errors     the tracer's refusal (TraceError) and how an exception torch wrapped is read back in one line

torch is imported inside the functions that use it, so that these modules import without loading torch.
"""
