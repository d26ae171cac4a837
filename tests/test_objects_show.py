"""`comco objects show` draws what `preview` draws (the draft preset by default) and frames the
whole object as its mesh is built, even where the manifest's sides disagree with the file."""

from comco.cli.app import objects_show
from comco.manifest import parse_manifest
from comco.plan import PlanConfig, Planner
from comco.plan.camera import Camera
from comco.scenes.preview import as_built

POLE = {"name": "p", "objects": [{"name": "pole", "plural": "poles", "article": "a", "dimensions_m": [0.05, 0.05, 0.6],
                                  "size_class": "medium", "colorable": True, "source": "mesh:pole.obj"}]}
LYING = (0.05, 0.6, 0.05)  # a Z-up file the importer laid along the view: the manifest says tall


def box_of(single, spec_dims) -> tuple:
    """The image box of the single's object, drawn with the sides the mesh really has."""
    o = single["objects"][0]
    w, h = single["resolution"]
    k = o["scale"] / max(spec_dims)
    return Camera.default(w, h).box_bounds_one(o["location"], [d * k for d in LYING], o["rotation_z"]), (w, h)


def inside(box, size) -> bool:
    return box[0] >= 0 and box[1] >= 0 and box[2] <= size[0] and box[3] <= size[1]


def test_show_frames_the_mesh_as_built(tmp_path):
    (tmp_path / "pole.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    oset = parse_manifest(POLE, tmp_path)
    cfg = PlanConfig(object_set=str(tmp_path), objects=(1,), n=1, resolution=(384, 384), large_fraction=0.16)
    by_manifest = Planner(cfg, oset).singles()[0]
    assert not inside(*box_of(by_manifest, (0.05, 0.05, 0.6)))  # planned as tall, the lying mesh leaves the frame
    shown = Planner(cfg, as_built(oset, {"pole": LYING})).singles()[0]
    assert inside(*box_of(shown, LYING))


def test_show_defaults_to_the_preview_preset():
    import inspect

    assert inspect.signature(objects_show).parameters["preset"].default == "draft"
