"""`python -m ipu_tutorials.course`: the `ipu-course` command (course/cli.py)."""
import sys

from .cli import main

sys.exit(main())
