"""The error of an object that cannot be built or imported (its own module, so the mesh
importer and the instancer that calls it both use it without importing each other)."""


class ObjectBuildError(Exception):
    """An object could not be built or imported; the message names object and file."""
