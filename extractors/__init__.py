"""From a function in a real repository to a self-contained Task (see docs/extraction.md).

extract(ExtractOptions(repo, "pkg.module:Qualname", spec=...))   -> ExtractionSummary (writes the task;
    without a spec, inputs are drafted and made to run, or DraftDoesNotRun is raised)
capture(CaptureOptions(repo, function, ["python", "bench.py"]))  -> (summary, recorded calls)
rank_static(repo) / profile_command(repo, "python bench.py")      -> scan rankings
scan_static(repo)                                                -> the ranking, files read, files not parsed
"""

from extractors.capture import CaptureOptions, capture
from extractors.errors import AmbiguousTarget, ExtractionError, SpecError, TargetNotFound, UnsupportedCode
from extractors.extract import ExtractionSummary, ExtractOptions, extract
from extractors.inputs_source import DraftDoesNotRun
from extractors.release_sources import fetch_release
from extractors.scan_profile import profile_command
from extractors.scan_static import rank_static, scan_static

__all__ = [
    "AmbiguousTarget",
    "CaptureOptions",
    "DraftDoesNotRun",
    "ExtractOptions",
    "ExtractionError",
    "ExtractionSummary",
    "SpecError",
    "TargetNotFound",
    "UnsupportedCode",
    "capture",
    "extract",
    "fetch_release",
    "profile_command",
    "rank_static",
    "scan_static",
]
