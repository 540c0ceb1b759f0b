"""Headless Chromium (Debian's package, ``bash .ci/install-chromium``) for the checks of the
documentation site and the audit report; a test skips with one line when it is not installed."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def chromium(*args: str, width: int, height: int, profile: Path) -> str:
    """Run headless Chromium on ``args`` with a window of ``width`` x ``height``; its stdout."""
    browser = find_chromium()
    if browser is None:
        pytest.skip("chromium is not installed: run `bash .ci/install-chromium` (root, apt-get)")
    argv = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--hide-scrollbars",
        "--virtual-time-budget=5000",  # timers run, then it dumps
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        *args,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return done.stdout


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])
