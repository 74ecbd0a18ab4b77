"""Headless Chromium driven through the DevTools protocol on a pipe: open a page at a window width,
run JavaScript in it, take a screenshot.

Chromium started with ``--remote-debugging-pipe`` reads protocol messages (JSON, each ended by a
NUL byte) on its file descriptor 3 and writes its own on 4; no port is opened. One browser serves
every page: each ``Browser.look`` opens a tab, sets its window size, loads the page, and closes
the tab.

Example (where Chromium is installed)::

    with Browser() as browser:
        width = browser.look("file:///tmp/site/index.html", 390, "document.body.scrollWidth")
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: the Chromium of Debian's ``chromium`` package (what .ci/run installs), or another on the path
CHROMIUM = next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe", "about:blank"]
TIMEOUT_S = 60.0


def _as_fds_3_and_4(read_fd: int, write_fd: int) -> Callable[[], None]:
    """The child's set-up: the pipes' ends become its descriptors 3 and 4 (moved above 10 first,
    so that neither move overwrites the other)."""
    def setup() -> None:
        high_read = fcntl.fcntl(read_fd, fcntl.F_DUPFD, 10)
        high_write = fcntl.fcntl(write_fd, fcntl.F_DUPFD, 10)
        os.dup2(high_read, 3)
        os.dup2(high_write, 4)
    return setup


class Browser:
    """One headless Chromium; close it (or use ``with``) to end it and its profile folder."""

    def __init__(self) -> None:
        if CHROMIUM is None:
            raise RuntimeError("no Chromium on the path: apt-get install chromium")
        self.profile = tempfile.mkdtemp(prefix="vec_envs-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self.process = subprocess.Popen(
            [CHROMIUM, f"--user-data-dir={self.profile}", *FLAGS], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(3, 4),
            preexec_fn=_as_fds_3_and_4(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the browser (it is asked first, then killed) and remove its profile."""
        if self.process.poll() is None:
            try:
                self._send("Browser.close")
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, RuntimeError):
                self.process.kill()
                self.process.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    # ------------------------------------------------------------------ the protocol
    def _send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command; return its result (events that arrive meanwhile are dropped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"Chromium: {method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self, deadline: float | None = None) -> dict[str, Any]:
        """The next message from the browser."""
        deadline = deadline or time.monotonic() + TIMEOUT_S
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise RuntimeError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def _wait_for(self, event: str, session: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            message = self._read(deadline)
            if message.get("method") == event and message.get("sessionId") == session:
                return

    # ------------------------------------------------------------------ what the tests use
    def look(self, url: str, width: int, script: str, screenshot: Path | None = None) -> Any:
        """Load ``url`` in a window ``width`` pixels wide; return what ``script`` (a JavaScript
        expression) evaluates to, after writing the whole page as a PNG to ``screenshot``."""
        target = self._send("Target.createTarget", url="about:blank")["targetId"]
        session = self._send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        try:
            self._send("Emulation.setDeviceMetricsOverride", session, width=width, height=900,
                       deviceScaleFactor=1, mobile=False)
            self._send("Page.enable", session)
            self._send("Page.navigate", session, url=url)
            self._wait_for("Page.loadEventFired", session)
            result = self._send("Runtime.evaluate", session, expression=script, returnByValue=True)
            if "exceptionDetails" in result:
                raise RuntimeError(f"the page's script failed: {result['exceptionDetails']}")
            if screenshot is not None:
                height = self._send("Runtime.evaluate", session, expression="document.documentElement.scrollHeight",
                                    returnByValue=True)["result"]["value"]
                shot = self._send("Page.captureScreenshot", session, format="png", captureBeyondViewport=True,
                                  clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})
                screenshot.write_bytes(base64.b64decode(shot["data"]))
            return result["result"].get("value")
        finally:
            self._send("Target.closeTarget", targetId=target)
