"""Natural retrieval benchmarks (COCO, Flickr30k, Urban1k, DOCCI, DCI, comco folders) in
their real file formats, recall with intervals, and the DeBias-CLIP analyses."""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "run_natural_eval": "run", "check_options": "run",
    "run_compositional_eval": "scores", "run_zeroshot_eval": "scores",
    "gather_tradeoff": "tradeoff", "write_tradeoff": "tradeoff",
    "load_corpus": "corpus", "caption_bias": "caption_bias", "write_caption_bias": "caption_bias",
})
