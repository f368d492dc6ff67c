"""`ipu_tutorials.classroom.editions`, the editions tool's old name: the tool moved to
`ipu_tutorials.course.editions` (its command is `ipu-course editions`), and this name is that
same module."""
import sys

from ..course import editions

sys.modules[__name__] = editions
