"""The docs site (mkdocs.yml, docs/) and the README that leads into it.

The site builds in strict mode (a broken link, a page missing from the nav, a docstring
mkdocstrings cannot read: each a failure), and the built index and one guide are looked at
in headless Chromium: the page's DOM holds its title and navigation, and the screenshot is
a styled page, not a blank or unstyled one.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDES = ("quickstart", "datasets", "objects", "models", "probe", "train", "eval", "export", "captions", "lab",
          "cluster", "api")
REFERENCE = ("cli", "formats", "speed", "layout", "reproducibility", "api")
TEST_COMMAND = ("python3.11 -m venv .venv && .venv/bin/pip install -q --upgrade pip && "
                ".venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -q")


def test_readme_is_short_and_starts_quickly():
    lines = README.read_text().splitlines()
    assert len(lines) <= 400, f"README.md has {len(lines)} lines; the docs site holds the rest"
    heads = [i for i, line in enumerate(lines) if line.strip() == "## Quick start"]
    assert heads and heads[0] < 80, "the Quick start must begin within the README's first 80 lines"
    quick = "\n".join(lines[heads[0]:heads[0] + 60])
    for step in ("comco render", "comco train scratch", "comco probe", "report.html"):
        assert step in quick, f"the Quick start lacks {step!r}"
    assert "random weights" in quick.lower(), "the Quick start must say why random weights leave the headline blank"


def test_readme_test_command_is_what_ci_runs():
    """The README's test command and .ci/run's are the same line, character for character."""
    assert TEST_COMMAND in README.read_text()
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text()


def test_readme_links_resolve():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert targets
    missing = [t for t in targets if not t.startswith(("http://", "https://")) and not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_site_layout_is_complete():
    config = (ROOT / "mkdocs.yml").read_text()
    pages = ["index.md", "gallery.md", *(f"guide/{g}.md" for g in GUIDES), *(f"reference/{r}.md" for r in REFERENCE)]
    for page in pages:
        assert (ROOT / "docs" / page).is_file(), f"docs/{page} is missing"
        assert f": {page}" in config, f"docs/{page} is not in mkdocs.yml's nav"


def test_gallery_shows_every_committed_figure():
    gallery = (ROOT / "docs" / "gallery.md").read_text()
    figures = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.png"))
    assert figures
    missing = [f for f in figures if f"]({f})" not in gallery]
    assert not missing, f"docs/gallery.md does not show {missing}"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{(r.stdout + r.stderr)[-4000:]}"
    return out


def test_site_builds_strictly_with_generated_references(site):
    for page in ["index.html", *(f"guide/{g}/index.html" for g in GUIDES),
                 *(f"reference/{r}/index.html" for r in REFERENCE)]:
        assert (site / page).is_file(), f"the built site lacks {page}"
    cli = (site / "reference" / "cli" / "index.html").read_text()
    # the hook's reference of every command, read from the typer app: a command and an option of it
    assert 'id="comco-probe"' in cli and "--text-aggregate" in cli
    api = (site / "reference" / "api" / "index.html").read_text()
    import comco

    for name in comco.__all__:  # mkdocstrings rendered every public function's docstring
        assert f'id="comco.api.{name}"' in api, f"the API reference lacks {name}"


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _browse(page: Path, *args: str) -> subprocess.CompletedProcess:
    flags = ["--headless", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses to run as root inside its sandbox
    return subprocess.run([_chromium(), *flags, *args, page.as_uri()], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("page, title, text", [
    ("index.html", "comco", "Quick start"),
    ("guide/probe/index.html", "Probe a model", "conditional"),
])
def test_pages_render_in_chromium(site, tmp_path, page, title, text):
    if _chromium() is None:
        pytest.skip("no Chromium to look at the pages with (Debian: apt-get install chromium)")
    from PIL import Image

    path = site / page
    dom = _browse(path, "--dump-dom").stdout
    assert f"<title>{title}" in dom, f"{page}: the rendered page has no title {title!r}"
    assert 'class="md-nav' in dom and "Make a dataset" in dom, f"{page}: the navigation did not render"
    assert text in dom
    shot = tmp_path / "page.png"
    r = _browse(path, f"--screenshot={shot}")
    assert shot.is_file(), f"Chromium wrote no screenshot of {page}: {r.stderr[-2000:]}"
    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 900)
    # not blank: a page of text, figures and a header has many colours
    assert len(img.getcolors(maxcolors=1 << 20) or ()) > 50, f"{page}: the screenshot is (nearly) blank"
    # styled: the theme's header bar (material's indigo) spans the top, so the CSS loaded
    r_, g_, b_ = img.getpixel((640, 5))
    assert b_ > 150 and r_ < 120, f"{page}: no styled header (pixel {r_, g_, b_}): the theme CSS did not load"
