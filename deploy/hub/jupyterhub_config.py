"""JupyterHub's settings for a class on one server: real Unix accounts, one JupyterLab each.

Learners and the instructor log in with their Unix password (PAM). Each gets their own
JupyterLab, run as their own Unix user from the one Python environment this hub runs in (the
course package, ipywidgets and nbgrader's extensions, installed once for all). nbgrader's
exchange is a shared folder; the course directory lives in the instructor's home. An idle
culler stops servers nobody uses, and each JupyterLab culls kernels that stay silent.

Everything that differs between servers is read from the environment, with defaults for the
layout `deploy/hub/setup` makes (docs/teaching.md, "Running a class"):

    IPU_HUB_ROOT           /srv/ipu-hub      state/ (the hub's database, 0700) and exchange/
    IPU_HUB_URL            http://127.0.0.1:8000   where the hub listens (put TLS in front)
    IPU_HUB_PORTS          8081,8001         the hub's own API and the proxy's API, on 127.0.0.1
    IPU_HUB_IDLE_SECONDS   3600              a server unused this long is stopped
    IPU_KERNEL_IDLE_SECONDS 1800             a kernel with no output this long is shut down
"""
import grp
import os
import sys

c = get_config()  # noqa: F821 (JupyterHub defines it)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("IPU_HUB_ROOT", "/srv/ipu-hub")
HUB_PORT, PROXY_API_PORT = (int(p) for p in os.environ.get("IPU_HUB_PORTS", "8081,8001").split(","))
IDLE_SECONDS = int(os.environ.get("IPU_HUB_IDLE_SECONDS", "3600"))
INSTRUCTORS, LEARNERS = "ipu-instructors", "ipu-learners"  # Unix groups (deploy/hub/accounts.py)

# The hub and its proxy listen on loopback only; a TLS reverse proxy (or the hub's own
# ssl_cert/ssl_key) faces the network.
c.JupyterHub.bind_url = os.environ.get("IPU_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = HUB_PORT
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PROXY_API_PORT}"
c.JupyterHub.db_url = f"sqlite:///{ROOT}/state/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = f"{ROOT}/state/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.pid_file = f"{ROOT}/state/jupyterhub-proxy.pid"
# A restarted hub finds the learners' servers still running: nothing open in a tab is lost.
c.JupyterHub.cleanup_servers = False

# Unix accounts: the class's two groups may log in; the instructors administer the hub.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {INSTRUCTORS, LEARNERS}
c.PAMAuthenticator.admin_groups = {INSTRUCTORS}

# Each user's JupyterLab runs as that Unix user (the hub runs as root to switch to it), from
# this hub's own environment, in their home folder.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [os.path.join(sys.prefix, "bin", "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.ip = "127.0.0.1"
# Forty servers starting at once on two cores each take tens of seconds (benchmarks/hub.md).
c.Spawner.http_timeout = 180
c.Spawner.start_timeout = 180


def is_instructor(username: str) -> bool:
    """Whether the Unix account belongs to the instructors' group."""
    try:
        return username in grp.getgrnam(INSTRUCTORS).gr_mem
    except KeyError:
        return False


def settings_for(spawner) -> None:
    """Give the server the Jupyter settings of its user's role (jupyter/ beside this file):
    nbgrader's course and exchange for all, the Formgrader for instructors only."""
    role = "instructor" if is_instructor(spawner.user.name) else "learner"
    spawner.environment.update({
        "JUPYTER_CONFIG_PATH": os.pathsep.join(
            [os.path.join(HERE, "jupyter", role), os.path.join(HERE, "jupyter", "common")]),
        "IPU_COURSE_EXCHANGE": os.path.join(ROOT, "exchange"),
        "IPU_KERNEL_IDLE_SECONDS": os.environ.get("IPU_KERNEL_IDLE_SECONDS", "1800"),
        # Forty learners share a few cores: one torch thread per kernel keeps them from
        # fighting over them (the lessons' outputs do not depend on the thread count).
        "OMP_NUM_THREADS": os.environ.get("IPU_KERNEL_THREADS", "1"),
    })


c.Spawner.pre_spawn_hook = settings_for

# jupyterhub-idle-culler as a hub service, with only the scopes its README asks for.
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_SECONDS}",
                f"--cull-every={max(IDLE_SECONDS // 6, 5)}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
