"""`ipu_tutorials.classroom.editions`, and `python -m ipu_tutorials.classroom.editions` as
docs/teaching.md used to write it: the editions tool moved to `ipu_tutorials.course.editions`
and its command is `ipu-course editions`. This name is that same module; run, it runs
`ipu-course editions` with the same arguments."""
import sys

from ..course import editions

if __name__ == "__main__":
    from ..course.cli import main

    sys.exit(main(["editions", *sys.argv[1:]]))
sys.modules[__name__] = editions
