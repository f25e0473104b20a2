"""The browser claim, tested in a browser: headless Chromium loads a page (browser_page.html,
served from a local HTTP server) that runs the ResNet-style model with nnvm.js and POSTs its
outputs back; they match the CPU target, and a wrong-size input is refused there too."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from wasm_harness import WASM_DIR, build_wasm, on_cpu, requires_wasm, write_inputs

from nnvm.frontend import from_onnx
from nnvm.testing import onnx_models

CHROMIUM = next((p for n in ("chromium", "chromium-browser") if (p := shutil.which(n))), None)
pytestmark = [
    requires_wasm,
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium)"),
]
PAGE = Path(__file__).with_name("browser_page.html")
TIMEOUT_S = 90
# Headless on a machine with no network: without these it waits on connections it never gets.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def serve(folder: Path) -> tuple[http.server.ThreadingHTTPServer, dict[str, bytes]]:
    """A local server of `folder` that keeps the body POSTed to /result."""
    posted: dict[str, bytes] = {}

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_POST(self) -> None:
            posted[self.path] = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(folder))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, posted


def open_in_chromium(url: str, profile: Path, posted: dict[str, bytes]) -> dict:
    browser = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its renderer and helper processes: one group to end
    )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while "/result" not in posted:
            if browser.poll() is not None:
                raise AssertionError(f"chromium exited: {browser.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no result from the page within {TIMEOUT_S} s")
            time.sleep(0.1)
    finally:
        os.killpg(browser.pid, signal.SIGTERM)
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait()
    return json.loads(posted["/result"])


def test_resnet_runs_in_headless_chromium(tmp_path: Path, tmp_path_factory, monkeypatch) -> None:
    monkeypatch.setenv("NNVM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))
    model = onnx_models.resnet_like()
    inputs = onnx_models.random_inputs(model, seed=11)
    module, params = from_onnx(model)
    site = tmp_path / "site"
    built = build_wasm(module, params, site)
    write_inputs(built, [inputs[i["name"]] for i in built.graph.inputs])
    shutil.copy(WASM_DIR / "nnvm.js", site / "nnvm.js")
    shutil.copy(PAGE, site / "index.html")
    server, posted = serve(site)
    try:
        url = f"http://127.0.0.1:{server.server_port}/index.html"
        result = open_in_chromium(url, tmp_path / "profile", posted)
    finally:
        server.shutdown()
    assert result["ok"], result["error"]
    assert "HeadlessChrome" in result["agent"]
    assert "NNVMError: input" in result["refused"] and "elements" in result["refused"]
    want = on_cpu(model, inputs)
    assert len(result["outputs"]) == len(want)
    for got, w in zip(result["outputs"], want, strict=True):
        np.testing.assert_allclose(np.array(got, np.float32).reshape(w.shape), w, 1e-3, 1e-4)
