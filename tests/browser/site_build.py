"""The course website as docs/website.md says to make it: its commands, read from the page
itself, build the site and serve it, so the page and the tests never drift apart."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEBSITE_PAGE = ROOT / "docs" / "website.md"
BUILD_SECONDS = 900  # a loaded 2-core machine; about 15 s of CPU


def documented_commands() -> list[str]:
    """Every command in docs/website.md's bash blocks (a trailing comment dropped)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", WEBSITE_PAGE.read_text(encoding="utf-8"),
                        re.M | re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.startswith("#")]


def documented(prefix: str) -> list[str]:
    """The one documented command that starts with prefix, as arguments."""
    (command,) = [c for c in documented_commands() if c.startswith(prefix)]
    return shlex.split(command)


def build(site_dir: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` as documented, into site_dir: a warning fails the build."""
    command = [sys.executable, "-m", *documented("mkdocs build"), "--site-dir", str(site_dir)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          timeout=BUILD_SECONDS, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def serve_command(site_dir: Path, port: int) -> list[str]:
    """The documented `python -m http.server --directory site 8000`, for site_dir and port."""
    command = documented("python -m http.server")
    command[0] = sys.executable
    command[command.index("--directory") + 1] = str(site_dir)
    command[-1] = str(port)
    return command


def megabytes(paths) -> float:
    return sum(p.stat().st_size for p in paths if p.is_file()) / 1e6


def site_sizes(site_dir: Path) -> dict[str, float]:
    """What docs/website.md says of the built site's size: megabytes (and the file count) of
    the whole, the lesson pages, the figures, the notebooks for download, the search index, and
    the scripts and styles."""
    every = list(site_dir.rglob("*"))
    return {"total": megabytes(every), "files": sum(p.is_file() for p in every),
            "lesson pages": megabytes((site_dir / "lessons").glob("*.html")),
            "figures": megabytes((site_dir / "static").rglob("*")),
            "notebooks": megabytes((site_dir / "lessons").glob("*.ipynb")),
            "search index": megabytes((site_dir / "search").rglob("*")),
            "scripts and styles": megabytes((site_dir / "assets").rglob("*"))}
