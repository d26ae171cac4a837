"""Exports of a dataset folder for the field's tools: CLIP_benchmark's WebDataset retrieval
layout, open_clip_train's CSV and WebDataset shards, a Hugging Face imagefolder.
Pure Python (tarfile, csv, json): nothing here imports torch or the tools themselves."""

from comco.data.export.run import FORMATS, export_dataset

EXPORT_FORMATS = FORMATS  # the name comco.data's door gives it

__all__ = ["EXPORT_FORMATS", "FORMATS", "export_dataset"]
