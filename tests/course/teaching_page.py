"""The commands docs/teaching.md gives an instructor, section by section, for the tests that
run them as written."""
import os
import re
import shlex
import subprocess
import sys

from .stored import CHECKOUT

PAGE = os.path.join(CHECKOUT.root, "docs", "teaching.md")


def commands(heading: str) -> list[str]:
    """Each command line of the ```bash blocks under the page's "## heading"."""
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^[ \t]*```bash\n(.*?)^[ \t]*```", section, re.M | re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def environment() -> dict:
    """The instructor's shell: this checkout's package importable (by kernels too), and the
    commands installed beside this Python (nbgrader, and the `alembic` it calls) on PATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [CHECKOUT.root, env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.pop("NBGRADER_EXECUTION", None)
    return env


def run(command: str, cwd, seconds: int) -> str:
    """Run one command line of the page in `cwd` (`python` is this Python, `ipu-course` this
    checkout's command run by it); its output.

    Raises:
        AssertionError: the command failed.
    """
    args = shlex.split(command)
    if args[0] == "python":
        args[0] = sys.executable
    elif args[0] == "ipu-course":
        args[:1] = [sys.executable, "-m", "ipu_tutorials.course"]
    done = subprocess.run(args, cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=seconds)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr
