"""`ipu_tutorials.classroom.grading`, the grader's old name: the grader moved to
`ipu_tutorials.course.grading` (its command is `ipu-course grade`), and this name is that same
module."""
import sys

from ..course import grading

sys.modules[__name__] = grading
