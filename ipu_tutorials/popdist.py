"""The name PopTorch code imports popdist by (`import popdist` -> `from ipu_tutorials import
popdist`): the package moved to `ipu_tutorials.distributed.popdist`, and this name and
`ipu_tutorials.popdist.poptorch` are the same module objects under their old names."""
import sys

from .distributed import popdist
from .distributed.popdist import poptorch as _popdist_poptorch

sys.modules[__name__] = popdist
sys.modules[f"{__name__}.poptorch"] = _popdist_poptorch
