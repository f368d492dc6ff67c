"""`python -m ipu_tutorials.poprun` and `ipu_tutorials.poprun`: the launcher moved to
`ipu_tutorials.distributed.poprun`; this name runs and is that same module."""
import sys

from .distributed import poprun

if __name__ == "__main__":
    sys.exit(poprun.main())
sys.modules[__name__] = poprun
