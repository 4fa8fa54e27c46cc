"""Web of Science (WOS-5736 / 11967 / 46985; Kowsari et al. 2017), the MoCoUTRL classification data.

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
from pathlib import Path

from sentrepro.data.counts import check_classes, check_count, check_parent_classes
from sentrepro.data.records import DataFormatError, Document, parse_int, read_text_lines
from sentrepro.fsutil import atomic_dir
from sentrepro.data.tasks import task_names

WOS_VERSIONS: tuple[str, ...] = tuple(task_names("wos"))  # data/tasks.yaml
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
