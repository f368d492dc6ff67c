"""`ipu_tutorials.classroom.shown_code`: lesson code written once (`# show:`) moved to
`ipu_tutorials.course.shown_code`; this name is that same module."""
import sys

from ..course import shown_code

sys.modules[__name__] = shown_code
