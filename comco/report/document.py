"""A report as a list of blocks (headings, paragraphs, tables, figures) rendered to
Markdown beside its PNGs and to one self-contained HTML page (figures inline)."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from comco.report.tables import markdown_table, md_line, md_text

STYLE = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto;line-height:1.45}"
         "table{border-collapse:collapse;font-size:13px;margin:0.5em 0}"
         "td,th{border:1px solid #bbb;padding:2px 6px;text-align:left}"
         "td+td{white-space:nowrap}.wide{overflow-x:auto}"  # a number and its interval on one line; wide tables scroll
         "td.prose{white-space:normal;min-width:18em}"  # a question or a sentence in a cell wraps
         "img{max-width:100%}code{background:#f3f3f3}")

PROSE, PROSE_CHARS = " class='prose'", 60  # a cell longer than a number with its interval and a note


class Doc:
    """Blocks rendered to Markdown and to HTML; text may use `code`, **bold** and *italics*."""

    def __init__(self):
        self.blocks: list[tuple] = []
        self._anchors: dict[str, int] = {}

    def h(self, level: int, text: str) -> str:
        """A heading of `level` (1 = the title); returns its anchor, as GitHub spells it in
        Markdown (a repeated heading gets -1, -2, ...) and as the HTML page's id, so
        `[text](#anchor)` links to it in both."""
        base = anchor(text)
        seen = self._anchors.get(base, 0)
        self._anchors[base] = seen + 1
        ref = base if seen == 0 else f"{base}-{seen}"
        self.blocks.append(("h", level, text, ref))
        return ref

    def extend(self, other: Doc) -> None:
        """Another document's blocks after these (its headings keep the anchors it gave them)."""
        self.blocks += other.blocks

    def p(self, text: str) -> None:
        """A paragraph."""
        self.blocks.append(("p", text))

    def table(self, header: list[str], rows: list[list]) -> None:
        """A table: a header and rows of cells (turned into text)."""
        self.blocks.append(("table", header, [[str(c) for c in r] for r in rows]))

    def toc(self, depth: int = 2) -> None:
        """A table of contents here: a link to every heading of levels 2 to `depth` of the document."""
        self.blocks.append(("toc", depth))

    def fold(self, summary: str) -> None:
        """Fold the blocks up to `end_fold()` behind a one-line summary (<details>, open on a click)."""
        self.blocks.append(("fold", summary))

    def end_fold(self) -> None:
        self.blocks.append(("end_fold",))

    def img(self, path: Path | None, alt: str) -> None:
        """A figure (a PNG file); None adds nothing, so a figure that could not be drawn leaves no hole."""
        if path is not None:
            self.blocks.append(("img", Path(path), alt))

    def markdown(self, root: Path) -> str:
        """Markdown with figure paths relative to `root` (the folder the .md file goes in); every
        block's text is escaped here (comco.report.tables.md_text), so callers pass what the
        user wrote as it is."""
        out = []
        for b in self.blocks:
            if b[0] == "toc":
                out += [f"{'  ' * (level - 2)}- [{md_line(text)}](#{slug})"
                        for level, text, slug in self._sections(b[1])] + [""]
            elif b[0] == "fold":  # GitHub renders the Markdown inside, after a blank line
                out += [f"<details><summary>{html.escape(b[1])}</summary>", ""]
            elif b[0] == "end_fold":
                out += ["</details>", ""]
            elif b[0] == "h":
                out += ["#" * b[1] + " " + md_line(b[2]), ""]
            elif b[0] == "p":
                out += [md_text(b[1]), ""]
            elif b[0] == "table":
                out += [markdown_table(b[1], b[2]), ""]
            elif b[0] == "img":
                alt = md_line(b[2]).replace("[", "\\[").replace("]", "\\]")
                out += [f"![{alt}]({b[1].relative_to(root).as_posix()})", ""]
        return "\n".join(out)

    def html(self, title: str) -> str:
        """One HTML page, figures embedded as data URLs."""
        parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
                 f"<style>{STYLE}</style></head><body>"]
        for b in self.blocks:
            if b[0] == "toc":
                parts.append("<nav><ul>" + "".join(
                    f"<li style='margin-left:{1.5 * (level - 2):g}em'><a href='#{slug}'>{inline(text)}</a></li>"
                    for level, text, slug in self._sections(b[1])) + "</ul></nav>")
            elif b[0] == "fold":
                parts.append(f"<details><summary>{inline(b[1])}</summary>")
            elif b[0] == "end_fold":
                parts.append("</details>")
            elif b[0] == "h":
                parts.append(f"<h{b[1]} id='{b[3]}'>{inline(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                parts.append(f"<p>{inline(b[1])}</p>")
            elif b[0] == "table":
                parts.append("<div class='wide'><table><tr>" + "".join(f"<th>{inline(c)}</th>" for c in b[1])
                             + "</tr>")
                parts += ["<tr>" + "".join(f"<td{PROSE if len(c) > PROSE_CHARS else ''}>{inline(c)}</td>" for c in r)
                          + "</tr>" for r in b[2]]
                parts.append("</table></div>")
            elif b[0] == "img":
                data = base64.b64encode(b[1].read_bytes()).decode()
                parts.append(f"<p><img alt='{html.escape(b[2])}' src='data:image/png;base64,{data}'></p>")
        parts.append("</body></html>")
        return "\n".join(parts)


    def _sections(self, depth: int = 2) -> list[tuple[int, str, str]]:
        """(level, text, anchor) of every heading of levels 2 to `depth`: the table of contents."""
        return [(b[1], b[2], b[3]) for b in self.blocks if b[0] == "h" and 2 <= b[1] <= depth]


def anchor(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, marks dropped, spaces to '-'."""
    plain = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", plain).replace(" ", "-")


SAFE_SCHEMES = ("http", "https", "mailto")
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)]*)\)")  # [text](dest), ![alt](src)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]*:[^<>]*)>")  # <scheme:...>
_REFERENCE = re.compile(r"^( {0,3})\[([^\]]+)\]:", re.M)  # [label]: dest


def _unsafe(dest: str) -> bool:
    """A link target whose scheme is not http(s) or mailto (javascript:, data:, vbscript:, ...), seen
    through entities, blanks and case as a browser sees it."""
    plain = re.sub(r"[\s\x00-\x1f]", "", html.unescape(dest)).lstrip("<").lower()
    scheme = re.match(r"([a-z][a-z0-9+.\-]*):", plain)
    return bool(scheme) and scheme.group(1) not in SAFE_SCHEMES


def defuse_markdown(text: str) -> str:
    """User text (a recipe's description) made safe to put in report.md: a link to another scheme
    than http(s)/mailto becomes its text and the target in a code span, raw HTML tags and link
    definitions are escaped, so nothing in it runs or links when the report is opened."""
    text = _LINK.sub(lambda m: f"{m[2]} (`{m[3].replace('`', '')}`)" if _unsafe(m[3]) else m[0], text)
    text = _AUTOLINK.sub(lambda m: f"`{m[1].replace('`', '')}`" if _unsafe(m[1]) else m[0], text)
    text = _REFERENCE.sub(r"\1\\[\2]:", text)
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)


def inline(text: str) -> str:
    """Markdown's inline marks as HTML (text escaped first); `[text](#anchor)` links within the page."""
    t = html.escape(text.replace("&lt;", "<"))  # defuse_markdown's escaped '<' is a '<' here
    t = re.sub(r"\[([^\]]+)\]\(#([\w\-]+)\)", r"<a href='#\2'>\1</a>", t)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)
    return re.sub(r"\*([^*]+)\*", r"<i>\1</i>", t)
