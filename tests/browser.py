"""Headless Chromium through Selenium, from Debian's chromium and chromium-driver (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

DRIVERS = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
BROWSERS = ("/usr/bin/chromium", "/usr/lib/chromium/chromium")
INSTALL = "apt-get install -y chromium chromium-driver (as .ci/run does)"


def _first(paths: tuple[str, ...], name: str) -> str | None:
    return next((p for p in paths if Path(p).exists()), None) or shutil.which(name)


def missing() -> str | None:
    """Why no browser can be started here, or None when Debian's chromium and its driver are installed."""
    if _first(DRIVERS, "chromedriver") is None:
        return f"chromedriver is not installed: {INSTALL}"
    if _first(BROWSERS, "chromium") is None:
        return f"chromium is not installed: {INSTALL}"
    return None


def chrome(width: int = 1400, height: int = 1000) -> webdriver.Chrome:
    """A headless Chromium; its driver and binary named explicitly, so Selenium Manager never downloads one."""
    why = missing()
    if why:
        raise RuntimeError(why)
    options = webdriver.ChromeOptions()
    options.binary_location = str(_first(BROWSERS, "chromium"))
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--force-device-scale-factor=1",
        "--lang=en-US",
    ):
        options.add_argument(arg)
    service = Service(executable_path=str(_first(DRIVERS, "chromedriver")), env={**os.environ, "SE_OFFLINE": "true"})
    return webdriver.Chrome(service=service, options=options)
