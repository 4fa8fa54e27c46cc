"""Benchmark unit ``wos``: Web of Science (WOS-5736 / 11967 / 46985; Kowsari et al. 2017), MoCoUTRL's data.

One module holds the benchmark (sentrepro.data.benchmarks): its versions (task group ``wos``), documented
counts, parser, the layout ``wos`` and the fixture ``wos`` (a synthetic ``WebOfScience.zip``).

Upstream layout (Mendeley Data ``9rw3vkcfy4`` v6, docs/evaluation-and-data.md §5): one folder per
version, ``WOS5736/``, ``WOS11967/``, ``WOS46985/``, each holding four line-aligned files:

* ``X.txt``   one abstract per line;
* ``Y.txt``   the flat category id;
* ``YL1.txt`` the level-1 (parent) category id;
* ``YL2.txt`` the level-2 (child) category id.

Hugging Face's loader reads them as UTF-8 with universal newlines and pairs line i of each file;
we do the same and refuse files whose line counts differ. The archive has no train/test split.

No real copy is available offline, so :func:`write_wos_fixture` writes the same layout with
deterministic synthetic abstracts; the offline demo labels results on it "synthetic".
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from sentrepro.data.benchmarks import Benchmark, Layout, relative_files
from sentrepro.data.counts import check_classes, check_count, check_parent_classes
from sentrepro.data.fixtures.archives import write_zip
from sentrepro.data.records import DataFormatError, Document, parse_int, read_text_lines
from sentrepro.files import atomic_dir

WOS_VERSIONS: tuple[str, ...] = ("WOS5736", "WOS11967", "WOS46985")  # task group ``wos``: folders of the zip
WOS_TEXT_FILE = "X.txt"
WOS_LABEL_FILES: tuple[str, ...] = ("Y.txt", "YL1.txt", "YL2.txt")  # flat, parent, child
WOS_ARCHIVE_DIR = "WebOfScience"


def wos_version_dir(root: Path, version: str) -> Path:
    """``root/<version>`` or ``root/WebOfScience/<version>``, whichever exists."""
    if version not in WOS_VERSIONS:
        raise ValueError(f"WOS version must be one of {WOS_VERSIONS}, got {version!r}")
    candidates = (Path(root) / version, Path(root) / WOS_ARCHIVE_DIR / version)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no {version} folder under {root} (looked for {', '.join(str(c) for c in candidates)})")


def read_wos(root: Path, version: str, *, check_counts: bool = True) -> list[Document]:
    """Read one WOS version; ``root`` holds ``<version>/`` or ``WebOfScience/<version>/``.

    Checks the documented size (5,736 / 11,967 / 46,985), number of categories (11 / 35 / 134)
    and of parent categories (3 / 7 / 7) unless ``check_counts`` is false (synthetic fixtures).
    """
    version_dir = wos_version_dir(root, version)
    text_path = version_dir / WOS_TEXT_FILE
    texts = read_text_lines(text_path, "utf-8")
    label_columns = [_read_label_file(version_dir / name) for name in WOS_LABEL_FILES]
    _check_aligned(version_dir, [len(texts)] + [len(column) for column in label_columns])
    documents = [
        Document(text.strip(), label, parent, child) for text, label, parent, child in zip(texts, *label_columns)
    ]
    if check_counts:
        check_count(version, "all", len(documents), version_dir)
        check_classes(version, len({doc.label for doc in documents}), version_dir / "Y.txt")
        check_parent_classes(version, len({doc.parent for doc in documents}), version_dir / "YL1.txt")
    return documents


def _read_label_file(path: Path) -> list[int]:
    labels = []
    for lineno, line in enumerate(read_text_lines(path, "utf-8"), start=1):
        label = parse_int(line, path, lineno, "category id")
        if label < 0:
            raise DataFormatError(path, lineno, f"category id must be >= 0, found {label}")
        labels.append(label)
    return labels


def _check_aligned(version_dir: Path, line_counts: list[int]) -> None:
    if len(set(line_counts)) > 1:
        names = (WOS_TEXT_FILE,) + WOS_LABEL_FILES
        counts = ", ".join(f"{name} {count}" for name, count in zip(names, line_counts))
        what = f"the four files must be line-aligned but their line counts differ: {counts}"
        raise DataFormatError(version_dir, None, what)


# ----------------------------------------------------------------------------- synthetic fixture

# Children per parent. Only the totals are documented (11/3, 35/7, 134/7); the split across parents
# is this fixture's own choice.
_FIXTURE_CHILDREN: dict[str, tuple[int, ...]] = {
    "WOS5736": (4, 4, 3),
    "WOS11967": (5, 5, 5, 5, 5, 5, 5),
    "WOS46985": (17, 16, 19, 9, 11, 53, 9),
}

_PARENT_TOPICS: tuple[tuple[str, ...], ...] = (
    ("algorithm", "network", "software", "data", "learning", "compiler", "database", "graph"),
    ("circuit", "signal", "voltage", "antenna", "transistor", "power", "sensor", "filter"),
    ("behaviour", "cognition", "memory", "emotion", "attention", "personality", "therapy", "perception"),
    ("turbine", "friction", "thermal", "fluid", "vibration", "engine", "stress", "manufacturing"),
    ("concrete", "bridge", "soil", "pavement", "structure", "hydraulic", "seismic", "construction"),
    ("patient", "clinical", "disease", "treatment", "diagnosis", "symptom", "surgery", "cohort"),
    ("protein", "enzyme", "gene", "molecule", "cell", "metabolism", "receptor", "binding"),
)

_CHILD_MODIFIERS: tuple[str, ...] = (
    "adaptive", "spectral", "robust", "stochastic", "distributed", "nonlinear", "hybrid", "dynamic",
    "optimal", "empirical", "bayesian", "parallel", "sparse", "modular", "thermal", "acoustic",
    "chronic", "acute", "genetic", "cellular", "digital", "analog", "optical", "magnetic",
    "organic", "inorganic", "spatial", "temporal", "social", "clinical", "experimental", "numerical",
    "statistical", "structural", "functional", "molecular", "longitudinal", "comparative", "predictive",
    "diagnostic", "preventive", "regional", "urban", "rural", "industrial", "residential", "marine",
    "aerial", "embedded", "wireless", "quantum", "classical", "synthetic", "natural", "automated",
)

_FILLER: tuple[str, ...] = (
    "we", "study", "propose", "a", "novel", "method", "for", "the", "analysis", "of", "results", "show",
    "that", "approach", "improves", "performance", "in", "this", "paper", "present", "evaluate", "on",
    "with", "and", "model", "significant", "effect", "using", "based", "framework", "experiments", "our",
)


def fixture_hierarchy(version: str) -> list[tuple[int, int]]:
    """The fixture's categories as (parent, child) pairs; the flat id is the list index."""
    if version not in _FIXTURE_CHILDREN:
        raise ValueError(f"WOS version must be one of {WOS_VERSIONS}, got {version!r}")
    children = _FIXTURE_CHILDREN[version]
    return [(parent, child) for parent, n_children in enumerate(children) for child in range(n_children)]


def synthetic_abstract(rng: random.Random, parent: int, child: int) -> str:
    """One lowercase pseudo-abstract whose topic words identify its parent and child category."""
    topics = _PARENT_TOPICS[parent]
    child_term = f"{_CHILD_MODIFIERS[child]} {topics[child % len(topics)]}"
    words: list[str] = []
    for _ in range(rng.randint(3, 6)):  # clauses
        words += rng.sample(_FILLER, 4) + [rng.choice(topics)] + child_term.split() + rng.sample(_FILLER, 2)
    return " ".join(words) + " ."


def write_wos_fixture(dest_dir: Path, n_docs: int, seed: int) -> None:
    """Write ``dest_dir/WebOfScience/{WOS5736,WOS11967,WOS46985}/{X,Y,YL1,YL2}.txt``, synthetic.

    Each version gets ``n_docs`` documents; every category appears at least once when ``n_docs``
    is at least the number of categories (11 / 35 / 134). Same ``seed`` -> same bytes. The folder
    is written atomically (a failure leaves no partial ``WebOfScience``).
    """
    if n_docs < 1:
        raise ValueError(f"n_docs must be >= 1, got {n_docs}")
    with atomic_dir(Path(dest_dir) / WOS_ARCHIVE_DIR) as archive_dir:
        for version in WOS_VERSIONS:
            _write_fixture_version(archive_dir / version, version, n_docs, random.Random(f"{seed}:{version}"))


def _write_fixture_version(version_dir: Path, version: str, n_docs: int, rng: random.Random) -> None:
    hierarchy = fixture_hierarchy(version)
    labels = [index % len(hierarchy) for index in range(min(n_docs, len(hierarchy)))]
    labels += [rng.randrange(len(hierarchy)) for _ in range(n_docs - len(labels))]
    rng.shuffle(labels)
    version_dir.mkdir(parents=True)
    columns = {
        WOS_TEXT_FILE: [synthetic_abstract(rng, *hierarchy[label]) for label in labels],
        "Y.txt": [str(label) for label in labels],
        "YL1.txt": [str(hierarchy[label][0]) for label in labels],
        "YL2.txt": [str(hierarchy[label][1]) for label in labels],
    }
    for name, lines in columns.items():
        (version_dir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


# The fixture ``wos``: a synthetic WebOfScience.zip laid out like the Mendeley Data archive that Hugging
# Face's loader reads (docs/evaluation-and-data.md §5): one folder per version at its top, each with the
# line-aligned X.txt, Y.txt, YL1.txt and YL2.txt written by write_wos_fixture (every category present).
ARCHIVE = "WebOfScience.zip"
SEED = 20170917  # any fixed value; the HDLTex paper's year and month
DOCS_PER_VERSION = 300  # >= 134, the categories of WOS46985, so each category appears


def wos_tree(n_docs: int = DOCS_PER_VERSION, seed: int = SEED) -> dict[str, bytes]:
    """The fixture's files (path inside the zip -> bytes)."""
    with tempfile.TemporaryDirectory(prefix="sentrepro-wos-") as tmp:
        write_wos_fixture(Path(tmp), n_docs, seed)
        root = Path(tmp) / WOS_ARCHIVE_DIR
        return {path.relative_to(root).as_posix(): path.read_bytes()
                for path in sorted(root.rglob("*")) if path.is_file()}


def write_wos_archive(out_dir: Path) -> list[Path]:
    """Write ``out_dir/WebOfScience.zip``; same bytes on every run."""
    archive = Path(out_dir) / ARCHIVE
    write_zip(wos_tree(), archive)
    return [archive]


# ----------------------------------------------------------------------------- the benchmark unit

COUNTS: dict[tuple[str, str], int] = {("WOS5736", "all"): 5736, ("WOS11967", "all"): 11967,
                                      ("WOS46985", "all"): 46985}  # the archive has no split
CLASSES: dict[str, int] = {"WOS5736": 11, "WOS11967": 35, "WOS46985": 134}
PARENT_CLASSES: dict[str, int] = {"WOS5736": 3, "WOS11967": 7, "WOS46985": 7}  # level-1 categories


def read_wos_layout(root: Path, variant: str | None, check_counts: bool) -> dict[str, dict]:
    found = {}
    for version in WOS_VERSIONS:
        documents = read_wos(root, version, check_counts=check_counts)
        version_dir = wos_version_dir(root, version)
        files = [version_dir / name for name in (WOS_TEXT_FILE, *WOS_LABEL_FILES)]
        found[version] = {"family": "wos", "parts": {"all": len(documents)},
                          "classes": len({doc.label for doc in documents}),
                          "parent_classes": len({doc.parent for doc in documents}),
                          "files": relative_files(files, root)}
    return found


BENCHMARK = Benchmark(
    name="wos",
    description="Web of Science WOS-5736/11967/46985 classification (MoCoUTRL Tables 2-3)",
    tasks={"wos": {version: {} for version in WOS_VERSIONS}},
    counts=COUNTS,
    classes=CLASSES,
    parent_classes=PARENT_CLASSES,
    layouts={"wos": Layout("Web of Science WOS5736/, WOS11967/, WOS46985/", read_wos_layout)},
    fixture=write_wos_archive,
)
