"""The report as one self-contained HTML document.

Styles inline, figures inline as SVG (drawn by :mod:`study.report._draw`), no script, no
font, no image and no link that leaves the file: it reads offline and prints to PDF
from a browser. Every text from the study (code names, response texts, coders) is
escaped, its control characters shown as escapes.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from study.analysis.agreement import safe
from study.report._content import TO_DO, Quote, Section, Table
from study.report._figure import Figure

STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial,
       sans-serif; color: #1a1a1a; max-width: 58rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
p.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .88rem; }
caption { caption-side: bottom; text-align: left; color: #555; font-size: .82rem;
          padding-top: .3rem; }
th, td { border: 1px solid #ccc; padding: .2rem .5rem; text-align: left;
         vertical-align: top; }
th { background: #f1f1f1; }
figure { margin: 1rem 0 1.6rem; break-inside: avoid; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #333; font-size: .88rem; }
.todo { border-left: 4px solid #E69F00; background: #fff7e6; padding: .5rem .8rem; }
.note { color: #555; font-size: .88rem; }
blockquote { margin: .6rem 0 1rem; padding: .3rem .8rem; border-left: 4px solid #56B4E9;
             white-space: pre-wrap; }
blockquote mark { background: #cde8f7; font-weight: 600; }
blockquote footer { color: #555; font-size: .85rem; white-space: normal; }
nav ol { columns: 2; }
@media print { body { margin: 0; max-width: none; } h2 { break-after: avoid; } }
"""


def _e(text: object) -> str:
    return html.escape(safe(text), quote=True)


def table_html(table: Table) -> str:
    """One table, with its title as a heading and its caption under it."""
    head = "".join(f"<th>{_e(c)}</th>" for c in table.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in table.rows
    )
    caption = f"<caption>{_e(table.caption)}</caption>" if table.caption else ""
    return (
        f'<h3 id="{_e(table.name)}">{_e(table.title)}</h3>'
        f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def figure_html(figure: Figure, svg: str) -> str:
    """One figure: the SVG with its alt text (role img, a title) and its caption."""
    alt = _e(figure.alt)
    tag_end = svg.index(">", svg.index("<svg"))
    opening = svg[:tag_end]
    labelled = f'{opening} role="img" aria-label="{alt}"><title>{alt}</title>'
    return (
        f'<figure id="{_e(figure.name)}">{labelled}{svg[tag_end + 1 :]}'
        f"<figcaption><strong>{_e(figure.title)}.</strong> {_e(figure.caption)}"
        "</figcaption></figure>"
    )


def quote_html(quote: Quote) -> str:
    """A quoted response, its marked passage in ``<mark>``, every part escaped."""
    return (
        f"<blockquote><p>{_e(quote.before)}<mark>{_e(quote.marked)}</mark>{_e(quote.after)}"
        f"</p><footer>{_e(quote.caption)}</footer></blockquote>"
    )


def section_html(section: Section, svg: Callable[[Figure], str]) -> str:
    parts = [f'<section id="{_e(section.name)}"><h2>{_e(section.title)}</h2>']
    if section.missing is not None:
        parts.append(f'<p class="todo"><strong>{TO_DO}:</strong> {_e(section.missing)}.</p>')
    parts += [f"<p>{_e(line)}</p>" for line in section.lines]
    tables = [table_html(t) for t in section.tables]
    figures = [figure_html(f, svg(f)) for f in section.figures]
    parts += figures + tables if section.figures_first else tables + figures
    parts += [quote_html(q) for q in section.quotes]
    parts += [f'<p class="note">Note: {_e(n)}</p>' for n in section.notes]
    parts.append("</section>")
    return "".join(parts)


def document(
    title: str, subtitle: str, sections: tuple[Section, ...], svg: Callable[[Figure], str]
) -> str:
    """The whole page; ``svg`` draws each figure."""
    contents = "".join(f'<li><a href="#{_e(s.name)}">{_e(s.title)}</a></li>' for s in sections)
    body = "".join(section_html(s, svg) for s in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{_e(title)}</h1><p class="meta">{_e(subtitle)}</p>'
        f"<nav><ol>{contents}</ol></nav>{body}</body></html>\n"
    )
