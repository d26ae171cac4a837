"""The report kit the probe, eval and lab reports share: a document model (Markdown +
HTML), Markdown/CSV tables, interval plots, and the one table of published figures."""

from comco.lazy import door

__getattr__, __dir__, __all__ = door(__name__, {
    "Doc": "document", "defuse_markdown": "document", "markdown_table": "tables", "md_text": "tables",
    "md_line": "tables",
    "md_cell": "tables", "csv_text": "tables", "pct": "tables", "interval": "tables",
    "MIN_TRIALS": "tables", "too_few": "tables", "units": "tables", "Dashes": "tables",
    "pyplot": "plots", "save": "plots", "error_bars": "plots", "interval_bars": "plots",
    "legend_beside": "plots", "legend_entry": "plots", "layout_problems": "plots", "checking_layout": "plots",
    "published_rows": "published", "published_model": "published",
    "published_biases": "published", "published_retrieval": "published", "published_analysis": "published",
    "published_caption_bias": "published",
})
