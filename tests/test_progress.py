"""The one progress display: on a terminal rich bars; in a log (not a terminal) plain lines
that name the job and give its counts, rate, elapsed and ETA, never a bar cut to ellipses.
Probe embedding passes name what they embed."""

import io

from support.probes import SET, FakeEmbedder, one_hot, planned_data

from comco.probes.embed import Embedder, named
from comco.probes.tor import tor_dataset
from comco.progress import Lines, progress, progress_group


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plain_lines_carry_counts_rate_and_eta_at_most_every_interval():
    out, clock = io.StringIO(), Clock()
    with Lines(out, every=10.0, clock=clock) as d:
        task = d.add_task("train scratch", total=100, unit="steps")
        for _ in range(100):
            clock.now += 0.5
            d.advance(task)
            d.update(task, note="loss 2.345 lr 1.0e-06 a long note that a bar would cut " + "x" * 80)
    lines = out.getvalue().splitlines()
    assert lines[0] == "train scratch: 0/100 steps (0 %), 0:00:00 elapsed"
    assert lines[1].startswith("train scratch: 20/100 steps (20 %), 2.00 steps/s, 0:00:10 elapsed, eta 0:00:40")
    assert lines[-1].startswith("train scratch: 100/100 steps (100 %), 2.00 steps/s, 0:00:50 elapsed, loss 2.345")
    assert lines[-1].endswith("x" * 80) and "…" not in out.getvalue()  # the whole note, never an ellipsis
    assert len(lines) == 1 + 5  # the start, then one line per 10 s (the last at completion), nothing twice


def test_a_job_stopped_early_says_where_it_stopped():
    out, clock = io.StringIO(), Clock()
    with Lines(out, every=10.0, clock=clock) as d:
        task = d.add_task("render", total=10, unit="images")
        clock.now = 2.0
        d.advance(task, 3)
    assert out.getvalue().splitlines()[-1] == "render: 3/10 images (30 %), 1.50 images/s, 0:00:02 elapsed, eta 0:00:05"


def test_outside_a_terminal_progress_prints_plain_lines(capsys):
    with progress(3, "plan", "scenes") as bar:
        for _ in range(3):
            bar.advance()
    with progress_group() as start:
        start("TOR: embedding 2 captions (template and)", 2, "texts")(2)
    out = capsys.readouterr().out
    assert "plan: 3/3 scenes (100 %)" in out
    assert "TOR: embedding 2 captions (template and): 2/2 texts (100 %)" in out
    assert "\x1b[" not in out and "━" not in out  # no terminal codes, no bar


class Recording(FakeEmbedder):
    """A fake embedder that notes what each pass was named."""

    def __init__(self, fn):
        super().__init__(fn)
        self.passes = []

    def texts(self, items):
        self.passes.append(getattr(self, "what", None))
        return super().texts(items)


def test_tor_names_each_embedding_pass():
    emb = Recording(lambda t: one_hot({n: 1.0 for n in SET.names if n in t}))
    tor_dataset(planned_data(n=8, objects=(3, 4)), emb, ["and"], n_boot=0, seed=0)
    assert emb.passes == ["gallery texts (bare-name gallery, template and)",
                          "3-object captions (template and)", "4-object captions (template and)"]
    assert getattr(emb, "what", None) is None  # named() restores what was there


def test_the_embedder_label_names_task_count_and_what():
    e = Embedder.__new__(Embedder)
    e.task = "TOR"
    with named(e, "4-object captions (template and)"):
        assert e.label("text", 616) == "TOR: embedding 616 4-object captions (template and)"
    assert e.label("image", 24) == "TOR: embedding 24 images"
