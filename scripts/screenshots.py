"""Screenshots of TensorBoard's tabs for a log folder, taken with headless Chromium:
``python scripts/screenshots.py LOGDIR --prefix NAME [--out docs] [--tabs scalars,images,text,hparams]``.

Starts ``tensorboard --logdir LOGDIR`` on a free port of localhost only, opens each tab in
headless Chromium (driven by Selenium and chromedriver), waits until the tab has drawn, and
saves ``OUT/NAME_TAB.png``. TensorBoard is stopped afterwards. Needs ``pip install selenium``
and a Chromium with its chromedriver (Debian: ``apt install chromium chromium-driver``).

Exit status: 0 when every tab was saved, 1 when TensorBoard or the browser could not start.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

TABS = ("scalars", "custom_scalars", "images", "text", "hparams")
CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _fingerprint(port: int) -> bytes:
    """What TensorBoard has read so far: its plugins and every dashboard's tags and counts."""
    parts = []
    for route in ("plugins_listing", "plugin/scalars/tags", "plugin/images/tags", "plugin/text/tags"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/{route}", timeout=10) as answer:
            parts.append(answer.read())
    return b"\n".join(parts)


def _hparams_enabled(fingerprint: bytes) -> bool:
    listing = json.loads(fingerprint.split(b"\n", 1)[0])
    return bool(listing.get("hparams", {}).get("enabled"))


def start_tensorboard(logdir: Path, port: int, timeout: float = 300.0) -> subprocess.Popen:
    """TensorBoard on 127.0.0.1:port, once it answers and has read every event file: it loads
    them in the background while already serving, so wait until what it reports stops changing
    and, for finished runs (a summary.json), until it has reached the HPARAMS records they end with."""
    finished = any(logdir.rglob("summary.json"))
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--port", str(port)]
    command += ["--host", "127.0.0.1", "--reload_interval", "0", "--load_fast", "false"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    last, stable = None, 0
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tensorboard exited with status {process.returncode}")
        try:
            current = _fingerprint(port)
        except OSError:
            current = None
        complete = current is not None and (not finished or _hparams_enabled(current))
        stable = stable + 1 if complete and current == last else 0
        if stable >= 2:
            return process
        last = current
        time.sleep(2.0)
    process.terminate()
    raise RuntimeError(f"tensorboard did not finish reading {logdir} within {timeout:.0f} s")


def browser(width: int, height: int, chromium: str, chromedriver: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def settle(driver, seconds: float) -> None:
    """Wait until the page has stopped fetching (TensorBoard loads each card on its own)."""
    time.sleep(2.0)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pending = driver.execute_script(
            "return performance.getEntriesByType('resource').filter(e => e.responseEnd === 0).length"
        )
        if not pending:
            break
        time.sleep(0.5)
    time.sleep(seconds / 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir", type=Path, help="the folder given to tensorboard --logdir (a run or a sweep)")
    parser.add_argument("--prefix", required=True, help="file names: OUT/PREFIX_TAB.png")
    parser.add_argument("--out", type=Path, default=Path("docs"), help="folder for the PNG files (default docs)")
    parser.add_argument("--tabs", default=",".join(TABS), help=f"comma-separated, of {', '.join(TABS)}")
    parser.add_argument(
        "--smoothing", type=float, default=0.0, help="the charts' smoothing, as the URL sets it (default 0: raw curves)"
    )
    parser.add_argument("--size", default="1920x1000", help="browser window, WIDTHxHEIGHT pixels (default 1920x1000)")
    parser.add_argument("--wait", type=float, default=15.0, help="most seconds to wait for a tab to draw (default 15)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium", help="browser binary")
    parser.add_argument("--chromedriver", default=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    args = parser.parse_args(argv)
    tabs = [tab.strip() for tab in args.tabs.split(",") if tab.strip()]
    unknown = sorted(set(tabs) - set(TABS))
    if unknown:
        parser.error(f"unknown tab(s) {', '.join(unknown)}; choose from {', '.join(TABS)}")
    width, _, height = args.size.partition("x")
    port = free_port()
    try:
        tensorboard = start_tensorboard(args.logdir, port)
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        try:
            driver = browser(int(width), int(height), args.chromium, args.chromedriver)
        except Exception as error:  # selenium's errors name the missing binary
            print(f"error: cannot start Chromium: {str(error).splitlines()[0]}", file=sys.stderr)
            return 1
        try:
            args.out.mkdir(parents=True, exist_ok=True)
            for tab in tabs:
                driver.get(f"http://127.0.0.1:{port}/#{tab}&_smoothingWeight={args.smoothing:g}")
                settle(driver, args.wait)
                path = args.out / f"{args.prefix}_{tab}.png"
                driver.save_screenshot(str(path))
                print(f"wrote {path}")
        finally:
            driver.quit()
    finally:
        tensorboard.terminate()
        tensorboard.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
