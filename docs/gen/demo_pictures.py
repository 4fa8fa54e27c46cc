"""The manual's pictures of a finished demo: a figure it draws and its verdicts page, as a reader sees them.

    make demo && python docs/gen/demo_pictures.py

copies ``results/demo/figures/<figure>.png`` to ``docs/img/demo-<figure>.png`` and takes a screenshot of
``results/demo/verdicts.html`` in headless Chromium (Debian's ``chromium``) into ``docs/img/demo-verdicts.png``.
Unlike the rule graph these come from a run (minutes of training, on whatever machine ran it), so no test
regenerates them; the pages that show them say they come from the demo.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"
FIGURES = ("cosine_gold",)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(ROOT / "results" / "demo"), help="a finished demo's results folder")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1600)
    args = parser.parse_args(argv)
    results = Path(args.results)
    for figure in FIGURES:
        shutil.copyfile(results / "figures" / f"{figure}.png", IMG / f"demo-{figure}.png")
        print(f"wrote docs/img/demo-{figure}.png")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("Chromium is not installed (Debian: apt-get install chromium); the verdicts picture is unchanged")
        return 1
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                    f"--window-size={args.width},{args.height}", f"--screenshot={IMG / 'demo-verdicts.png'}",
                    (results / "verdicts.html").resolve().as_uri()], check=True, capture_output=True, timeout=180)
    print("wrote docs/img/demo-verdicts.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
