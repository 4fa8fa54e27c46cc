"""Write (or, with ``--check``, compare) the documentation pages generated from the code.

    python docs/gen/generate.py           rewrite docs/reference/*.md
    python docs/gen/generate.py --check   exit 1 naming each page that differs from what would be generated

Each generated page has one module beside this file with a ``render()`` returning its Markdown; the pages are
committed so that the site and a reader on the repository host both see them, and
``tests/test_docs_generated.py`` fails when a committed page is not what its generator writes today.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import benchmarks_reference  # noqa: E402
import commands_reference  # noqa: E402
import config_reference  # noqa: E402
import outputs_reference  # noqa: E402

PAGES = {
    "docs/reference/configuration.md": config_reference.render,
    "docs/reference/outputs.md": outputs_reference.render,
    "docs/reference/commands.md": commands_reference.render,
    "docs/reference/benchmarks.md": benchmarks_reference.render,
}


def stale(root: Path = ROOT) -> list[str]:
    """The generated pages whose committed text differs from what their generator writes now."""
    return [page for page, render in PAGES.items()
            if not (root / page).is_file() or (root / page).read_text(encoding="utf-8") != render()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        differ = stale()
        for page in differ:
            print(f"{page}: differs from what docs/gen/generate.py writes; run it and commit the page")
        return 1 if differ else 0
    for page, render in PAGES.items():
        (ROOT / page).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / page).write_text(render(), encoding="utf-8")
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
