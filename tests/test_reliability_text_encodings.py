"""Issue 25 item 12: a benchmark's caption or annotation text file in Latin-1 (not UTF-8, as
every benchmark ships) is one UserError naming the file, from every loader that reads text
line by line; the UTF-8 files still load as before."""

from __future__ import annotations

import pytest
from support.natural import write_docci, write_flickr, write_long_dci, write_urban1k

from comco.errors import UserError
from comco.probes.natural.benchmarks import load_benchmark

CAFE = "Un caf\xe9 au coin de la rue, pr\xe8s de la gare."

# benchmark -> (builder, the text file to rewrite in Latin-1, relative to the root)
TEXT_FILES = {
    "urban1k": (lambda r: write_urban1k(r, n=2), "caption/2.txt"),
    "docci": (write_docci, "docci_descriptions.jsonlines"),
    "long-dci": (write_long_dci, "dci_long.csv"),
    "flickr30k": (write_flickr, "results_20130124.token"),
}


def _latin1(path):
    text = path.read_text(encoding="utf-8")
    # an accented word where a caption is, so the file stays well-formed apart from its encoding
    words = text.split(" ")
    words[min(3, len(words) - 1)] += " " + CAFE
    path.write_bytes(" ".join(words).encode("latin-1"))


@pytest.mark.parametrize("name", list(TEXT_FILES))
def test_a_latin1_text_file_is_one_user_error_naming_it(tmp_path, name):
    build, rel = TEXT_FILES[name]
    root = build(tmp_path / name)
    assert load_benchmark(name, root).n_images > 0  # the UTF-8 original loads
    _latin1(root / rel)
    with pytest.raises(UserError, match=r"is not UTF-8 text \(it holds the byte 0xe9") as err:
        load_benchmark(name, root)
    assert rel.split("/")[-1] in str(err.value)
