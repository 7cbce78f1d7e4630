"""What every benchmark row carries: the device, the versions, the date and the exact command."""

from __future__ import annotations

import datetime as dt
import platform
import sys
from pathlib import Path
from typing import Any


def run_meta(**extra: Any) -> dict[str, Any]:
    import torch
    import triton

    return {
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        **extra,
    }
