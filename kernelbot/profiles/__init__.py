"""The old import path of `kernelbot.engines` (engine profiles), kept so that code written against it still
imports; new code imports `kernelbot.engines`."""

from kernelbot.engines import *  # noqa: F403
from kernelbot.engines import __all__  # noqa: F401
