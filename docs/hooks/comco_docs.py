"""mkdocs hooks of comco's docs site (mkdocs.yml `hooks:`), run at every build.

- reference/cli.md gains the reference of every `comco` command, read from the typer app
  itself, so the page never drifts from the command line.
- reference/api.md's `<!-- comco-api -->` becomes a mkdocstrings block of `comco.api` listing
  exactly `comco.__all__`.
"""

from __future__ import annotations

import html
import re

API_MARK = "<!-- comco-api -->"
CLI_MARK = "<!-- comco-cli -->"


def _cell(text: str) -> str:
    """Help text as one Markdown table cell."""
    text = re.sub(r"\s+", " ", text or "").strip()
    text = re.sub(r"\[/?(bold|dim|italic|red|green|yellow|cyan)\]", "", text)  # rich markup
    return html.escape(text, quote=False).replace("|", "\\|")


def _context(cmd):
    """A click context of `cmd` (typer >= 0.2x vendors click as typer._click)."""
    try:
        from typer._click.core import Context
    except ImportError:
        from click import Context
    return Context(cmd, info_name=cmd.name)


def _type_name(param, ctx) -> str:
    """The value a parameter reads, as `--help` names it (`<path>`, `<int>`)."""
    if hasattr(param, "display_type"):
        return param.display_type(ctx).strip("<>")
    return getattr(getattr(param, "type", None), "name", "")


def _command_markdown(cmd, path: list[str], level: int) -> list[str]:
    name = " ".join(path)
    out = [f"{'#' * level} `{name}`", ""]
    help_text = (cmd.help or "").strip().split("\f")[0]
    if help_text:
        out += [html.escape(re.sub(r"\s*\n\s*", " ", help_text.split("\n\n")[0]), quote=False), ""]
    sub = getattr(cmd, "commands", None)
    if sub:
        out += ["| command | what it does |", "|---|---|"]
        for key in sorted(sub):
            c = sub[key]
            if c.hidden:
                continue
            anchor = "-".join([*path, key]).replace(" ", "-")
            out.append(f"| [`{name} {key}`](#{anchor}) | {_cell(c.get_short_help_str(limit=120))} |")
        out.append("")
        for key in sorted(sub):
            if not sub[key].hidden:
                out += _command_markdown(sub[key], [*path, key], min(level + 1, 4))
        return out
    ctx = _context(cmd)
    args = [p for p in cmd.params if p.param_type_name == "argument"]
    opts = [p for p in cmd.params if p.param_type_name == "option" and not p.hidden and p.name != "help"]
    usage = " ".join([name, *(a.name.upper() for a in args), "[OPTIONS]" if opts else ""]).strip()
    out += ["```", usage, "```", ""]
    if args or opts:
        out += ["| argument or option | value | default | meaning |", "|---|---|---|---|"]
        for p in [*args, *opts]:
            names = ", ".join(f"`{n}`" for n in [*p.opts, *p.secondary_opts]) if p.param_type_name == "option" \
                else f"`{p.name.upper()}`"
            kind = "flag" if getattr(p, "is_flag", False) else _cell(_type_name(p, ctx))
            default = p.default
            if p.required:
                default_text = "required"
            elif default is None or callable(default) or default == () or getattr(p, "is_flag", False) and not default:
                default_text = ""
            else:
                default_text = f"`{default}`"
            help_text = getattr(p, "help", None) or ""
            out.append(f"| {names} | {kind} | {default_text} | {_cell(help_text)} |")
        out.append("")
    return out


def cli_reference() -> str:
    """Every `comco` command, its usage and options, as Markdown."""
    import typer

    from comco.cli.app import app

    root = typer.main.get_command(app)
    lines = ["## Every command", "",
             "Generated from the command line itself at each build of this site "
             "(`docs/hooks/comco_docs.py`), so it lists what `comco ... --help` shows.", ""]
    return "\n".join(lines + _command_markdown(root, ["comco"], 3)[2:])


def api_block() -> str:
    import comco

    members = "\n".join(f"        - {name}" for name in comco.__all__)
    return f"::: comco.api\n    options:\n      members:\n{members}\n      show_root_heading: false\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    if src == "reference/cli.md":
        body = cli_reference()
        return markdown.replace(CLI_MARK, body) if CLI_MARK in markdown else markdown.rstrip() + "\n\n" + body + "\n"
    if src == "reference/api.md" and API_MARK in markdown:
        return markdown.replace(API_MARK, api_block())
    return markdown
