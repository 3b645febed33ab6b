#!/usr/bin/env python3
"""Decode time per word in the attention explorer's page, in headless Chromium.

Usage (after `cargo xtask explorer` and `cargo xtask models`):
    python3 scripts/bench/explorer_browser.py target/models/netra-w8a16.s2s [WORDS] [REPEATS]

Serves the page with `target/release/s2s explore MODEL --port 0`, opens it in Debian's
headless Chromium through chromedriver's WebDriver (HTTP and JSON: Python's standard
library only, no environment to pin), and times, inside the page with
performance.now(), WORDS golden words (tests/fixtures/golden/words-eval.txt, at most 25
letters) decoded REPEATS times each:
  core  - the WebAssembly module's decode (greedy, every step recorded, as JSON) and
          the page's JSON.parse of it;
  page  - a word typed: #source set and its input event, which decodes and redraws
          the heatmap, the entropy bars, the next tokens and the output.
Prints the model, the module's size and the median of REPEATS runs of each, per word.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())["value"]


def main():
    model = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    with open(os.path.join(ROOT, "tests/fixtures/golden/words-eval.txt")) as f:
        words = [w for w in f.read().split() if len(w) <= 25][:n]
    s2s = os.path.join(ROOT, "target/release/s2s")
    server = subprocess.Popen([s2s, "explore", model, "--port", "0"], stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().split()[1]
    port = free_port()
    driver = subprocess.Popen(["/usr/bin/chromedriver", f"--port={port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    profile = f"/tmp/s2s-explorer-bench-{os.getpid()}"
    try:
        for _ in range(100):
            try:
                call(base, "GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}"]
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": "/usr/bin/chromium", "args": args}}}}
        session = call(base, "POST", "/session", caps)["sessionId"]
        s = f"/session/{session}"
        call(base, "POST", s + "/url", {"url": url})
        for _ in range(200):
            if call(base, "POST", s + "/execute/sync",
                    {"script": "return document.getElementById('status').dataset.state", "args": []}) == "ready":
                break
            time.sleep(0.05)
        script = """
const [words, repeats] = arguments;
const median = (v) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
const core = [], page = [];
const source = document.getElementById('source');
for (let r = 0; r < repeats; r++) {
  let t = performance.now();
  for (const w of words) JSON.parse(state.explorer.decode(w, 1));
  core.push((performance.now() - t) / words.length);
  t = performance.now();
  for (const w of words) { source.value = w; source.dispatchEvent(new Event('input')); }
  page.push((performance.now() - t) / words.length);
}
return { core: median(core), page: median(page) };
"""
        r = call(base, "POST", s + "/execute/sync", {"script": script, "args": [words, repeats]})
        wasm = os.path.getsize(os.path.join(ROOT, "target/explorer/pkg/s2s_explorer_bg.wasm"))
        version = subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True, text=True).stdout.strip()
        print(f"{os.path.basename(model)}: {len(words)} words x {repeats}, {version}, wasm {wasm} bytes")
        print(f"  core decode {r['core']:.3f} ms per word, page (decode and redraw) {r['page']:.3f} ms per word")
        call(base, "DELETE", s)
    finally:
        driver.kill()
        server.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
