"""Each DeBias analysis transforms captions exactly as specified."""

from __future__ import annotations

from comco.probes.natural.analyses import (
    ANALYSES,
    PHOTO_SENTENCE,
    split_sentences,
    summary_fourth,
)

CAPTION = "S1 summary here. S2 second! S3 third? S4 fourth. S5 fifth. S6 sixth."
SENTENCES = ["S1 summary here.", "S2 second!", "S3 third?", "S4 fourth.", "S5 fifth.", "S6 sixth."]


def variants(analysis: str, caption: str = CAPTION) -> dict[str, str]:
    sentences = split_sentences(caption)
    return {name: make(sentences) for name, make in ANALYSES[analysis].variants.items()}


def test_sentence_split_keeps_punctuation_and_breaks_lines():
    assert split_sentences(CAPTION) == SENTENCES
    assert split_sentences("Short caption\nA long one. And more.") == ["Short caption", "A long one.", "And more."]
    assert split_sentences('He said "stop." Then left.') == ['He said "stop."', "Then left."]
    assert split_sentences("3.5 metres wide. Done.") == ["3.5 metres wide.", "Done."]


def test_padding_puts_k_copies_in_front_of_the_first_two_sentences():
    out = variants("padding")
    assert list(out) == [f"k={k}" for k in range(6)]
    assert out["k=0"] == "S1 summary here. S2 second!"
    for k in range(6):
        assert out[f"k={k}"] == " ".join([PHOTO_SENTENCE] * k + SENTENCES[:2])
        assert out[f"k={k}"].count(PHOTO_SENTENCE) == k
    assert ANALYSES["padding"].direction == "t2i"


def test_order_first_two_swapped_and_first_only():
    out = variants("order")
    assert out == {"first-2": "S1 summary here. S2 second!", "swap-2": "S2 second! S1 summary here.",
                   "first-only": "S1 summary here."}
    assert ANALYSES["order"].direction == "i2t"


def test_summary_keep_move_to_fourth_and_remove():
    out = variants("summary")
    assert out["keep"] == " ".join(SENTENCES)
    moved = split_sentences(out["move-to-4th"])
    assert moved.index(SENTENCES[0]) == 3
    assert moved == SENTENCES[1:4] + SENTENCES[:1] + SENTENCES[4:]
    assert out["remove"] == " ".join(SENTENCES[1:])
    assert ANALYSES["summary"].direction == "t2i"


def test_summary_goes_last_when_fewer_than_three_sentences_follow():
    assert summary_fourth(["A.", "B.", "C."]) == "B. C. A."


def test_every_analysis_needs_two_sentences():
    assert all(a.min_sentences == 2 for a in ANALYSES.values())
