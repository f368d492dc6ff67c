"""`ipu_tutorials.atomic_io`, where code catching `FileFormatError` imports it from: the module
moved to `ipu_tutorials.support.atomic_io`; this name is that same module."""
import sys

from .support import atomic_io

sys.modules[__name__] = atomic_io
