"""A class's hub for a test: deploy/hub as setup lays it out, in a temporary folder, on free
loopback ports, with Unix accounts made for the test, all of it removed afterwards.

`running_hub` is the whole life cycle: accounts (deploy/hub/accounts.py), folders and the
course directory (deploy/hub/layout.py), the hub started from deploy/hub/jupyterhub_config.py
as root, and in its `finally` every server stopped, the hub stopped, any process of the test's
accounts ended by its id, the accounts and their homes deleted and the folder removed, also
when the test fails or times out.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import psutil

from tests.course.stored import CHECKOUT

DEPLOY = os.path.join(CHECKOUT.root, "deploy", "hub")
HUB_SECONDS = 120  # the hub up, or down: at most this
SERVER_SECONDS = int(os.environ.get("IPU_HUB_SERVER_SECONDS", "240"))  # one learner's server up: forty start at once on two cores


def load(name: str):
    """deploy/hub/<name>.py as a module (deploy/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"hub_{name}", os.path.join(DEPLOY, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


accounts = load("accounts")
layout = load("layout")


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (held together, so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def skip_reason() -> str | None:
    """Why the hub cannot run here, in one line; None when it can."""
    if os.geteuid() != 0:
        return "the hub's tests need root (the hub switches to each learner's Unix account)"
    if not shutil.which("configurable-http-proxy"):
        return "the hub's tests need configurable-http-proxy: npm install -g configurable-http-proxy"
    if not shutil.which("useradd"):
        return "the hub's tests need useradd (Debian's passwd package)"
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        return "the hub's tests need JupyterHub: pip install -e '.[hub-tests]'"
    return None


def readable_by_all(path: str) -> bool:
    """Whether every account can reach `path` (each folder above it searchable by others)."""
    path = os.path.realpath(path)
    while path != "/":
        if not os.stat(path).st_mode & 0o001 or not os.stat(path).st_mode & 0o004:
            return False
        path = os.path.dirname(path)
    return True


@dataclass
class Hub:
    """A running hub: its URL, a token with admin scopes, its folders and accounts."""

    url: str
    token: str
    root: str
    config: str
    env: dict
    instructor: str
    learners: list[str]
    passwords: dict[str, str]
    process: subprocess.Popen | None = None
    log_path: str = ""
    starts: list[float] = field(default_factory=list)  # when the hub answered, each start

    # -- the hub's process -------------------------------------------------------------------
    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [os.path.join(sys.prefix, "bin", "jupyterhub"), "-f", self.config],
                cwd=os.path.join(self.root, "state"), env=self.env, stdout=log, stderr=log,
                start_new_session=True)
        deadline = time.monotonic() + HUB_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the hub exited ({self.process.returncode}):\n{self.log()}")
            with contextlib.suppress(OSError, urllib.error.URLError):
                if self.api("GET", "/info")["version"]:
                    self.starts.append(time.monotonic())
                    return
            time.sleep(0.3)
        raise TimeoutError(f"the hub did not answer in {HUB_SECONDS} s:\n{self.log()}")

    def stop(self) -> None:
        """SIGTERM, as systemd stops it; its proxy and services go with it."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(HUB_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-6000:]

    # -- the REST API --------------------------------------------------------------------------
    def request(self, method: str, path: str, body=None, seconds: float = 60) -> bytes:
        """`method path` (a path under the hub's URL) with the test's token; the reply's body."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=seconds) as reply:
            return reply.read()

    def api(self, method: str, path: str, body=None):
        reply = self.request(method, "/hub/api" + path, body)
        return json.loads(reply) if reply else None

    def start_server(self, user: str) -> float:
        """Start the user's JupyterLab and wait until it answers; seconds it took."""
        began = time.monotonic()
        with contextlib.suppress(urllib.error.HTTPError):  # 409: known to the hub already
            self.api("POST", f"/users/{user}")
        with contextlib.suppress(urllib.error.HTTPError):  # 400: already running
            self.api("POST", f"/users/{user}/server")
        while time.monotonic() - began < SERVER_SECONDS:
            model = self.api("GET", f"/users/{user}")
            server = model.get("servers", {}).get("", {})
            if server.get("ready"):
                return time.monotonic() - began
            time.sleep(0.5)
        raise TimeoutError(f"{user}'s server not ready in {SERVER_SECONDS} s:\n{self.log()}")

    def stop_server(self, user: str) -> None:
        with contextlib.suppress(urllib.error.HTTPError):
            self.api("DELETE", f"/users/{user}/server")
        deadline = time.monotonic() + HUB_SECONDS
        while time.monotonic() < deadline and self.api("GET", f"/users/{user}").get("servers"):
            time.sleep(0.5)

    def server_pid(self, user: str) -> int | None:
        """The process id of the user's JupyterLab (the oldest process of the account)."""
        uid = accounts_uid(user)
        mine = [p for p in psutil.process_iter(["uids", "create_time", "cmdline"])
                if p.info["uids"] and p.info["uids"].real == uid
                and any("jupyterhub-singleuser" in part for part in p.info["cmdline"] or [])]
        return min(mine, key=lambda p: p.info["create_time"]).pid if mine else None

    # -- running commands as the class's accounts ---------------------------------------------
    def run_as(self, user: str, args: list[str], cwd: str | None = None, seconds: int = 600,
               check: bool = True) -> subprocess.CompletedProcess:
        """A command run as `user`, in their home unless `cwd`, with their server's settings."""
        home = os.path.expanduser(f"~{user}")
        role = "instructor" if user == self.instructor else "learner"
        env = {"PATH": os.path.join(sys.prefix, "bin") + ":/usr/bin:/bin", "HOME": home,
               "USER": user, "LANG": "C.UTF-8", "PYTHONPATH": self.env.get("PYTHONPATH", ""),
               "JUPYTER_CONFIG_PATH": f"{DEPLOY_COPY(self)}/jupyter/{role}:"
                                      f"{DEPLOY_COPY(self)}/jupyter/common",
               "IPU_COURSE_EXCHANGE": os.path.join(self.root, "exchange"),
               "OMP_NUM_THREADS": "1"}
        account = pwd.getpwnam(user)
        groups = os.getgrouplist(user, account.pw_gid)
        done = subprocess.run(args, cwd=cwd or home, env=env, user=account.pw_uid,
                              group=account.pw_gid, extra_groups=groups, capture_output=True,
                              text=True, timeout=seconds)
        if check and done.returncode != 0:
            raise AssertionError(f"{user}: {' '.join(args)}\n{done.stdout}\n{done.stderr}")
        return done

    def nbgrader(self, user: str, *args: str, cwd: str | None = None, seconds: int = 900,
                 check: bool = True) -> subprocess.CompletedProcess:
        return self.run_as(user, [os.path.join(sys.prefix, "bin", "nbgrader"), *args], cwd=cwd,
                           seconds=seconds, check=check)

    @property
    def course(self) -> str:
        return os.path.join(os.path.expanduser(f"~{self.instructor}"), "course")


def DEPLOY_COPY(hub: Hub) -> str:  # noqa: N802 (reads as the folder it names)
    """The copy of deploy/hub the test's hub runs from (readable by every account)."""
    return os.path.join(hub.root, "deploy")


def accounts_uid(user: str) -> int:
    return pwd.getpwnam(user).pw_uid


def stop_quietly(hub: Hub, user: str) -> None:
    with contextlib.suppress(Exception):
        hub.stop_server(user)


def end_processes_of(users: list[str]) -> list[int]:
    """End, by process id, every process still run by the test's accounts; their ids."""
    uids = set()
    for user in users:
        with contextlib.suppress(KeyError):
            uids.add(pwd.getpwnam(user).pw_uid)
    left = [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real in uids]
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(left, timeout=10)
    return [p.pid for p in left]


@contextlib.contextmanager
def running_hub(learners: int, lessons: list[str], *, idle_seconds: int = 3600,
                kernel_idle_seconds: int = 1800):
    """A hub with an instructor and `learners` learners, the course directory holding
    `lessons`; yields the Hub and removes everything afterwards (see the module's docstring)."""
    tag = secrets.token_hex(2)
    instructor = f"ih{tag}teach"
    names = [f"ih{tag}l{i:02d}" for i in range(learners)]
    root = tempfile.mkdtemp(prefix="ipu-hub-")
    os.chmod(root, 0o755)
    hub = None
    try:
        shutil.copytree(DEPLOY, os.path.join(root, "deploy"))
        passwords = {instructor: accounts.add(instructor, accounts.GROUPS["instructors"],
                                              secrets.token_urlsafe(9))}
        for name in names:
            passwords[name] = accounts.add(name, accounts.GROUPS["learners"], secrets.token_urlsafe(9))
        layout.make_folders(root)
        layout.build_course(instructor, CHECKOUT.root, lessons)
        port, hub_port, proxy_port = free_ports(3)
        token = secrets.token_hex(16)
        config = os.path.join(root, "state", "test_config.py")
        with open(config, "w", encoding="utf-8") as f:
            f.write(TEST_CONFIG.format(main=os.path.join(root, "deploy", "jupyterhub_config.py"),
                                       token=token))
        env = {**os.environ, "IPU_HUB_ROOT": root, "IPU_HUB_URL": f"http://127.0.0.1:{port}",
               "IPU_HUB_PORTS": f"{hub_port},{proxy_port}", "IPU_HUB_IDLE_SECONDS": str(idle_seconds),
               "IPU_KERNEL_IDLE_SECONDS": str(kernel_idle_seconds),
               # this checkout's package in every kernel, where the accounts can read it (else
               # the environment's own copy: .ci/hub installs it not editable)
               "PYTHONPATH": CHECKOUT.root if readable_by_all(CHECKOUT.root) else "",
               "PATH": os.path.join(sys.prefix, "bin") + os.pathsep + os.environ.get("PATH", "")}
        hub = Hub(url=f"http://127.0.0.1:{port}", token=token, root=root, config=config, env=env,
                  instructor=instructor, learners=names, passwords=passwords,
                  log_path=os.path.join(root, "state", "hub.log"))
        hub.start()
        yield hub
    finally:
        if hub is not None and hub.process is not None and hub.process.poll() is None:
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda user: stop_quietly(hub, user), [instructor, *names]))
        if hub is not None:
            hub.stop()
        end_processes_of([instructor, *names])
        for user in [instructor, *names]:
            with contextlib.suppress(Exception):
                accounts.remove(user)
        if hub is not None and os.environ.get("IPU_HUB_KEEP_LOG"):
            shutil.copy(hub.log_path, os.environ["IPU_HUB_KEEP_LOG"])
        shutil.rmtree(root, ignore_errors=True)


# The test's additions to deploy/hub/jupyterhub_config.py: a service whose token the test
# uses to drive the hub's API (start and stop servers, reach a learner's server as the
# Assignments tab does).
TEST_CONFIG = '''\
load_subconfig({main!r})
c.JupyterHub.services.append({{"name": "class-test", "api_token": {token!r}}})
# The browser test reads JupyterLab's state through window.jupyterapp, as tests/browser does.
c.Spawner.args = ["--LabApp.expose_app_in_browser=True"]
c.JupyterHub.load_roles.append({{
    "name": "class-test", "services": ["class-test"],
    "scopes": ["admin:users", "admin:servers", "list:users", "read:users", "access:servers",
               "read:hub"],
}})
'''
