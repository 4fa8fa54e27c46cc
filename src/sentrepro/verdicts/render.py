"""Render the verdicts: CSV (one row per claim, auditable), Markdown and HTML (for the report).

Every row shows the claim, its source line, ours (a − b with both intervals), the paper's (a − b as
its tables print it, and the magnitude its text states), the verdict with what decided it, and where
the claimed magnitude lies against our intervals. The summary counts only claims judged on the
papers' backbones and real data (stand-in/synthetic rows are "not judged"), splits "not run" by
cause, gives sign and magnitude separately, and states the chance of a false "reversed" over all
claims. A second section lists, for every reproduced cell of the tables the claims read, whether it
is within the noise of the paper's number.
"""

from __future__ import annotations

import csv
import html
import io
import math
from pathlib import Path

from sentrepro.files import atomic_write_text
from sentrepro.verdicts.stats import MIN_SEEDS, false_call_bound
from sentrepro.verdicts import page
from sentrepro.verdicts.build import (
    NOT_DECIDABLE,
    NOT_JUDGED,
    NOT_RUN,
    NOT_RUN_CAUSES,
    UNDERPOWERED,
    ClaimResult,
    VerdictResult,
    judged,
    row_provenance,
)

CSV_HEADER = ["claim", "paper", "source", "text", "direction", "claimed_magnitude", "a", "b", "statistic",
              "ours_a", "ours_b", "ours_delta", "seed_low", "seed_high", "seed_method", "items_low", "items_high",
              "items_method", "paper_a", "paper_b", "paper_delta", "verdict", "why", "not_run_cause", "computed_verdict",
              "kind_a", "kind_b", "margin", "mdd", "magnitude", "labels", "notes", "p_value", "holm", "provenance"]
CELLS_HEADER = ["table", "row", "column", "ours", "ours_std", "n", "paper", "paper_std", "delta", "combined_sd",
                "within_noise", "basis"]

HOW_TO_READ = (
    "How to read: each row is one comparative claim, a − b. *Ours* is the difference of the two cells' "
    "headline seed statistic (as the tables show them) with two 95% intervals: **seeds** (a trained side "
    f"needs ≥ {MIN_SEEDS} seeds; two trained sides: Welch's t for means, and for best-of-N a bootstrap over "
    "seeds that must agree with Welch's t on the same seeds' means, for a std or range the F interval of their "
    "variance ratio; a trained side against a frozen model or "
    "a published number: a one-sample interval against that constant) and **items** (a "
    "paired bootstrap over the STS test pairs: both sides scored on the same resampled pairs). **holds**: "
    "every interval excludes 0 in the claimed direction (an \"at least d\" claim: d; a \"no gain\" claim: "
    "every upper end at or below its stated margin); **reversed**: the opposite; **inconclusive**: an "
    "interval straddles; **inconclusive — underpowered**: the minimum detectable difference at these seeds "
    "(80% power) exceeds the paper's own difference, so even an exact reproduction would be inconclusive; "
    f"**not decidable**: a trained side has fewer than {MIN_SEEDS} seeds; **not judged**: a stand-in backbone or "
    "synthetic data (computed for the code path, never counted); **not run**: with its cause. *magnitude* "
    "says where the paper's stated difference lies against each interval, apart from the sign.")


def _f(value: float | None, sign: bool = False, digits: int = 2) -> str:
    """A number with the decimals its table prints (``digits``: anisotropy 4, scores 2)."""
    if value is None:
        return ""
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _interval(i, digits: int = 2) -> str:
    return "" if i is None else f"[{_f(i.low, True, digits)}, {_f(i.high, True, digits)}]"


def _method_name(method: str) -> str:
    return {"welch-t": "seeds (Welch t)", "seed-bootstrap": "seeds (bootstrap)",
            "one-sample-t": "seeds (one-sample t)", "one-sample-bootstrap": "seeds (one-sample bootstrap)",
            "paired-bootstrap": "items (paired bootstrap)",
            "item-bootstrap-vs-constant": "items (bootstrap against a published constant)",
            "exact": "exact (whole population)"}.get(method, method)


def magnitude_text(r: ClaimResult) -> str:
    if r.claim.get("magnitude") is None or r.ours_delta is None:
        return ""
    if r.partial:
        return "n/a (partial average)"
    if not r.magnitude:
        return "no interval"
    return "; ".join(f"{_method_name(m)}: {position}" for m, position in r.magnitude.items())


def claimed_text(r: ClaimResult) -> str:
    c = r.claim
    magnitude = c.get("magnitude")
    direction = {"greater": "a > b", "less": "a < b", "no_gain": "a ≤ b"}[c["direction"]]
    text = direction + ("" if magnitude is None else f", by {_f(magnitude, digits=r.digits)}")
    if c["direction"] == "no_gain":
        text += f" (margin {float(c.get('margin', 0.0)):.2f})"
    if c.get("at_least") is not None:
        text += f" (at least {c['at_least']:.2f})"
    return text


def ours_text(r: ClaimResult) -> str:
    if r.ours_delta is None:
        return "–"
    kinds = "" if {r.a.kind, r.b.kind} == {"trained"} else f", {r.a.kind} vs {r.b.kind}"
    d = r.digits
    parts = [f"{_f(r.ours_delta, True, d)} ({_f(r.a.ours, digits=d)} vs {_f(r.b.ours, digits=d)}, "
             f"{r.a.statistic or r.b.statistic}{kinds})"]
    parts.append(f"seeds {_interval(r.seed, d)}" if r.seed else "seeds: –")
    parts.append(f"items {_interval(r.items, d)}" if r.items else "items: –")
    if r.exact:
        parts.append("exact: both sides over a whole population")
    return "; ".join(parts)


def paper_text(r: ClaimResult) -> str:
    a, b = r.paper_values
    d = r.digits
    if r.paper_delta is None:
        return f"{_f(a, digits=d) or '–'} vs {_f(b, digits=d) or '–'}"
    return f"{_f(r.paper_delta, True, d)} ({_f(a, digits=d)} vs {_f(b, digits=d)})"


def verdict_text(r: ClaimResult) -> str:
    text = r.verdict
    if r.verdict == NOT_JUDGED:
        text += f" (computed: {r.computed})"
    if r.verdict == NOT_RUN and r.cause:
        text += f" ({r.cause})"
    if r.mdd and r.verdict not in (NOT_RUN,):
        text += f"; detectable ≥ {_f(r.mdd, digits=r.digits)}"
    if r.holm_holds is not None and r.verdict == "holds":
        text += "; holds after Holm" if r.holm_holds else "; not after Holm"
    magnitude = magnitude_text(r)
    if magnitude:
        text += f"; magnitude {magnitude}"
    return text


def claim_label(r: ClaimResult) -> str:
    return r.claim["text"] + "".join(f" [{label}]" for label in r.labels)


def notes_text(r: ClaimResult) -> str:
    return "; ".join(note_parts(r))


def gate_text(r: ClaimResult) -> str:
    """The second seed interval a verdict needs: the means of best-of-N's seeds, or a spread's variance ratio."""
    g = r.gate
    if g.method == "variance-ratio-f":
        return (f"a spread claim needs the same seeds' variance ratio to agree too: sd ratio {math.exp(g.estimate):.2f} "
                f"[{math.exp(g.low):.2f}, {math.exp(g.high):.2f}] (F interval, part of the verdict)")
    return (f"best-of-N needs its seeds' means to agree too: {_f(g.estimate, True, r.digits)} "
            f"{_interval(g, r.digits)} ({_method_name(g.method)} on the means, part of the verdict)")


def note_parts(r: ClaimResult) -> list[str]:
    """A claim's notes, each once: what decided it, the claim's own notes, why an interval is missing."""
    mean = [gate_text(r)] if r.gate else []
    parts = [n for n in (r.why,) if n] + r.notes + [n for n in (r.seed_note, r.items_note) if n] + mean
    return list(dict.fromkeys(parts))


# --- CSV -----------------------------------------------------------------------------------------------


def to_csv(result: VerdictResult) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for r in result.claims:
        c = r.claim
        d = r.digits
        writer.writerow([
            c["id"], c["paper"], f"{c['file']}:{c['line']}", c["text"], c["direction"],
            _f(c.get("magnitude"), digits=d),
            r.a.side.describe(), r.b.side.describe(), r.a.statistic or "", _f(r.a.ours, digits=d),
            _f(r.b.ours, digits=d), _f(r.ours_delta, True, d), _f(r.seed.low if r.seed else None, True, d),
            _f(r.seed.high if r.seed else None, True, d), r.seed.detail if r.seed else r.seed_note,
            _f(r.items.low if r.items else None, True, d), _f(r.items.high if r.items else None, True, d),
            r.items.detail if r.items else r.items_note,
            _f(r.paper_values[0], digits=d), _f(r.paper_values[1], digits=d),
            _f(r.paper_delta, True, d), r.verdict, r.why, r.cause, r.computed, r.a.kind or "", r.b.kind or "",
            _f(c.get("margin")), _f(r.mdd, digits=d), magnitude_text(r), "; ".join(r.labels), "; ".join(r.notes),
            "" if r.p_value is None else f"{r.p_value:.4f}", holm_text(r),
            row_provenance(r, result.claims_file)])
    return buffer.getvalue()


def holm_text(r: ClaimResult) -> str:
    """The Holm column: a judged claim that holds, still holding (or not) under Holm's correction."""
    if r.holm_holds is None:
        return ""
    return "holds" if r.holm_holds else ("not after Holm" if r.verdict == "holds" else "–")


def to_cells_csv(result: VerdictResult) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CELLS_HEADER)
    for entry in result.cells:
        c, n = entry.cell, entry.noise
        writer.writerow([c.table, c.row, c.column, _f(c.value), _f(c.std), c.n, _f(c.reported.value),
                         _f(c.reported.std), _f(n.delta, True) if n else "", _f(n.sd) if n else "",
                         ("yes" if n.within else "no") if n else "n/a", n.basis if n else entry.reason])
    return buffer.getvalue()


# --- Markdown and HTML ---------------------------------------------------------------------------------


def banner(result: VerdictResult) -> str | None:
    flagged = [r for r in result.claims if r.labels and r.ours_delta is not None]
    if not flagged:
        return None
    synthetic = any(r.synthetic for r in flagged)
    return ("**Stand-in/synthetic run.** " + ("Some rows are computed on synthetic data and " if synthetic else "")
            + f"{len(flagged)} of {len(result.claims)} rows use stand-in backbones, synthetic data or a partial "
            "average (labelled in brackets): they exercise the machinery, are \"not judged\" and are not "
            "counted: they are not a test of the papers' claims.")


def counts(result: VerdictResult) -> dict[str, int]:
    """Verdict -> number of claims (every claim once; "not judged" rows under their own key)."""
    found: dict[str, int] = {}
    for r in result.claims:
        found[r.verdict] = found.get(r.verdict, 0) + 1
    return found


def summary(result: VerdictResult) -> str:
    found = counts(result)
    judged_claims = judged(result.claims)
    sign = ", ".join(f"{found.get(k, 0)} {k}" for k in ("holds", "reversed", "inconclusive", UNDERPOWERED,
                                                          NOT_DECIDABLE))
    causes: dict[str, int] = {}
    for r in result.claims:
        if r.verdict == NOT_RUN:
            causes[r.cause] = causes.get(r.cause, 0) + 1
    not_run = ", ".join(f"{causes[c]} {c}" for c in NOT_RUN_CAUSES if causes.get(c))
    positions: dict[str, int] = {}
    for r in judged_claims:
        for position in set(r.magnitude.values()) if r.magnitude else ():
            positions[position] = positions.get(position, 0) + 1
    stated = sum(1 for r in judged_claims if r.claim.get("magnitude") is not None)
    magnitude = (f"Magnitude, apart from the sign ({stated} judged claims state one): "
                 + (", ".join(f"{n} with the stated size {p} an interval" if p == "inside" else f"{n} {p} than stated"
                              for p, n in sorted(positions.items())) or "none tested") + ".")
    multiplicity = multiplicity_text(result)
    return (f"{len(result.claims)} claims. Judged on the papers' backbones and real data: {len(judged_claims)} — "
            f"{sign}. "
            f"Not judged (stand-in or synthetic, computed for the code path only, not counted): "
            f"{found.get(NOT_JUDGED, 0)}. Not run: {found.get(NOT_RUN, 0)}" + (f" ({not_run})" if not_run else "")
            + f". {len(result.not_checked)} statements not checked (listed below). {magnitude}"
            + (f" {multiplicity}" if multiplicity else ""))


def multiplicity_text(result: VerdictResult) -> str:
    """Over the judged claims only, as an upper bound; empty when nothing is judged (no figure for nothing)."""
    family = judged(result.claims)
    if not family:
        return ""
    level = result.settings["bootstrap"]["level"]
    tail = (1 - level) / 2
    held = [r for r in family if r.verdict == "holds"]
    return (f"Multiplicity: {len(family)} judged claims, each tested at one tail of {tail:.1%} without correction: "
            f"the chance of at least one false call among them is at most {false_call_bound(len(family), level):.0%} "
            f"(the union bound: it needs no independence, and the per-task claims share runs; {tail:.1%} per "
            f"claim is itself reached only at a true difference exactly at the claim's threshold). Under Holm's "
            f"correction over these {len(family)} claims (family-wise {tail:.1%}), "
            f"{sum(1 for r in held if r.holm_holds)} of the {len(held)} that hold still hold (column holm).")


def settings_text(result: VerdictResult) -> str:
    b = result.settings["bootstrap"]
    return (f"Paired bootstrap: {b['item_resamples']} resamples (seed {b['item_seed']}); bootstrap over seeds: "
            f"{b['seed_resamples']} resamples (seed {b['seed_seed']}); level {b['level']}. Cell noise: "
            f"|ours − paper| ≤ 1.96 · √(paper se² + our se²) + half the printed last digit, se the standard error "
            f"of a mean (one run's std for best-of-N, 0 for a deterministic number); a missing std is the suite's "
            f"spread, the median of the papers' printed stds: "
            + ", ".join(f"{suite}/{key} {v:.2f} (n={c})" for (suite, key), (v, c) in result.spreads.items())
            + f". Claims: {result.claims_file.split('#')[0]}.")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(result: VerdictResult) -> str:
    lines = [f"# Reproduction verdicts: {result.experiment}", ""]
    if banner(result):
        lines += [banner(result), ""]
    lines += [summary(result), "", HOW_TO_READ, "",
              "| id | claim | source | claimed | ours: a − b; 95% intervals | paper: a − b | verdict |",
              "|---|---|---|---|---|---|---|"]
    for r in result.claims:
        c = r.claim
        lines.append("| " + " | ".join(_md(x) for x in [
            c["id"], claim_label(r), f"{c['file']}:{c['line']}", claimed_text(r), ours_text(r), paper_text(r),
            f"**{verdict_text(r)}**"]) + " |")
    noted = [r for r in result.claims if notes_text(r)]
    if noted:
        lines += ["", "Notes:", ""] + [f"- `{r.claim['id']}`: {notes_text(r)}" for r in noted]
    if result.not_checked:
        lines += ["", "## Statements not checked", ""]
        lines += [f"- `{e['id']}` ({e['file']}:{e['line']}): “{e['quote']}” — {e['why']}" for e in result.not_checked]
    lines += ["", "## Cells within the noise of the paper's number", "",
              "| table | row | column | ours | paper | ours − paper | combined sd | within noise |",
              "|---|---|---|---|---|---|---|---|"]
    for entry in result.cells:
        c, n = entry.cell, entry.noise
        lines.append("| " + " | ".join(_md(x) for x in [
            c.table, c.row, c.column, _f(c.value), _f(c.reported.value), _f(n.delta, True) if n else "",
            _f(n.sd) if n else "", ("yes" if n.within else "no") if n else f"n/a ({entry.reason})"]) + " |")
    lines += ["", settings_text(result), ""]
    return "\n".join(lines)


def _h(text: str) -> str:
    return html.escape(text, quote=True)


def _columns(r: ClaimResult) -> tuple[str, str, str, str, str]:
    """(claim, claimed, ours, paper, verdict detail) texts of a claim's page row."""
    detail = verdict_text(r)[len(r.verdict):].lstrip(" ;")
    return claim_label(r), claimed_text(r), ours_text(r), paper_text(r), detail


def _cells_html(result: VerdictResult) -> list[str]:
    out = ["<table><tr><th>table</th><th>row</th><th>column</th><th>ours</th><th>paper</th><th>ours − paper</th>"
           "<th>combined sd</th><th>within noise</th></tr>"]
    for entry in result.cells:
        c, n = entry.cell, entry.noise
        out.append("<tr>" + "".join(f"<td>{_h(x)}</td>" for x in [
            c.table, c.row, c.column, _f(c.value, digits=c.digits), _f(c.reported.value, digits=c.digits),
            _f(n.delta, True, c.digits) if n else "", _f(n.sd, digits=c.digits) if n else "",
            ("yes" if n.within else "no") if n else f"n/a ({entry.reason})"]) + "</tr>")
    return out + ["</table>"]


def to_html(result: VerdictResult, forest_name: str = "verdicts" + page.FOREST_SUFFIX) -> str:
    """The verdict page (:mod:`sentrepro.verdicts.page`): grouped, badged, notes once, forest plot inlined
    (and linked: ``forest_name``, the SVG written beside it)."""
    return page.to_html(result, summary=summary(result), how_to_read=HOW_TO_READ.replace("**", "").replace("*", ""),
                        banner=banner(result), settings=settings_text(result), cells_html=_cells_html(result),
                        columns=_columns, parts=note_parts, forest_name=forest_name)


def write_outputs(result: VerdictResult, out_prefix: Path) -> list[Path]:
    """``<prefix>.md``, ``.csv``, ``.cells.csv``, ``.html`` and the forest plot ``.forest.svg`` beside the
    page, each written atomically."""
    out_prefix = Path(out_prefix)
    outputs = {".md": to_markdown(result), ".csv": to_csv(result), ".cells.csv": to_cells_csv(result),
               ".html": to_html(result, out_prefix.name + page.FOREST_SUFFIX),
               page.FOREST_SUFFIX: page.forest_svg(result)}
    paths = []
    for suffix, text in outputs.items():
        path = out_prefix.with_name(out_prefix.name + suffix)
        atomic_write_text(path, text)
        paths.append(path)
    return paths
