"""The report as a browser draws it: headless Chromium takes a screenshot of the page, which must not be
blank and must show the growth plot (its overall best curve has a colour nothing else on the page uses).

Chromium runs without network, sandbox, GPU or a profile of its own (a fresh --user-data-dir); `.ci/run`
installs Debian's chromium, and without one here the test is skipped with the reason."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from report_runs import make_report

from kernelbot.report.figures import BEST_COLOUR

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((found for name in BROWSERS if (found := shutil.which(name))), None)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
WIDTH, HEIGHT = 1280, 2400

pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium on this machine (.ci/run installs it: apt-get install chromium)"
)


def screenshot(page: Path, png: Path, profile: Path) -> Image.Image:
    assert BROWSER is not None
    argv = [BROWSER, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}"]
    done = subprocess.run(
        [*argv, f"--screenshot={png}", page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert png.is_file(), f"no screenshot (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return Image.open(png).convert("RGB")


@pytest.mark.slow
@pytest.mark.parametrize("run_name", ["interpreter", "llm"])
def test_the_report_renders_with_its_growth_plot(request, tmp_path, run_name) -> None:
    run = (
        request.getfixturevalue("interpreter_runs").finished
        if run_name == "interpreter"
        else (request.getfixturevalue("llm_run"))
    )
    page = tmp_path / "report.html"
    make_report(run, page)
    image = screenshot(page, tmp_path / "shot.png", tmp_path / "profile")
    assert image.size == (WIDTH, HEIGHT)

    pixels = np.frombuffer(image.tobytes(), dtype=np.uint8).reshape(HEIGHT, WIDTH, 3).astype(np.int32)
    white = (pixels == 255).all(axis=2)
    assert white.mean() < 0.97, "the screenshot is blank"
    packed = (pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]
    assert len(np.unique(packed)) > 100, "the screenshot has almost no content"

    want = np.array([int(BEST_COLOUR[i : i + 2], 16) for i in (1, 3, 5)])
    ys, _ = np.nonzero(np.abs(pixels - want).sum(axis=2) <= 40)
    assert len(ys) > 150, "the growth plot's best curve is not on screen"
    assert ys.max() - ys.min() < 450, "the best curve's colour appears outside one plot"
