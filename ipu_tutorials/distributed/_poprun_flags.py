"""The flags of Graphcore's real poprun that only mean something on a Pod: accepted, each with a note.

Graphcore's published examples call poprun with V-IPU partition and MPI flags (see
graphcore/examples, e.g. nlp/bert/pytorch/README.md and
tutorials/feature_examples/pytorch/popdist/tests/test_popdist_training.py). The simulator has
no V-IPU server and no mpirun, so these are accepted and `notes` says in one line each what
it would do on a Pod. `-x NAME[=VALUE]` in --mpi-local-args/--mpi-global-args is honoured
(mpirun exports that variable to every instance), as is --executable-cache-path. A yes/no flag
also takes 1 and 0: Graphcore's own commands write `--numa-aware 1` as often as
`--numa-aware=yes` (graphcore/examples v2.6.0, ai_for_simulation/cosmoflow/tensorflow1/README.md
and nlp/bert/popart/benchmarks.yml).
"""
from __future__ import annotations

import argparse
import os
import shlex

YES_NO = ("yes", "no")
_SPELLINGS = {"yes": "yes", "no": "no", "1": "yes", "0": "no"}  # what real poprun's commands use
# flag: (takes, what it does on a Pod); takes is "yes/no", "text" or "count"
POD_ONLY = {
    "--vipu-server-host": ("text", "names the V-IPU server that allocates the Pod's IPUs"),
    "--vipu-server-port": ("text", "names the V-IPU server's port"),
    "--vipu-server-timeout": ("text", "bounds the wait for the V-IPU server, in seconds"),
    "--vipu-partition": ("text", "runs on (or creates) this V-IPU partition of the Pod"),
    "--vipu-allocation": ("text", "runs inside this V-IPU allocation"),
    "--vipu-cluster": ("text", "creates the partition on this V-IPU cluster"),
    "--update-partition": ("yes/no", "resizes an existing partition to the replicas asked"),
    "--reset-partition": ("yes/no", "resets the partition's IPUs before the run"),
    "--remove-partition": ("yes/no", "removes the partition when the run ends"),
    "--sync-type": ("text", "chooses how the instances' IPUs synchronise across the Pod"),
    "--num-ilds": ("count", "spreads the instances over this many IPU-Link domains"),
    "--offline-mode": ("yes/no", "compiles without attaching to IPUs"),
    "--process-placement": ("text", "chooses which hosts run which instances"),
    "--mca": ("text", "passes an Open MPI MCA parameter (name value) to mpirun"),
}


def yes_no(value: str) -> str:
    """A yes/no flag's value as "yes" or "no"; 1 and 0 are the same switch."""
    try:
        return _SPELLINGS[value.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from yes, no, 1, "
                                          f"0)") from None


def is_yes_no(word: str) -> bool:
    return word.lower() in _SPELLINGS


def add_to(parser: argparse.ArgumentParser) -> None:
    """The Pod-only flags, the MPI pass-through flags and the output and topology flags."""
    for flag, (takes, meaning) in POD_ONLY.items():
        kwargs = {"nargs": 2, "metavar": ("NAME", "VALUE")} if flag == "--mca" else (
            {"type": yes_no, "metavar": "{yes,no}"} if takes == "yes/no" else {})
        if takes == "count":
            kwargs["type"] = int
        parser.add_argument(flag, default=None, help=f"on a Pod: {meaning} (accepted, not needed "
                                                     f"here)", **kwargs)
    parser.add_argument("--mpi-global-args", default="", metavar="ARGS",
                        help="arguments for mpirun; -x NAME[=VALUE] exports are honoured, "
                             "--tag-output is always on, the rest is noted")
    parser.add_argument("--mpi-local-args", default="", metavar="ARGS",
                        help="per-instance arguments for mpirun (as --mpi-global-args)")
    parser.add_argument("--tag-output", action="store_true",
                        help="tag each line with [1,<instance>] (always on)")
    parser.add_argument("--print-topology", type=yes_no, metavar="{yes,no}", default="no",
                        help="print which IPUs each instance and replica use")
    parser.add_argument("--executable-cache-path", default=None,
                        help="where instances cache compiled executables (POPTORCH_CACHE_DIR)")
    parser.add_argument("-v", "--vv", dest="verbose", action="count", default=0,
                        help="more messages from poprun")


def join_free_text_values(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """`--mpi-global-args --tag-output` as the published examples write it: the value starts
    with '--', which argparse would read as a flag, so it is glued on with '='. Scanning stops
    where the program begins (the first word that is neither a flag nor a flag's value)."""
    free = ("--mpi-global-args", "--mpi-local-args")
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        if word in free and i + 1 < len(argv):
            out.append(f"{word}={argv[i + 1]}")
            i += 2
            continue
        if word == "--" or not word.startswith("-"):
            return out + argv[i:]
        action = parser._option_string_actions.get(word.split("=")[0])
        if action is None or "=" in word:
            takes = 0
        elif action.nargs == "?":  # --numa-aware [yes|no|1|0]: bare, it means yes
            if not (i + 1 < len(argv) and is_yes_no(argv[i + 1])):
                out.append(f"{word}=yes")  # else argparse would take the program for the value
                i += 1
                continue
            takes = 1
        else:
            takes = action.nargs if isinstance(action.nargs, int) else 1
        out += argv[i:i + 1 + takes]
        i += 1 + takes
    return out


def mpi_exports(args: argparse.Namespace) -> dict[str, str]:
    """The variables `-x NAME[=VALUE]` asks mpirun to export to the instances.

    Raises:
        ValueError: the arguments do not split as a shell would (an open quote).
    """
    exports = {}
    for flag in ("mpi_global_args", "mpi_local_args"):
        try:
            words = shlex.split(getattr(args, flag))
        except ValueError as error:
            raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag)!r}: {error}") from None
        for before, word in zip(words, words[1:]):
            if before == "-x":
                name, has_value, value = word.partition("=")
                if name and (has_value or name in os.environ):
                    exports[name] = value if has_value else os.environ[name]
    if args.executable_cache_path:
        exports["POPTORCH_CACHE_DIR"] = args.executable_cache_path
    return exports


def notes(args: argparse.Namespace) -> list[str]:
    """One line per Pod-only flag that was given: what it would do on a Pod."""
    lines = []
    for flag, (_, meaning) in POD_ONLY.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            shown = " ".join(value) if isinstance(value, list) else value
            lines.append(f"poprun: note: {flag} {shown}: on a Pod this {meaning}; the simulated "
                         f"IPUs need no V-IPU or MPI setup, so it changes nothing here")
    for flag in ("mpi_global_args", "mpi_local_args"):
        rest = [w for w in shlex.split(getattr(args, flag)) if w != "--tag-output"]
        if rest:
            lines.append(f"poprun: note: --{flag.replace('_', '-')}: mpirun would get "
                         f"{' '.join(rest)!r}; only -x exports are applied here")
    return lines


def topology(num_instances: int, num_replicas: int, ipus_per_replica: int) -> str:
    """--print-topology: the IPUs of every replica of every instance."""
    local = num_replicas // num_instances
    lines = []
    for instance in range(num_instances):
        for replica in range(instance * local, (instance + 1) * local):
            first = replica * ipus_per_replica
            ipus = ", ".join(str(i) for i in range(first, first + ipus_per_replica))
            lines.append(f"poprun: instance {instance}, replica {replica}: IPU(s) {ipus}")
    return "\n".join(lines)
