"""The verdict page a reader takes in: claims grouped by paper and table, the verdict as a badge, each
note said once (notes several claims of a table share go above it; long ones are folded), and a
forest plot beside the page (``verdicts.forest.svg``, also inlined): per claim the paper's difference
and ours with its intervals against zero and the claimed magnitude.

Plain HTML and hand-written SVG, no script and no external resource, so the page opens from disk, in
Snakemake's report and in a headless browser alike (``benchmarks/verdict_page.py`` renders it there).
"""

from __future__ import annotations

import html

from sentrepro.verdicts.stats import signed_magnitude
from sentrepro.planning.table_specs import load_spec
from sentrepro.verdicts.build import NOT_DECIDABLE, NOT_JUDGED, NOT_RUN, UNDERPOWERED, ClaimResult, VerdictResult

FOLD_AT = 160           # a row's notes longer than this (characters) are folded under <details>
# verdict -> (badge class, colour): green holds, red reversed, amber can't decide, grey otherwise
BADGES = {"holds": ("holds", "#1a7f37"), "reversed": ("reversed", "#cf222e"),
          "inconclusive": ("inconclusive", "#6e7781"), UNDERPOWERED: ("underpowered", "#9a6700"),
          NOT_DECIDABLE: ("not-decidable", "#9a6700"),
          NOT_JUDGED: ("not-judged", "#0969da"), NOT_RUN: ("not-run", "#8c959f")}
STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:1.5em auto;max-width:1200px;color:#1f2328;
line-height:1.4}
h1{font-size:1.5em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.6em}h3{font-size:1.05em}
table{border-collapse:collapse;font-size:90%;width:100%}td,th{border-bottom:1px solid #d0d7de;padding:4px 6px;
vertical-align:top;text-align:left}th{background:#f6f8fa}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:85%;white-space:nowrap}
.id{font-family:ui-monospace,monospace;font-size:85%;color:#57606a}.muted{color:#57606a;font-size:90%}
.shared{background:#f6f8fa;border-left:3px solid #d0d7de;padding:4px 10px;font-size:90%}
.banner{background:#ddf4ff;border:1px solid #54aeff;padding:6px 10px}
details summary{cursor:pointer;color:#0969da}figure{margin:1em 0}
"""
FOREST_SUFFIX = ".forest.svg"      # beside the page: <prefix>.forest.svg


def badge(verdict: str) -> str:
    css, colour = BADGES.get(verdict, ("other", "#6e7781"))
    return f'<span class="badge {css}" style="background:{colour}">{html.escape(verdict)}</span>'


def groups(result: VerdictResult) -> list[tuple[str, str, list[ClaimResult]]]:
    """(paper, table title, claims) in the order the claims are listed, each table once per paper."""
    found: dict[tuple[str, str], list[ClaimResult]] = {}
    for r in result.claims:
        found.setdefault((r.claim["paper"], r.claim["table"]), []).append(r)
    return [(paper, load_spec(table).get("title", table), claims) for (paper, table), claims in found.items()]


def shared_notes(claims: list[ClaimResult], parts) -> tuple[list[str], dict[str, list[str]]]:
    """Notes several claims of a group share (said once, above the group) and each claim's own rest.
    ``parts(r)`` lists a claim's note parts."""
    seen: dict[str, int] = {}
    for r in claims:
        for part in dict.fromkeys(parts(r)):
            seen[part] = seen.get(part, 0) + 1
    common = [p for p, n in seen.items() if n > 1]
    return common, {r.claim["id"]: [p for p in dict.fromkeys(parts(r)) if p not in common] for r in claims}


def folded(parts: list[str]) -> str:
    """Notes inline when short, else under a <details> that shows the first one."""
    text = "; ".join(parts)
    if len(text) <= FOLD_AT:
        return html.escape(text)
    head = parts[0] if len(parts[0]) <= FOLD_AT else parts[0][:FOLD_AT - 1] + "…"
    return (f"<details><summary>{html.escape(head)}</summary>"
            + "".join(f"<p>{html.escape(p)}</p>" for p in parts) + "</details>")


# --- the forest plot ---------------------------------------------------------------------------------

ROW, LABEL_W, PLOT_W, RIGHT_W, TOP = 22, 360, 440, 170, 54


def _plotted(result: VerdictResult) -> list[ClaimResult]:
    """The claims with a number of ours (judged or not): a claim not run has nothing to set against 0."""
    return [r for r in result.claims if r.ours_delta is not None]


def forest_svg(result: VerdictResult) -> str:
    """One row per claim with a number of ours: ours (dot) with its seed interval (thick) and items interval
    (thin), the paper's difference (open diamond) and the claimed magnitude (dashed tick), against 0.
    Each row has its own scale (claims mix STS points and anisotropy), printed at its ends."""
    rows = _plotted(result)
    width = LABEL_W + PLOT_W + RIGHT_W
    height = TOP + ROW * max(1, len(rows)) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11" role="img" '
           f'aria-label="forest plot of the claims">',
           f'<text x="4" y="16" font-size="13" font-weight="bold">Claims: ours (a − b) against the paper, '
           f'{len(rows)} with a number of ours</text>',
           f'<g transform="translate({LABEL_W},26)">'
           '<circle cx="6" cy="8" r="4" fill="#1f2328"/><text x="14" y="12">ours</text>'
           '<line x1="50" y1="8" x2="80" y2="8" stroke="#1f2328" stroke-width="4"/><text x="84" y="12">seeds</text>'
           '<line x1="124" y1="8" x2="154" y2="8" stroke="#1f2328" stroke-width="1.5"/>'
           '<text x="158" y="12">items / exact</text>'
           '<path d="M236 3 L241 8 L236 13 L231 8 Z" fill="none" stroke="#8250df" stroke-width="1.5"/>'
           '<text x="246" y="12">paper</text>'
           '<line x1="290" y1="1" x2="290" y2="15" stroke="#bf8700" stroke-dasharray="3,2"/>'
           '<text x="296" y="12">claimed size</text></g>']
    if not rows:
        out.append(f'<text x="4" y="{TOP + 14}">no claim has a number in this experiment</text>')
    for index, r in enumerate(rows):
        out += _forest_row(r, TOP + index * ROW)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _forest_row(r: ClaimResult, y: float) -> list[str]:
    target = signed_magnitude(r.claim.get("magnitude"), r.claim["direction"])
    ours = [i for i in (r.seed, r.gate, r.items, r.exact) if i is not None]
    values = [0.0] + [v for v in (r.ours_delta, r.paper_delta, target) if v is not None]
    values += [v for i in ours for v in (i.low, i.high)]
    extent = max(abs(v) for v in values) * 1.15 or 1.0

    def x(value: float) -> float:
        return LABEL_W + (value + extent) / (2 * extent) * PLOT_W

    mid, colour = y + ROW / 2, BADGES.get(r.verdict, ("", "#6e7781"))[1]
    d = r.digits
    out = [f'<g class="row"><title>{html.escape(r.claim["id"])}: {html.escape(r.verdict)}</title>',
           f'<rect x="0" y="{y}" width="{LABEL_W + PLOT_W + RIGHT_W}" height="{ROW}" '
           f'fill="{"#f6f8fa" if int(y) // ROW % 2 else "#ffffff"}"/>',
           f'<text x="4" y="{mid + 4}">{html.escape(r.claim["id"])}</text>',
           f'<line x1="{x(0):.1f}" y1="{y + 2}" x2="{x(0):.1f}" y2="{y + ROW - 2}" stroke="#8c959f"/>',
           f'<text x="{LABEL_W + 2}" y="{y + ROW - 3}" font-size="8" fill="#8c959f">{-extent:+.{d}f}</text>',
           f'<text x="{LABEL_W + PLOT_W - 2}" y="{y + ROW - 3}" font-size="8" fill="#8c959f" '
           f'text-anchor="end">{extent:+.{d}f}</text>']
    if target is not None:
        out.append(f'<line x1="{x(target):.1f}" y1="{y + 3}" x2="{x(target):.1f}" y2="{y + ROW - 3}" '
                   f'stroke="#bf8700" stroke-dasharray="3,2"/>')
    for interval, thick, dy in ((r.seed, 4, -2), (r.items or r.exact, 1.5, 4)):
        if interval is not None:
            out.append(f'<line x1="{x(interval.low):.1f}" y1="{mid + dy}" x2="{x(interval.high):.1f}" '
                       f'y2="{mid + dy}" stroke="{colour}" stroke-width="{thick}" stroke-linecap="round"/>')
    if r.paper_delta is not None:
        px = x(r.paper_delta)
        out.append(f'<path d="M{px:.1f} {mid - 5} L{px + 5:.1f} {mid} L{px:.1f} {mid + 5} L{px - 5:.1f} {mid} Z" '
                   f'fill="none" stroke="#8250df" stroke-width="1.5"/>')
    if r.ours_delta is not None:
        out.append(f'<circle cx="{x(r.ours_delta):.1f}" cy="{mid}" r="4" fill="{colour}"/>')
    out.append(f'<text x="{LABEL_W + PLOT_W + 8}" y="{mid + 4}" fill="{colour}">{html.escape(r.verdict)}</text>')
    out.append("</g>")
    return out


# --- the page ------------------------------------------------------------------------------------------


def to_html(result: VerdictResult, *, summary: str, how_to_read: str, banner: str | None, settings: str,
            cells_html: list[str], columns, parts, forest_name: str = "verdicts" + FOREST_SUFFIX) -> str:
    """The page. ``columns(r)`` gives a claim's (claim, claimed, ours, paper, verdict detail) texts and
    ``parts(r)`` its note parts (from :mod:`sentrepro.verdicts.render`, which owns their wording)."""
    title = f"Reproduction verdicts: {html.escape(result.experiment)}"
    out = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>", f"<title>{title}</title>",
           f"<style>{STYLE}</style></head><body>", f"<h1>{title}</h1>"]
    if banner:
        out.append(f'<p class="banner">{html.escape(banner.replace("**", ""))}</p>')
    out += [f"<p>{html.escape(summary)}</p>",
            f"<details><summary>How to read this page</summary><p>{html.escape(how_to_read)}</p></details>",
            f'<figure><figcaption class="muted">Forest plot (also <a href="{html.escape(forest_name)}">'
            f'{html.escape(forest_name)}</a>): '
            "per claim ours with its intervals, the paper's difference and the claimed size, against 0; each row "
            "on its own scale.</figcaption>", forest_svg(result), "</figure>"]
    paper = None
    for group_paper, table_title, claims in groups(result):
        if group_paper != paper:
            out.append(f"<h2>{html.escape(group_paper)}</h2>")
            paper = group_paper
        common, own = shared_notes(claims, parts)
        out.append(f"<h3>{html.escape(table_title)}</h3>")
        if common:
            out.append('<div class="shared">' + "<br>".join(html.escape(n) for n in common) + "</div>")
        out.append("<table><tr><th>verdict</th><th>claim</th><th>claimed</th><th>ours: a − b; 95% intervals</th>"
                   "<th>paper: a − b</th><th>detail</th><th>notes</th></tr>")
        for r in claims:
            claim, claimed, ours, paper_diff, detail = columns(r)
            c = r.claim
            out.append(f'<tr id="{html.escape(c["id"])}"><td>{badge(r.verdict)}</td>'
                       f'<td>{html.escape(claim)}<br><span class="id">{html.escape(c["id"])} · '
                       f'{html.escape(c["file"])}:{c["line"]}</span></td>'
                       f"<td>{html.escape(claimed)}</td><td>{html.escape(ours)}</td><td>{html.escape(paper_diff)}</td>"
                       f'<td class="muted">{html.escape(detail)}</td><td>{folded(own[c["id"]])}</td></tr>')
        out.append("</table>")
    if result.not_checked:
        out.append("<h2>Statements not checked</h2><ul>")
        out += [f"<li><span class='id'>{html.escape(e['id'])}</span> ({html.escape(e['file'])}:{e['line']}): "
                f"“{html.escape(e['quote'])}” — {html.escape(e['why'])}</li>" for e in result.not_checked]
        out.append("</ul>")
    out += ["<h2>Cells within the noise of the paper's number</h2>",
            "<details><summary>every reproduced cell of the tables the claims read</summary>"]
    out += cells_html
    out += ["</details>", f'<p class="muted">{html.escape(settings)}</p>', "</body></html>", ""]
    return "\n".join(out)
