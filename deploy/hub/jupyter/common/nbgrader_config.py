"""nbgrader's settings for everyone on the hub: the course's id and the shared exchange."""
import os

c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = "ipu-course"
# The hub passes the exchange's path (deploy/hub/jupyterhub_config.py).
c.Exchange.root = os.environ.get("IPU_COURSE_EXCHANGE", "/srv/ipu-hub/exchange")
