"""`import popdist.poptorch` -> ipu_tutorials.popdist.poptorch (the import swap)."""
import sys
import ipu_tutorials.popdist.poptorch as _options
sys.modules[__name__] = _options
