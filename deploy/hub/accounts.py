"""The class's Unix accounts: add learners and instructors from a roster, or remove them.

    python3 accounts.py add learners roster.txt > passwords.csv
    python3 accounts.py add instructors ada
    python3 accounts.py remove roster.txt

A roster holds one user name a line (lower-case letters, digits, "-" and "_", starting with a
letter; "#" starts a comment). `add` creates each account with a private home (0700: no learner
reads another's notebooks), puts it in the class's group (ipu-learners or ipu-instructors, which
the hub lets log in) and prints `name,password` with a new random password for each account it
created; an account that exists already is only added to the group. `remove` deletes the
accounts and their homes. Run as root; the standard library only (no environment needed).
"""
from __future__ import annotations

import argparse
import os
import re
import secrets
import subprocess
import sys

GROUPS = {"learners": "ipu-learners", "instructors": "ipu-instructors"}
NAME = re.compile(r"[a-z][a-z0-9_-]{0,30}")


def read_names(items: list[str]) -> list[str]:
    """User names from roster files or given on the command line, in order, once each.

    Raises:
        ValueError: a name is not a valid Unix user name.
    """
    names: list[str] = []
    for item in items:
        lines = [item]
        if os.path.isfile(item):  # a roster
            with open(item, encoding="utf-8") as roster:
                lines = roster.read().splitlines()
        for line in lines:
            name = line.split("#", 1)[0].strip()
            if name and not NAME.fullmatch(name):
                raise ValueError(f"not a user name: {name!r} (lower-case letters, digits, - and _, "
                                 "starting with a letter, at most 31 characters)")
            if name and name not in names:
                names.append(name)
    return names


def exists(name: str) -> bool:
    return subprocess.run(["id", "-u", name], capture_output=True).returncode == 0


def ensure_group(group: str) -> None:
    if subprocess.run(["getent", "group", group], capture_output=True).returncode != 0:
        subprocess.run(["groupadd", group], check=True)


def add(name: str, group: str, password: str | None = None) -> str | None:
    """Create the account (private home, in `group`) and set its password; the password, or
    None when the account existed already (then it is only added to `group`)."""
    ensure_group(group)
    if exists(name):
        subprocess.run(["usermod", "-a", "-G", group, name], check=True)
        return None
    subprocess.run(["useradd", "--create-home", "--key", "HOME_MODE=0700", "--shell", "/bin/bash",
                    "--groups", group, name], check=True)
    password = password or secrets.token_urlsafe(9)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
    return password


def remove(name: str) -> None:
    """Delete the account and its home; an account that does not exist is left alone."""
    if exists(name):
        subprocess.run(["userdel", "--remove", name], capture_output=True, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="accounts.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    adding = commands.add_parser("add", help="create accounts and print their passwords")
    adding.add_argument("role", choices=sorted(GROUPS))
    adding.add_argument("names", nargs="+", help="user names or roster files")
    removing = commands.add_parser("remove", help="delete accounts and their homes")
    removing.add_argument("names", nargs="+", help="user names or roster files")
    args = parser.parse_args(argv)
    try:
        names = read_names(args.names)
    except (OSError, ValueError) as error:
        print(f"accounts.py: {error}", file=sys.stderr)
        return 2
    for name in names:
        if args.command == "remove":
            remove(name)
        elif (password := add(name, GROUPS[args.role])) is not None:
            print(f"{name},{password}")
        else:
            print(f"accounts.py: {name} exists; added to {GROUPS[args.role]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
