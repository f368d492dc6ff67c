"""`ipu_tutorials.classroom.diagrams`: the writer of static/diagram_*.png moved to
`ipu_tutorials.course.diagrams`; this name is that same module."""
import sys

from ..course import diagrams

sys.modules[__name__] = diagrams
