"""The verdict page and its forest plot rendered in a real browser: headless Chromium (Debian's
`chromium` package; skipped when it is absent) lays out the judged fixture's page and the demo-like
page, prints their DOM after layout and takes screenshots, which must not be blank."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.verdict_pages import demo_like_page, judged_page

pytestmark = pytest.mark.slow

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("headless Chromium not installed (Debian: apt-get install -y chromium)")
    return found


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run([_chromium(), *FLAGS, *args], cwd=cwd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _png_rows(path: Path) -> list[bytes]:
    """The decoded scanlines of an 8-bit RGB(A) PNG (filter bytes kept: only distinctness is compared)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, chunks, pos = 0, 0, b"", 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    raw = zlib.decompress(chunks)
    stride = len(raw) // height
    return [raw[i * stride:(i + 1) * stride] for i in range(height)]


def _not_blank(path: Path) -> None:
    rows = _png_rows(path)
    assert len(set(rows)) > 50, f"{path}: the screenshot is (nearly) blank"


@pytest.mark.parametrize("build", [judged_page, demo_like_page], ids=["judged", "demo-like"])
def test_the_page_and_the_forest_plot_render_in_chromium(build, tmp_path):
    result, paths = build(tmp_path)
    page = next(p for p in paths if p.suffix == ".html")
    svg = next(p for p in paths if p.name.endswith(".forest.svg"))
    dom = _run(["--dump-dom", page.as_uri()], tmp_path)
    assert dom.count('class="badge ') == len(result.claims)
    plotted = sum(1 for r in result.claims if r.ours_delta is not None)
    assert "<h2>ConPVP</h2>" in dom and dom.count("<circle") >= plotted
    for target, size in ((page, "1280,2400"), (svg, "1000,800")):
        shot = tmp_path / f"{target.name}.png"
        _run([f"--window-size={size}", f"--screenshot={shot}", target.as_uri()], tmp_path)
        _not_blank(shot)
