"""`import popdist` -> ipu_tutorials.popdist (the import swap)."""
import ipu_tutorials.popdist as _popdist
from ipu_tutorials.popdist import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_popdist, name)
