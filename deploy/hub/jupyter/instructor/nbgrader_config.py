"""nbgrader's settings for the instructor: the course directory in their home, with its own
settings (the cell time limit and how lessons are released, written by `ipu-course editions`)."""
import os

c = get_config()  # noqa: F821 (nbgrader defines it)
course = os.path.expanduser("~/course")
c.CourseDirectory.root = course
if os.path.isfile(os.path.join(course, "nbgrader_config.py")):
    load_subconfig("nbgrader_config.py", path=course)  # noqa: F821 (nbgrader defines it)
