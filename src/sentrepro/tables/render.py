"""Render a built table: long CSV, per-seed CSV, Markdown, LaTeX (booktabs) and HTML (for the report).

Every rendering shows, per cell, our number (the spec's headline seed statistic), the published number
(with the paper's ± and footnote mark) and Δ = ours − paper (none on synthetic data: the cell says
"synthetic" instead, and the CSV keeps the paper's number); then the same cells with the other seed
statistic (mean ± std where the headline is best-of-N, best-of-N where it is the mean). The caption
says which is which, how many seeds, which backbones stood in for the paper's, and which inputs were
synthetic. The long CSV (header ``table,row,column,value,std,n,reported,provenance``) is what
``sentrepro audit`` reads; the per-seed CSV lets anyone recompute either statistic.
"""

from __future__ import annotations

import csv
import html
import io
import re
from pathlib import Path

from sentrepro.files import atomic_write_text
from sentrepro.tables.build import CSV_HEADER, Cell, TableResult

SEEDS_HEADER = ["table", "row", "column", "seed", "value", "selected", "metrics_file", "in_table", "statistic"]
SYNTHETIC_NOTE = "synthetic, no Δ"
STAND_IN_NOTE = "stand-in, no Δ"


def no_delta_note(cell: Cell) -> str:
    """Why a cell with both numbers shows no Δ: synthetic data, or a stand-in backbone (another model)."""
    if cell.summary is None:
        return ""
    return SYNTHETIC_NOTE if cell.synthetic else STAND_IN_NOTE if cell.stand_in else ""


# The names of the two seed statistics a table shows: its headline's and the second table's (the other one).
STAT_NAMES = {"best": "best of N", "mean": "mean ± std"}


def fmt(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


# --- long CSV -----------------------------------------------------------------------------------


def to_csv(result: TableResult) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for c in result.cells:
        writer.writerow([c.table, c.row, c.column, fmt(c.value, c.digits), fmt(c.std, c.digits), c.n,
                         fmt(c.reported.value if c.reported else None, c.digits), ";".join(c.sources())])
    return buffer.getvalue()


def to_seeds_csv(result: TableResult) -> str:
    """One line per (cell, seed): the raw numbers both statistics are computed from."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SEEDS_HEADER)
    for c in result.cells:
        for seed, value in c.per_seed.items():
            selected = c.summary is not None and c.summary.best_seed == seed and c.summary.best is not None
            writer.writerow([c.table, c.row, c.column, "" if seed is None else seed, f"{value:.4f}",
                             int(selected), c.files[seed], 1, ""])
        for seed, value in c.extra_seeds.items():  # seeds the paper's statistic of this row uses
            writer.writerow([c.table, c.row, c.column, "" if seed is None else seed, f"{value:.4f}", 0, "", 0, ""])
        for name, value in paper_statistic_values(c).items():
            writer.writerow([c.table, c.row, c.column, "", f"{value:.4f}", "", "", "", name])
    return buffer.getvalue()


def paper_statistic_values(cell: Cell) -> dict[str, float]:
    """For a row whose paper number is another statistic than the table's (ConPVP Table 3's † PromptBERT
    rows: PromptBERT's mean of 10 seeds beside best of 4): both statistics of our runs, by name."""
    statistic = cell.reported.statistic if cell.reported else None
    if not statistic or cell.summary is None:
        return {}
    values = {**cell.per_seed, **cell.extra_seeds}
    ordered = sorted(values, key=lambda s: -1 if s is None else s)[: statistic["seeds"]]
    table_stat = "best" if cell.statistic == "best" else "mean"
    ours = cell.summary.best if table_stat == "best" and cell.summary.best is not None else cell.summary.stat(table_stat)
    return {f"{STAT_NAMES[table_stat]}, N = {cell.summary.n} (this table)": ours,
            f"mean of {len(ordered)} seeds (the paper's statistic for this row)":
                sum(values[s] for s in ordered) / len(ordered)}


# --- cell text ----------------------------------------------------------------------------------


def alternative_statistic(result: TableResult) -> str:
    """The seed statistic shown in the second table: the one the headline is not."""
    return "mean" if result.spec["statistic"] == "best-of-n" else "best"


def _statistic(cell: Cell, statistic: str | None) -> str:
    """The statistic to show: the asked one, unless the cell's column fixes its own."""
    return cell.statistic if statistic is None or cell.forced else statistic


def ours_text(cell: Cell, statistic: str | None = None, pm: str = "±") -> str:
    """Our number as a statistic (default: the cell's headline), '–' when not run."""
    statistic = _statistic(cell, statistic)
    if cell.summary is None:
        return "–"
    if statistic == "best":
        value = cell.summary.best if cell.summary.best is not None else cell.summary.max
        return fmt(value, cell.digits)
    if statistic == "mean":
        text = fmt(cell.summary.mean, cell.digits)
        return text + (f" {pm}{fmt(cell.summary.std, cell.digits)}" if cell.summary.std is not None else "")
    value = cell.summary.stat(statistic)
    return "–" if value is None else fmt(value, cell.digits)  # e.g. the std of a single seed


def paper_text(cell: Cell, pm: str = "±") -> str:
    if cell.reported is None or cell.reported.value is None:
        return ""
    text = fmt(cell.reported.value, cell.digits)
    if cell.reported.std is not None:
        text += f" {pm}{fmt(cell.reported.std, cell.digits)}"
    return text + (cell.reported.mark or "")


def delta_text(cell: Cell, statistic: str | None = None) -> str:
    """Δ = ours − paper as text; empty when either is missing or ours is on synthetic data or a stand-in."""
    statistic = _statistic(cell, statistic)
    if (cell.summary is None or cell.reported is None or cell.reported.value is None or cell.synthetic
            or cell.stand_in):
        return ""
    ours = cell.summary.best if statistic == "best" else cell.summary.stat(statistic)
    if statistic == "best" and ours is None:
        ours = cell.summary.max
    return "" if ours is None else f"{ours - cell.reported.value:+.{cell.digits}f}"


def cell_text(cell: Cell | None, statistic: str | None = None) -> str:
    """'ours (paper; Δ ±d)' as plain text; 'ours (paper; synthetic, no Δ)' on synthetic data."""
    if cell is None:
        return ""
    text = ours_text(cell, statistic)
    paper = paper_text(cell)
    if paper:
        delta = delta_text(cell, statistic)
        note = "Δ " + delta if delta else no_delta_note(cell)
        text += f" ({paper}{'; ' + note if note else ''})"
    return text


def _text_or_dash(cell: Cell | None, statistic: str | None, reported_only: bool) -> str:
    """A cell's text; a cell with neither our number nor the paper's is '–' (not run), or empty in a
    reported-only row (a column the paper does not print)."""
    if cell is None:
        return "" if reported_only else "–"
    return cell_text(cell, statistic)


def _grid(result: TableResult) -> dict[tuple[str, str], Cell]:
    return {(c.row, c.column): c for c in result.cells}


def _has_spread(result: TableResult) -> bool:
    """Whether a second table (the other seed statistic) says anything: some cell of a column that
    does not fix its statistic has more than one seed."""
    return any(c.n > 1 and not c.forced for c in result.cells)


# --- captions -----------------------------------------------------------------------------------


def select_label(spec: dict) -> str:
    """The column label of the metric best-of-N ranks seeds by (its key when no column shows it)."""
    for column in spec["columns"]:
        if column.get("key", spec.get("key")) == spec.get("select_by"):
            return column["label"]
    return str(spec.get("select_by"))


def statistic_sentence(result: TableResult) -> str:
    spec = result.spec
    ns = sorted({c.n for c in result.cells if c.n})
    n_text = "N = " + "/".join(str(n) for n in ns) if ns else "no runs yet"
    cap = f", at most the {spec['max_seeds']} lowest seeds" if spec.get("max_seeds") else ""
    forced = [c["label"] for c in spec["columns"] if c.get("stat")]
    forced_text = (f" Columns {', '.join(forced)} show the named statistic over seeds." if forced else "")
    second = _has_spread(result)
    if spec["statistic"] == "best-of-n":
        return (f"Ours: best of N seeds ({n_text}{cap}): the seed with the highest {select_label(spec)} is chosen "
                f"once per row and every cell of the row is that one run."
                + (" The second table shows the same cells as mean ± population std (ddof=0) over the seeds."
                   if second else "") + forced_text)
    select = (f"the seed with the highest {select_label(spec)}" if spec.get("select_by")
              else "the highest value of each cell")
    return (f"Ours: mean ± population std (ddof=0) over N seeds ({n_text}{cap})."
            + (f" The second table shows best-of-N ({select}) for the same cells." if second else "") + forced_text)


def caption_paragraphs(result: TableResult, description: str, experiment: str, csv_name: str) -> list[str]:
    """The caption, paragraph by paragraph: what the table shows, how each number was computed."""
    from sentrepro.planning.reported import load_reported

    reported = load_reported()
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", description.strip()) if p.strip()]
    if result.stale:
        paragraphs.insert(0, "STALE: cells of this table come from outputs written by code that has changed since "
                          "(rerun the workflow to refresh them): " + "; ".join(
                              f"{path}: {what}" for path, what in result.stale.items()) + ".")
    paragraphs.append(f"Experiment `{experiment}`. {statistic_sentence(result)} Each cell: ours (paper; "
                      f"Δ = ours − paper; no Δ where ours is computed on synthetic data). – = not run in this "
                      f"experiment.")
    for column, rows in result.incomplete.items():
        missing = sorted({name for names in rows.values() for name in names})
        paragraphs.append(f"{column} is left empty in rows {', '.join(sorted(rows))}: they lack "
                          f"{', '.join(missing)}, so an average of theirs would not be the average the column "
                          f"(and the paper) takes over all its columns.")
    differing = {}
    for c in result.cells:
        if c.reported and c.reported.statistic:
            differing.setdefault(c.row, c.reported.statistic)
    for row, statistic in differing.items():
        paragraphs.append(f"{row}: the paper's number is {statistic.get('what', 'another statistic')} "
                          f"({statistic.get('where', '')}); this table's statistic differs, so its Δ compares "
                          f"unlike statistics. `{csv_name.removesuffix('.csv')}.seeds.csv` gives both statistics "
                          f"of our runs for this row (mean of {statistic['seeds']} seeds where the runs exist).")
    entries = sorted({c.reported.entry for c in result.cells if c.reported})
    for entry in entries:
        info = reported[entry]
        paragraphs.append(f"Paper numbers ({entry}): {info['paper']}, {info['file']}, {info['where']}; "
                          f"{info['statistic']}.")
    marks: dict[str, str] = {}
    for c in result.cells:
        if c.reported and c.reported.mark:
            marks[c.reported.mark] = c.reported.mark_meaning or ""
    if marks:
        paragraphs.append("Marks: " + "; ".join(f"{m} {meaning}" for m, meaning in marks.items()) + ".")
    notes = {f"{c.reported.row} ({c.reported.where})": c.reported.note
             for c in result.cells if c.reported and c.reported.note}
    if notes:
        paragraphs.append("On the paper's numbers: " + "; ".join(f"{row}: {note}" for row, note in notes.items()) + ".")
    std_sources = {c.reported.row: c.reported.std_source for c in result.cells if c.reported and c.reported.std_source}
    if std_sources:
        paragraphs.append("Published ± not in the paper text: " + "; ".join(
            f"{row}: from {source}" for row, source in std_sources.items()) + ".")
    if any(only for _, _, only in result.rows):
        paragraphs.append("Rows marked (reported only) are methods this workflow does not run; they show the "
                          "published numbers for comparison.")
    if result.stand_ins:
        paragraphs.append("Stand-ins: " + "; ".join(f"{b} fills the {', '.join(p)} cells"
                                                    for b, p in sorted(result.stand_ins.items()))
                          + " (a reduced experiment: not the paper's backbones).")
    if result.subsets:
        paragraphs.append("SUBSAMPLED inputs: " + "; ".join(
            f"the {suite} metrics scored at most {n} examples per data set (evaluation.{suite}.max_samples)"
            for suite, n in sorted(result.subsets.items())) + ", a reduced experiment.")
    if result.precisions:
        paragraphs.append("PRECISION differs from the authors': " + "; ".join(
            f"{method} trained in {'/'.join(info['used'])}, the authors in {info['authors']}"
            for method, info in result.precisions.items())
                          + " (train.json `precision`; training.precision, and a CPU computes in fp32).")
    if result.synthetic:
        paragraphs.append(f"SYNTHETIC inputs: {', '.join(result.synthetic)} are fixtures generated by the project "
                          f"(no offline copy of the real data): those numbers show that the pipeline works, not "
                          f"what the paper measured.")
    paragraphs.append(f"Every cell is traceable to its checkpoint, data and code: "
                      f"`sentrepro audit {csv_name} \"<row>\" \"<column>\"`.")
    return paragraphs


# --- Markdown -----------------------------------------------------------------------------------


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _md_grid(result: TableResult, statistic: str | None) -> list[str]:
    grid = _grid(result)
    lines = ["| Model | " + " | ".join(_md_escape(c) for c in result.columns) + " |",
             "|---|" + "---:|" * len(result.columns)]
    group = None
    for label, row_group, only in result.rows:
        if row_group and row_group != group:
            lines.append(f"| *{_md_escape(row_group)}* |" + " |" * len(result.columns))
        group = row_group
        texts = [_md_escape(_text_or_dash(grid.get((label, column)), statistic, only)) for column in result.columns]
        lines.append(f"| {_md_escape(label)} | " + " | ".join(texts) + " |")
    return lines


def to_markdown(result: TableResult, paragraphs: list[str]) -> str:
    spec = result.spec
    lines = [f"## {spec['title']}", ""]
    for paragraph in paragraphs:
        lines += [paragraph, ""]
    lines += _md_grid(result, None)
    if _has_spread(result):
        alternative = alternative_statistic(result)
        lines += ["", f"### Same cells, {STAT_NAMES[alternative]} over seeds", ""]
        lines += _md_grid(result, alternative)
    for note in spec.get("notes", []):
        lines += ["", f"Note: {note}"]
    return "\n".join(lines) + "\n"


# --- LaTeX (booktabs) ---------------------------------------------------------------------------

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "†": r"\dag{}", "‡": r"\ddag{}", "♡": r"$^\heartsuit$", "♣": r"$^\clubsuit$", "±": r"$\pm$",
                  "Δ": r"$\Delta$", "–": "--", "−": "$-$", "×": r"$\times$", "“": "``", "”": "''", "`": "",
                  "·": r"$\cdot$", "≤": r"$\le$"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex_tabular(result: TableResult, statistic: str | None) -> list[str]:
    grid = _grid(result)
    width = len(result.columns)
    lines = [r"\begin{tabular}{l" + "r" * width + "}", r"\toprule",
             "Model & " + " & ".join(latex_escape(c) for c in result.columns) + r" \\", r"\midrule"]
    group = None
    for label, row_group, only in result.rows:
        if row_group and row_group != group:
            if group is not None:
                lines.append(r"\midrule")
            lines.append(rf"\multicolumn{{{width + 1}}}{{l}}{{\textit{{{latex_escape(row_group)}}}}} \\")
        group = row_group
        texts = []
        for column in result.columns:
            cell = grid.get((label, column))
            if cell is None:
                texts.append(latex_escape(_text_or_dash(None, statistic, only)))
                continue
            text = latex_escape(ours_text(cell, statistic))
            paper = paper_text(cell)
            if paper:
                delta = delta_text(cell, statistic)
                note = r"; $\Delta$" + delta if delta else (f"; {no_delta_note(cell).split(',')[0]}"
                                                            if no_delta_note(cell) else "")
                text += r" {\scriptsize(" + latex_escape(paper) + note + ")}"
            texts.append(text)
        lines.append(latex_escape(label) + " & " + " & ".join(texts) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return lines


def to_latex(result: TableResult, paragraphs: list[str]) -> str:
    """A booktabs table environment (and the second statistic's table); needs \\usepackage{booktabs}."""
    spec = result.spec
    caption = latex_escape(spec["title"] + ". " + " ".join(paragraphs))
    lines = [f"% {spec['name']}: generated by sentrepro (needs \\usepackage{{booktabs}}); do not edit",
             r"\begin{table}[t]", r"\centering", r"\small", r"\resizebox{\linewidth}{!}{%"]
    lines += _latex_tabular(result, None)
    lines += ["}", rf"\caption{{{caption}}}", rf"\label{{tab:{spec['name']}}}", r"\end{table}"]
    if _has_spread(result):
        alternative = alternative_statistic(result)
        lines += ["", r"\begin{table}[t]", r"\centering", r"\small", r"\resizebox{\linewidth}{!}{%"]
        lines += _latex_tabular(result, alternative)
        lines += ["}", rf"\caption{{{latex_escape(spec['title'])}: the same cells, "
                       rf"{latex_escape(STAT_NAMES[alternative])} over seeds.}}",
                  rf"\label{{tab:{spec['name']}-{alternative}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


# --- HTML (embedded in the Snakemake report) ----------------------------------------------------

_CSS = ("body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse;margin:8px 0}"
        "th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child"
        "{text-align:left}thead th{border-bottom:2px solid #333}.group td{font-style:italic;background:#f4f4f4}"
        ".paper{color:#555;font-size:11px}.neg{color:#b00}.pos{color:#070}.only td{color:#777}")


def _html_grid(result: TableResult, statistic: str | None) -> list[str]:
    grid = _grid(result)
    out = ["<table>", "<thead><tr><th>Model</th>" + "".join(f"<th>{html.escape(c)}</th>" for c in result.columns)
           + "</tr></thead>", "<tbody>"]
    group = None
    for label, row_group, only in result.rows:
        if row_group and row_group != group:
            out.append(f'<tr class="group"><td colspan="{len(result.columns) + 1}">{html.escape(row_group)}</td></tr>')
        group = row_group
        cells = []
        for column in result.columns:
            cell = grid.get((label, column))
            if cell is None:
                cells.append(f"<td>{_text_or_dash(None, statistic, only)}</td>")
                continue
            text = html.escape(ours_text(cell, statistic))
            paper = paper_text(cell)
            if paper:
                delta = delta_text(cell, statistic)
                css = "neg" if delta.startswith("-") else "pos"
                note = (f' <span class="{css}">Δ {delta}</span>' if delta else
                        (f" {html.escape(no_delta_note(cell))}" if no_delta_note(cell) else ""))
                text += f'<br><span class="paper">{html.escape(paper)}{note}</span>'
            cells.append(f"<td>{text}</td>")
        row_class = ' class="only"' if only else ""
        out.append(f"<tr{row_class}><td>{html.escape(label)}</td>{''.join(cells)}</tr>")
    out += ["</tbody>", "</table>"]
    return out


def to_html(result: TableResult, paragraphs: list[str]) -> str:
    spec = result.spec
    body = [f"<h2>{html.escape(spec['title'])}</h2>"]
    body += [f"<p>{html.escape(p)}</p>" for p in paragraphs]
    body += _html_grid(result, None)
    if _has_spread(result):
        alternative = alternative_statistic(result)
        body.append(f"<h3>Same cells, {html.escape(STAT_NAMES[alternative])} over seeds</h3>")
        body += _html_grid(result, alternative)
    body += [f"<p>Note: {html.escape(note)}</p>" for note in spec.get("notes", [])]
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html.escape(spec["title"])
            + f"</title><style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


# --- all outputs --------------------------------------------------------------------------------

OUTPUT_SUFFIXES = (".csv", ".seeds.csv", ".md", ".tex", ".html")


def write_outputs(result: TableResult, out_prefix: Path, experiment: str, description: str) -> list[Path]:
    """Write ``<prefix>.csv/.seeds.csv/.md/.tex/.html`` atomically; return their paths."""
    out_prefix = Path(out_prefix)
    csv_name = f"{out_prefix}.csv"
    paragraphs = caption_paragraphs(result, description, experiment, csv_name)
    texts = {".csv": to_csv(result), ".seeds.csv": to_seeds_csv(result), ".md": to_markdown(result, paragraphs),
             ".tex": to_latex(result, paragraphs), ".html": to_html(result, paragraphs)}
    paths = []
    for suffix in OUTPUT_SUFFIXES:
        path = Path(f"{out_prefix}{suffix}")
        atomic_write_text(path, texts[suffix])
        paths.append(path)
    return paths
