"""`ipu_tutorials.classroom.grading`, and `python -m ipu_tutorials.classroom.grading` as
docs/teaching.md used to write it: the grader moved to `ipu_tutorials.course.grading` and its
command is `ipu-course grade`. This name is that same module; run, it runs `ipu-course grade`
with the same arguments."""
import sys

from ..course import grading

if __name__ == "__main__":
    from ..course.cli import main

    sys.exit(main(["grade", *sys.argv[1:]]))
sys.modules[__name__] = grading
