"""Rule tables of the static checks (evaluators.static.checks): which qualified names, modules and method
names give a hack class away in a candidate's source. Kept apart from the visitor so the policy reads as data.
"""

from __future__ import annotations

# Qualified-name prefixes -> (hack class, what it is). First match wins, so specific prefixes come first.
NAME_RULES: tuple[tuple[str, str, str], ...] = (
    ("torch.compile", "pytorch_fallback", "torch.compile"),
    ("torch._dynamo", "pytorch_fallback", "torch.compile machinery"),
    ("torch._inductor", "pytorch_fallback", "torch.compile machinery"),
    ("torch.jit", "pytorch_fallback", "TorchScript"),
    ("torch.fx", "pytorch_fallback", "torch.fx"),
    ("torch.export", "pytorch_fallback", "torch.export"),
    ("torch.cuda.Stream", "other_stream", "a CUDA stream"),
    ("torch.cuda.ExternalStream", "other_stream", "a CUDA stream"),
    ("torch.cuda.stream", "other_stream", "a CUDA stream context"),
    ("torch.cuda.set_stream", "other_stream", "switching CUDA streams"),
    ("torch.cuda.StreamContext", "other_stream", "a CUDA stream context"),
    ("torch.cuda.streams", "other_stream", "CUDA streams"),
    ("torch.Stream", "other_stream", "a device stream"),
    ("torch.Tensor.record_stream", "other_stream", "record_stream"),
    ("torch.cuda.Event", "harness_patch", "CUDA events (the timer)"),
    ("torch.cuda.synchronize", "harness_patch", "synchronize"),
    ("torch.cuda.CUDAGraph", "harness_patch", "CUDA graphs (the timer)"),
    ("torch.cuda.graph", "harness_patch", "CUDA graph capture (the timer)"),
    ("torch.cuda.is_current_stream_capturing", "harness_patch", "detecting graph capture (timed vs checked)"),
    ("torch.cuda._sleep", "harness_patch", "spinning the GPU"),
    ("torch.cuda.cudart", "persisting_l2", "the CUDA runtime"),
    ("torch.cuda.set_per_process_memory_fraction", "sandbox_escape", "device memory limits"),
    ("torch.backends", "precision_downgrade", "global precision flags"),
    ("torch.set_float32_matmul_precision", "precision_downgrade", "global matmul precision"),
    ("torch.set_default_dtype", "precision_downgrade", "the default dtype"),
    ("torch.set_default_tensor_type", "precision_downgrade", "the default dtype"),
    ("torch.autocast", "precision_downgrade", "autocast"),
    ("torch.amp", "precision_downgrade", "autocast"),
    ("torch.cuda.amp", "precision_downgrade", "autocast"),
    ("torch.save", "sandbox_escape", "file I/O"),
    ("torch.load", "sandbox_escape", "file I/O"),
    ("torch.hub", "sandbox_escape", "downloads"),
    ("torch.utils.cpp_extension", "sandbox_escape", "compiling native code"),
    ("torch.ops.load_library", "sandbox_escape", "loading native code"),
    ("torch.multiprocessing", "threads_processes", "processes"),
    ("torch.distributed", "threads_processes", "processes"),
    ("triton.testing", "harness_patch", "triton's benchmarking helpers (the timer)"),
    ("time.", "harness_patch", "the timer"),
    ("timeit", "harness_patch", "the timer"),
    ("numpy", "pytorch_fallback", "numpy compute"),
    ("cupy", "pytorch_fallback", "cupy compute"),
    ("scipy", "pytorch_fallback", "scipy compute"),
    ("jax", "pytorch_fallback", "jax compute"),
    ("functools.lru_cache", "output_caching", "a result cache"),
    ("functools.cache", "output_caching", "a result cache"),
    ("functools.cached_property", "output_caching", "a result cache"),
)

# torch names host code may use: allocation, dtypes/devices, metadata. Anything else under torch. computes.
ALLOWED_TORCH = frozenset(
    {
        "torch.Tensor",
        "torch.Size",
        "torch.device",
        "torch.dtype",
        "torch.empty",
        "torch.empty_like",
        "torch.empty_strided",
        "torch.zeros",
        "torch.zeros_like",
        "torch.ones",
        "torch.ones_like",
        "torch.full",
        "torch.full_like",
        "torch.finfo",
        "torch.iinfo",
        "torch.is_tensor",
        "torch.is_floating_point",
        "torch.get_default_dtype",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.contiguous_format",
        "torch.preserve_format",
        "torch.channels_last",
        "torch.strided",
        "torch.version",
        "torch.__version__",
        "torch.cuda.current_device",
        "torch.cuda.get_device_properties",
        "torch.cuda.get_device_capability",
        "torch.cuda.get_device_name",
        "torch.cuda.current_stream",
        "torch.cuda.device",
        "torch.cuda.is_available",
        "torch.cuda.device_count",
        "torch.cuda.OutOfMemoryError",
        "torch.library.wrap_triton",
        "torch.SymInt",
        "torch.Generator",
    }
)
ALLOWED_TORCH_PREFIXES = (
    "torch.version.",
    "torch.types.",
    "torch.cuda.get_device_properties",
    "torch.cuda.current_stream",
)

# What a tensor method or torch function does is decided from the ATen op it runs (guards.host_ops), not
# from a list of names: views, copies and casts are host preparation, everything else computes.

# A function cached with functools.lru_cache / cache may only read device facts (SM count, capability):
# the calls its body may make. A cache of anything else can carry a result or a buffer across calls.
DEVICE_QUERY_PREFIXES = (
    "torch.cuda.get_device_properties",
    "torch.cuda.current_device",
    "torch.cuda.get_device_capability",
    "torch.cuda.get_device_name",
    "torch.cuda.device_count",
    "torch.cuda.is_available",
    "torch.version.",
    "triton.runtime.driver.",
    "builtins.",
)
CACHE_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})
LOW_PRECISION_NAMES = frozenset(
    {
        "torch.float16",
        "torch.half",
        "torch.bfloat16",
        "triton.language.float16",
        "triton.language.bfloat16",
        "triton.language.float8e4nv",
        "triton.language.float8e5",
        "triton.language.float8e4b15",
    }
)

# Imported modules -> (hack class, what it is).
MODULE_RULES: dict[str, tuple[str, str]] = {
    **{
        m: ("threads_processes", "threads / processes")
        for m in ("threading", "_thread", "multiprocessing", "concurrent", "asyncio", "sched")
    },
    **{
        m: ("sandbox_escape", "files, processes, environment or introspection")
        for m in (
            "os",
            "sys",
            "io",
            "socket",
            "subprocess",
            "importlib",
            "inspect",
            "gc",
            "builtins",
            "pickle",
            "shutil",
            "pathlib",
            "tempfile",
            "urllib",
            "http",
            "requests",
            "httpx",
            "signal",
            "ctypes",
            "mmap",
            "resource",
            "marshal",
            "shelve",
            "sqlite3",
            "glob",
            "fcntl",
            "pty",
            "atexit",
            "weakref",
            "code",
            "codeop",
            "runpy",
            "zipimport",
            "dis",
            "traceback",
            "linecache",
            "site",
            "sysconfig",
            "platform",
            "posix",
            "_posixsubprocess",
            "faulthandler",
            "tracemalloc",
            "copyreg",
            "dill",
            "cloudpickle",
            "psutil",
            "ftplib",
            "smtplib",
            "webbrowser",
            "telnetlib",
            "ssl",
            "select",
            "selectors",
            "fileinput",
        )
    },
    **{
        m: ("persisting_l2", "CUDA driver bindings (access-policy windows, persisting L2)")
        for m in ("cuda", "pycuda", "cuda_bindings", "nvidia")
    },
    **{m: ("harness_patch", "the timer") for m in ("time", "timeit")},
    **{
        m: ("sandbox_escape", "the evaluator's own modules")
        for m in ("evaluators", "kernelbot", "extractors", "evolution")
    },
    **{
        m: ("pytorch_fallback", "another compute library") for m in ("numpy", "cupy", "scipy", "jax", "numba")
    },
}

# Builtins that reach outside the sandbox or hide what code runs.
BUILTIN_RULES: dict[str, tuple[str, str]] = {
    **{
        b: ("sandbox_escape", "dynamic code / introspection")
        for b in ("__import__", "eval", "exec", "compile", "globals", "locals", "vars", "breakpoint", "input")
    },
    "open": ("sandbox_escape", "file I/O"),
    "setattr": ("harness_patch", "setattr (monkey-patching)"),
    "delattr": ("harness_patch", "delattr (monkey-patching)"),
}

# Text that only appears in persisting-L2 / access-policy code.
L2_MARKERS = (
    "accessPolicyWindow",
    "AccessPolicy",
    "cudaLimitPersistingL2CacheSize",
    "persistingL2",
    "hitRatio",
    "cudaAccessProperty",
    "PersistingL2",
    "StreamAttrValue",
)
