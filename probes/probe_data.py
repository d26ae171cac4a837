"""What the probes read from a dataset: records, singles, the gallery of names.

comco.data.folder is the one reader of scenes.jsonl; this module only adds the probes'
views on it (measured size ranks, which inputs exist) and the bad-input checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from comco.errors import UserError


@dataclass
class ProbeData:
    root: Path
    info: dict
    records: list[dict]
    singles: list[dict]
    names: list[str]  # the gallery: every object name of the set
    forms: dict[str, list[str]] = field(default_factory=dict)  # plural and synonyms per name
    object_set: object = None
    image_path: object = None  # record -> absolute Path

    @property
    def hash(self) -> str:
        return str(self.info.get("config_hash") or self.info.get("object_set_hash") or "")

    @property
    def has_colors(self) -> bool:
        return any(o.get("color") for r in self.records for o in r["objects"])

    def images_missing(self, records: list[dict] | None = None) -> list[Path]:
        return [p for p in (self.image_path(r) for r in (records or self.records)) if not p.is_file()]

    def require_images(self, probe: str) -> None:
        if not self.records:
            raise UserError(f"{self.root} has no scene records; plan and render it first")
        missing = self.images_missing()
        if missing:
            raise UserError(f"probe '{probe}' needs rendered images but {len(missing)} of {len(self.records)} "
                            f"are missing (first: {missing[0]}); run `comco render` on {self.root}")
        if any("measured" not in o for r in self.records for o in r["objects"]):
            raise UserError(f"probe '{probe}' needs measured object sizes; {self.root} has records "
                            "without `measured` (render it with `comco render`)")

    def require_usable_images(self, singles: bool) -> None:
        """Every record's image (and every single's, when `singles`) passes `comco validate`'s
        image check: a missing, cut or scrambled file is named before a model loads."""
        from comco.data import require_usable_images

        require_usable_images(self.root, self.records)
        if singles:
            require_usable_images(self.root, self.singles, "single")

    def require_singles(self, probe: str) -> None:
        if not self.singles:
            raise UserError(f"probe '{probe}' needs single-object reference renders; "
                            f"{self.root} has no singles/: render it with `comco render --singles`")
        missing = [p for p in (self.image_path(s) for s in self.singles) if not p.is_file()]
        if missing:
            raise UserError(f"{len(missing)} single-object renders are missing (first: {missing[0]}); "
                            "render them with `comco render --singles`")


def open_dataset(root: str | Path) -> ProbeData:
    """What the probes read from a dataset folder: complete records, singles, the gallery of names.

    Args:
        root: the dataset folder (a dataset with missing or extra records is refused)."""
    from comco.data.folder import Dataset

    root = Path(root)
    ds = Dataset(root)  # raises the one-line error for a folder that is not a dataset
    records = ds.complete_records()
    singles = ds.singles() if ds.has_singles() else []
    names, forms, object_set = gallery_names(ds.info, records)
    return ProbeData(root=root, info=ds.info, records=records, singles=singles, names=names,
                     forms=forms, object_set=object_set, image_path=ds.image_path)


def gallery_names(info: dict, records: list[dict]):
    """Every object name of the dataset's set (the manifest when it loads, else the records)."""
    from comco.data.folder import object_set_source
    from comco.manifest import load_object_set

    try:
        s = load_object_set(object_set_source(info))
    except UserError:
        s = None
    if s is not None and (not info.get("object_set_hash") or s.hash == info["object_set_hash"]):
        forms = {o.name: [o.plural, *o.synonyms] for o in s.objects}
        return list(s.names), forms, s
    names = sorted({o["name"] for r in records for o in r["objects"]})
    return names, {}, s
