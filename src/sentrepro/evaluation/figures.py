"""The papers' figures, drawn (PNG and PDF, matplotlib Agg) from the metrics files of one suite.

Each figure takes every run that has its suite: one panel per run (cosine vs gold, t-SNE), one line
(top-k token removal), one violin per run and task (few-shot), one point (alignment vs uniformity)
or one bar group (anisotropy). Beside the images a JSON record lists the metrics files drawn, with
their sha256, so a figure can be audited like a table cell.

* ``cosine_gold``    ConPVP Fig. 4: gold score (x) vs predicted cosine scaled to [0, 1] (y), STS-B.
* ``token_removal``  ConPVP Fig. 5: STS average vs number of removed top-k frequent tokens.
* ``tsne``           ConPVP Fig. 6: t-SNE of 10 STS-B test pairs at gold 0 (orange), 3 (blue), 5 (green).
* ``fewshot``        ConPVP Fig. 7: violins of the 10 few-shot accuracies per task.
* ``align_uniform``  alignment vs uniformity (SimCSE Fig. 2 style; MoCoUTRL Fig. 2).
* ``anisotropy``     PromptBERT Knowl 4: mean pairwise cosine of sentence / static embeddings.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from sentrepro.planning import registry
from sentrepro.files import atomic_path, atomic_write_json, read_json
from sentrepro.hashing import sha256_file
from sentrepro.records.provenance import Provenance

GOLD_COLOURS = {0: "tab:orange", 3: "tab:blue", 5: "tab:green"}


def run_label(payload: dict, stands_in: dict[str, str | list[str]]) -> str:
    """``bert-base simcse s42`` (the paper backbone a demo backbone stands in for, with the real one noted)."""
    run = payload["provenance"]["config"]["run"]
    backbone = run["backbone"]
    shown = stands_in.get(backbone) or backbone
    if isinstance(shown, list):  # a demo backbone standing in for several: the figure names the first
        shown = shown[0]
    if shown != backbone:
        shown = f"{shown} [{backbone}]"
    seed = "" if run["seed"] is None else f" s{run['seed']}"
    return f"{shown} {run['method']}{seed}"


def _grid(n_panels: int, width: float = 3.6, height: float = 3.2):
    import matplotlib.pyplot as plt

    columns = min(4, max(1, n_panels))
    rows = math.ceil(n_panels / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(width * columns, height * rows), squeeze=False)
    for extra in axes.flat[n_panels:]:
        extra.set_visible(False)
    return figure, list(axes.flat)


def draw_cosine_gold(runs: list[tuple[str, dict]]):
    figure, axes = _grid(len(runs))
    for ax, (label, payload) in zip(axes, runs):
        pairs = payload["pairs"]
        ax.scatter(pairs["gold"], pairs["scaled"], s=4, alpha=0.35, color="tab:blue", linewidths=0)
        gold = np.array(pairs["gold"])
        scaled = np.array(pairs["scaled"])
        centres = [(low + 0.5, scaled[(gold >= low) & (gold <= low + 1)].mean()) for low in range(5)
                   if ((gold >= low) & (gold <= low + 1)).any()]
        ax.plot(*zip(*centres), color="black", marker="o", markersize=3, linewidth=1)
        ax.set(title=label, xlabel="gold similarity", ylabel="predicted cosine (scaled)", xlim=(-0.1, 5.1),
               ylim=(-0.05, 1.05))
    figure.suptitle(f"Cosine similarity vs gold, STS-B {runs[0][1]['pairs']['split']}")
    return figure


def draw_token_removal(runs: list[tuple[str, dict]]):
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(5.5, 4))
    for label, payload in runs:
        curve = payload["curve"]
        ax.plot(curve["ks"], curve["avg"], marker="o", markersize=3, label=label)
    ax.set(xlabel="number of removed top-k frequent tokens", ylabel="STS average (Spearman x100)",
           title="STS after removing frequent tokens")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never hides data
    return figure


def draw_tsne(runs: list[tuple[str, dict]]):
    figure, axes = _grid(len(runs))
    for ax, (label, payload) in zip(axes, runs):
        points = payload["points"]
        for first, second in zip(points[0::2], points[1::2]):
            colour = GOLD_COLOURS.get(first["gold"], "tab:gray")
            ax.plot([first["x"], second["x"]], [first["y"], second["y"]], color=colour, linewidth=0.6, alpha=0.6)
        for point in points:
            ax.scatter(point["x"], point["y"], s=14, color=GOLD_COLOURS.get(point["gold"], "tab:gray"))
            ax.annotate(str(point["pair"]), (point["x"], point["y"]), fontsize=5)
        ax.set(title=label, xticks=[], yticks=[])
    handles = _gold_legend(sorted({p["gold"] for _, payload in runs for p in payload["points"]}))
    axes[0].legend(handles=handles, fontsize=6, loc="best")
    figure.suptitle("t-SNE of STS-B test pairs by gold score")
    return figure


def _gold_legend(golds):
    from matplotlib.lines import Line2D

    return [Line2D([], [], marker="o", linestyle="", color=GOLD_COLOURS.get(g, "tab:gray"), label=f"gold {g}")
            for g in golds]


def draw_fewshot(runs: list[tuple[str, dict]]):
    first = runs[0][1]
    configured = first["provenance"]["config"].get("settings", {}).get("tasks", [])
    tasks = [t for t in configured if t in first["results"]] or [t for t in first["results"] if t != "avg"]
    figure, axes = _grid(len(tasks), width=3.2)
    for ax, task in zip(axes, tasks):
        data = [payload["results"][task]["accs"] for _, payload in runs if task in payload["results"]]
        names = [label for label, payload in runs if task in payload["results"]]
        positions = np.arange(1, len(data) + 1)
        if all(len(set(values)) > 1 for values in data):
            ax.violinplot(data, positions=positions, showmeans=True)
        else:  # a violin needs spread; identical accuracies are shown as points
            for position, values in zip(positions, data):
                ax.scatter([position] * len(values), values, s=8)
        ax.set_xticks(positions, names, rotation=30, ha="right", fontsize=6)
        ax.set(title=task, ylabel="accuracy")
    shots = runs[0][1]["results"][tasks[0]]["shots"]
    figure.suptitle(f"Few-shot transfer ({shots} examples per class, one run per seed)")
    return figure


def draw_align_uniform(runs: list[tuple[str, dict]]):
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(5, 4))
    for label, payload in runs:
        x, y = payload["results"]["uniform"]["reported"], payload["results"]["align"]["reported"]
        ax.scatter(x, y, s=20)
        ax.annotate(label, (x, y), fontsize=6)
    ax.set(xlabel="uniformity  (log E exp(-2 d^2), lower is better)", ylabel="alignment  (E d^2, lower is better)",
           title="Alignment and uniformity on STS-B")
    return figure


def draw_anisotropy(runs: list[tuple[str, dict]]):
    import matplotlib.pyplot as plt

    kinds = [("sentence", "sentence embedding"), ("static_sentence", "static token avg."),
             ("static_token", "static token matrix")]
    figure, ax = plt.subplots(figsize=(max(5, 1.2 * len(runs) + 2), 4))
    positions = np.arange(len(runs))
    width = 0.8 / len(kinds)
    for offset, (key, name) in enumerate(kinds):
        values = [payload["results"][key]["reported"] for _, payload in runs]
        ax.bar(positions + offset * width, values, width, label=name)
    ax.set_xticks(positions + width, [label for label, _ in runs], rotation=30, ha="right", fontsize=6)
    ax.set(ylabel="mean pairwise cosine", title="Anisotropy")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never hides data
    return figure


def draw_figure(name: str, metrics_files: list[Path], out_prefix: Path, context: dict) -> dict:
    """Draw figure ``name`` from ``metrics_files`` into ``<out_prefix>.png``, ``.pdf`` and ``.json``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entry = registry.figure(name)  # raises on an unknown figure, naming the known ones
    if not metrics_files:
        raise ValueError(f"figure '{name}': no metrics files to draw (no run has suite '{entry.suite}')")
    prov = Provenance(step="figure", config={"figure": name, **context})
    runs = []
    for path in metrics_files:
        payload = read_json(path)
        if payload.get("suite") != entry.suite:
            raise ValueError(f"{path}: a '{payload.get('suite')}' metrics file, figure '{name}' needs suite "
                             f"'{entry.suite}'")
        prov.add_input(path, "metrics")
        runs.append((run_label(payload, context.get("stands_in", {})), payload))
    figure = registry.load_implementation(entry.implementation)(runs)
    if any(payload.get("data", {}).get("synthetic") for _, payload in runs):
        figure.text(0.01, 0.005, "SYNTHETIC inputs (demo): shows the pipeline, not the paper", fontsize=6,
                    color="tab:red")
    figure.tight_layout()
    outputs = {}
    for extension, metadata in (("png", {"Software": None}), ("pdf", {"CreationDate": None, "Producer": None})):
        target = Path(f"{out_prefix}.{extension}")
        with atomic_path(target, suffix=f".{extension}") as tmp:
            figure.savefig(tmp, format=extension, dpi=150, metadata=metadata)
        outputs[extension] = {"path": str(target), "sha256": sha256_file(target), "bytes": target.stat().st_size}
    plt.close(figure)
    record = {"figure": name, "runs": [label for label, _ in runs], "outputs": outputs, "provenance": prov.finish()}
    atomic_write_json(Path(f"{out_prefix}.json"), record)
    return record
