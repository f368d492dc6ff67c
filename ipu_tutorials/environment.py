"""`ipu_tutorials.environment`, which lesson 11 lists the variables from: the module moved to
`ipu_tutorials.support.environment`; this name is that same module."""
import sys

from .support import environment

sys.modules[__name__] = environment
