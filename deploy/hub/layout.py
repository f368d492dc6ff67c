"""The hub's folders and the instructor's course directory, with nbgrader's permissions.

    python layout.py --root /srv/ipu-hub --instructor ada --checkout /opt/ipu-course/src [NAMES]

Makes ROOT/state/ (the hub's database and cookie secret: root only, 0700) and ROOT/exchange/
(nbgrader's exchange: every user reads and writes it, 0777, as nbgrader's documentation asks;
nbgrader then makes each course's inbound/ writable but not listable, so a learner cannot see
another's submission). Builds the course directory in the instructor's home with `ipu-course
editions` (the lessons NAMES, every lesson by default) and gives it to the instructor: their
home is private, so no learner reads the instructor edition. Run as root with the Python of the
hub's environment; deploy/hub/setup runs it.
"""
from __future__ import annotations

import argparse
import os
import pwd
import subprocess
import sys


def make_folders(root: str) -> None:
    """ROOT/state (0700) and ROOT/exchange (0777); an existing folder gets those modes."""
    for name, mode in (("state", 0o700), ("exchange", 0o777)):
        path = os.path.join(root, name)
        os.makedirs(path, exist_ok=True)
        os.chmod(path, mode)  # makedirs' mode is cut by the umask
    os.chmod(root, 0o755)


def build_course(instructor: str, checkout: str, names: list[str]) -> str:
    """`ipu-course editions` into ~instructor/course, owned by the instructor; its path."""
    account = pwd.getpwnam(instructor)
    course = os.path.join(account.pw_dir, "course")
    subprocess.run([sys.executable, "-m", "ipu_tutorials.course", "editions", *names,
                    "--root", checkout, "--out", course], check=True)
    for folder, dirs, files in os.walk(course):
        for name in [folder, *(os.path.join(folder, f) for f in dirs + files)]:
            os.chown(name, account.pw_uid, account.pw_gid)
    os.chmod(account.pw_dir, 0o700)
    return course


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="layout.py", description=__doc__.split("\n")[0])
    parser.add_argument("--root", default="/srv/ipu-hub")
    parser.add_argument("--instructor", required=True, help="the instructor's Unix account")
    parser.add_argument("--checkout", required=True, help="the course's checkout (notebooks/)")
    parser.add_argument("names", nargs="*", help="lessons or prefixes (default: every lesson)")
    args = parser.parse_args(argv)
    try:
        pwd.getpwnam(args.instructor)
    except KeyError:
        print(f"layout.py: no Unix account {args.instructor!r} (accounts.py add instructors NAME)",
              file=sys.stderr)
        return 2
    make_folders(args.root)
    print(build_course(args.instructor, args.checkout, args.names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
