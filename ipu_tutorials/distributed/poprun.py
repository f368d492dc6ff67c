"""poprun: launch a program as several instances sharing replicas (simulated IPUs, gloo).

    poprun --num-instances 2 --num-replicas 4 python mnist_pipeline.py
    python -m ipu_tutorials.poprun --num-instances 2 --num-replicas 4 python train.py

poprun starts each instance itself (one process group each, killed with poprun, see
_launch.py) and gives them a place to meet with a fresh secret: on one host a store in a folder
only this user can open, across hosts a TCP store it hosts (see support/rendezvous.py). popdist reads
what this command sets (replicas, instances, IPUs per replica, RANK). Output lines carry the
instance prefix "[1,<instance>]: ". On several machines, run the same command on every host
listed in --host with the same $IPU_TUTORIALS_RDZV_SECRET: the instances meet at the first
host. Real poprun's Pod flags are accepted with a note (_poprun_flags.py).
"""
from __future__ import annotations

import argparse
import math
import os
import signal
import socket
import sys

from ..poptorch._instances import TIMEOUT_ENV
from ..simulator.hardware import default_system
from ..support import rendezvous
from . import _launch, _poprun_flags

ENV_TOTAL_REPLICAS = "POPDIST_NUM_TOTAL_REPLICAS"
ENV_IPUS_PER_REPLICA = "POPDIST_NUM_IPUS_PER_REPLICA"
ENV_INSTANCES = "POPDIST_NUM_INSTANCES"
ENV_UNDER_POPRUN = "IPU_TUTORIALS_POPRUN"
ENV_STORE_HOSTED = "IPU_TUTORIALS_STORE_HOSTED"  # poprun hosts the store: instance 0 must not
PREFIX = "[1,{rank}]: "  # poprun (through mpirun --tag-output) tags lines with [job,rank]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="poprun", description="Run a program as several instances, each driving some "
        "of the replicas (simulated IPUs; processes on torch.distributed).")
    parser.add_argument("--num-instances", type=int, default=1, help="host processes in all")
    parser.add_argument("--num-replicas", type=int, default=None,
                        help="replicas in all, split evenly between the instances "
                             "(default: one per instance)")
    parser.add_argument("--ipus-per-replica", type=int, default=1, help="IPUs each replica uses")
    parser.add_argument("--numa-aware", nargs="?", type=_poprun_flags.yes_no, const="yes",
                        default="no", metavar="{yes,no}",
                        help="on a Pod: pins each instance to its NUMA node (accepted; the "
                             "simulated instances are not pinned); yes, no, 1 or 0")
    parser.add_argument("--host", default=None,
                        help="comma-separated hosts; run this same command on each of them; "
                             "the first one hosts the rendezvous")
    parser.add_argument("--host-index", type=int, default=None,
                        help="this machine's position in --host (default: found from its "
                             "addresses)")
    parser.add_argument("--rdzv-port", type=int, default=None,
                        help="port of the rendezvous (default: any free port on one host, "
                             "29400 with --host)")
    parser.add_argument("--rdzv-address", default=None,
                        help="address the rendezvous listens on (default: 127.0.0.1 on one "
                             "host, the first --host otherwise)")
    parser.add_argument("--only-output-from-instance", type=int, default=None,
                        help="show the output of this instance only")
    parser.add_argument("--instance-timeout", type=float, default=None,
                        help=f"seconds an instance waits for the others before failing "
                             f"(default: ${TIMEOUT_ENV} or 120)")
    _poprun_flags.add_to(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """poprun's arguments, checked; a bad one exits with status 2 and one line saying why."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_poprun_flags.join_free_text_values(argv, parser))
    try:
        check_args(args)
    except ValueError as error:
        parser.error(str(error))
    return args


def check_args(args: argparse.Namespace) -> None:
    """Raises ValueError stating the rule when the counts do not fit together."""
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        raise ValueError("give the program to run, e.g. poprun --num-instances 2 python train.py")
    if args.num_replicas is None:
        args.num_replicas = args.num_instances
    for name in ("num_instances", "num_replicas", "ipus_per_replica"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got "
                             f"{getattr(args, name)}")
    if args.num_replicas % args.num_instances:
        raise ValueError(f"--num-replicas ({args.num_replicas}) must be a multiple of "
                         f"--num-instances ({args.num_instances}): every instance drives the "
                         f"same number of replicas")
    check_hosts(args)
    ipus, system = args.num_replicas * args.ipus_per_replica, default_system()
    if ipus > system.num_ipus:
        raise ValueError(f"{args.num_replicas} replicas x {args.ipus_per_replica} IPU(s) per "
                         f"replica need {ipus} IPUs but the simulated system has "
                         f"{system.num_ipus}; set IPU_TUTORIALS_NUM_IPUS={ipus} (a bigger Pod) "
                         f"or use fewer replicas")
    timeout = args.instance_timeout
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"--instance-timeout must be a positive number of seconds, got {timeout}")
    shown = args.only_output_from_instance
    if shown is not None and not 0 <= shown < args.num_instances:
        raise ValueError(f"--only-output-from-instance must be between 0 and "
                         f"{args.num_instances - 1}, got {shown}")
    _poprun_flags.mpi_exports(args)  # an open quote is a bad flag too


def check_hosts(args: argparse.Namespace) -> None:
    hosts = hosts_of(args)
    # one host meets in a private file store unless a port or address is asked for
    args.file_store = len(hosts) == 1 and args.rdzv_port is None and args.rdzv_address is None
    if args.num_instances % len(hosts):
        raise ValueError(f"--num-instances ({args.num_instances}) must be a multiple of the "
                         f"{len(hosts)} host(s) in --host, so that each host runs as many")
    if args.rdzv_port is None:
        args.rdzv_port = 29400 if len(hosts) > 1 else 0
    rendezvous.check_port(args.rdzv_port, len(hosts) > 1)
    if args.host_index is not None and not 0 <= args.host_index < len(hosts):
        raise ValueError(f"--host-index must be between 0 and {len(hosts) - 1} (the hosts "
                         f"in --host), got {args.host_index}")


def hosts_of(args: argparse.Namespace) -> list[str]:
    return [h for h in (args.host or "").split(",") if h] or ["localhost"]


def host_index(args: argparse.Namespace, hosts: list[str]) -> int:
    """This machine's position in --host: given, or the first host that is one of its own."""
    if args.host_index is not None or len(hosts) == 1:
        return args.host_index or 0
    for index, host in enumerate(hosts):
        if host in (socket.gethostname(), socket.getfqdn()) or rendezvous.is_local_address(host):
            return index
    raise rendezvous.RendezvousError(f"this machine ({socket.gethostname()}) is none of the "
                                     f"hosts in --host {args.host}; give --host-index")


def instance_environment(args: argparse.Namespace, local_instances: int) -> dict[str, str]:
    """What popdist reads in every instance of this host (launch_environments adds the rest)."""
    env = {ENV_TOTAL_REPLICAS: str(args.num_replicas),
           ENV_IPUS_PER_REPLICA: str(args.ipus_per_replica),
           ENV_INSTANCES: str(args.num_instances), ENV_UNDER_POPRUN: "1",
           "WORLD_SIZE": str(args.num_instances), "LOCAL_WORLD_SIZE": str(local_instances),
           "PYTHONUNBUFFERED": "1"}  # lines reach the prefixed console as they are printed
    if args.instance_timeout is not None:
        env[TIMEOUT_ENV] = str(args.instance_timeout)
    if "OMP_NUM_THREADS" not in os.environ:  # share the cores between this host's instances
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // local_instances))
    return {**env, **_poprun_flags.mpi_exports(args)}


def _loopback_interface() -> str | None:
    names = {name for _, name in socket.if_nameindex()} if hasattr(socket, "if_nameindex") else ()
    return next((n for n in ("lo", "lo0") if n in names), None)


def launch_environments(args, ranks: list[int], secret: str, store_file: str | None = None,
                        address: str | None = None, port: int | None = None
                        ) -> list[dict[str, str]]:
    """Every local instance's environment: the shared part, its rank, and where to meet (the
    private store file, or the TCP store's address and port)."""
    shared = {**instance_environment(args, len(ranks)), rendezvous.SECRET_ENV: secret}
    if store_file is not None:
        shared[rendezvous.STORE_FILE_ENV] = store_file
    else:
        shared.update({"MASTER_ADDR": address, "MASTER_PORT": str(port), ENV_STORE_HOSTED: "1"})
    if ((store_file is not None or address == rendezvous.LOOPBACK)
            and "GLOO_SOCKET_IFNAME" not in os.environ):
        interface = _loopback_interface()  # gloo's own sockets stay on loopback too
        if interface:
            shared["GLOO_SOCKET_IFNAME"] = interface
    return [{**shared, "RANK": str(rank), "LOCAL_RANK": str(local)}
            for local, rank in enumerate(ranks)]


def program(args: argparse.Namespace) -> list[str]:
    command = list(args.command)
    if command[0] in ("python", "python3"):  # the instances run in poprun's interpreter
        command[0] = sys.executable
    return command


def _stop_on_signals(processes) -> None:
    """Ctrl-C, SIGTERM or a closed terminal: end the instances, then poprun."""
    def on_signal(signum, frame):
        _launch.stop(processes)
        sys.exit(128 + signum)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)


def run(args: argparse.Namespace) -> int:
    """Meet, launch, relay, supervise; 0 when every local instance succeeded."""
    hosts = hosts_of(args)
    index, several = host_index(args, hosts), len(hosts) > 1
    secret = rendezvous.secret_from_environment(required=several) or rendezvous.new_secret()
    local = args.num_instances // len(hosts)
    ranks = list(range(index * local, (index + 1) * local))
    if args.file_store:
        folder = rendezvous.private_folder()
        try:
            store_file = os.path.join(folder, "store")
            return _launch_and_wait(args, ranks, launch_environments(args, ranks, secret,
                                                                     store_file=store_file))
        finally:
            rendezvous.remove_private_folder(folder)
    address = args.rdzv_address or (hosts[0] if several else rendezvous.LOOPBACK)
    listener = rendezvous.bind(address, args.rdzv_port) if index == 0 else None
    port = listener.getsockname()[1] if listener else args.rdzv_port
    # the first host serves the TCP store on its own socket while the instances run
    store = rendezvous.tcp_store(address, port, None, listener, 60.0) if listener else None
    environments = launch_environments(args, ranks, secret, address=address, port=port)
    return _launch_and_wait(args, ranks, environments, store)


def _launch_and_wait(args, ranks: list[int], environments: list[dict[str, str]],
                     store=None) -> int:
    """Start this host's instances, relay their output, wait; `store` is kept until they end."""
    processes = _launch.start(program(args), environments)
    _stop_on_signals(processes)
    relays = _launch.relay(processes, ranks, args.only_output_from_instance, PREFIX)
    failures = _launch.supervise(processes, ranks)
    for thread in relays:  # the instances' last lines come before poprun's verdict
        thread.join(timeout=5.0)
    if failures:
        print(_launch.describe(failures, dict(zip(ranks, (p.pid for p in processes)))),
              file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Launch the instances and wait for them; 0 when every instance succeeded."""
    args = parse_args(argv)
    for note in _poprun_flags.notes(args):
        print(note, file=sys.stderr)
    if args.print_topology == "yes":
        print(_poprun_flags.topology(args.num_instances, args.num_replicas, args.ipus_per_replica))
    try:
        return run(args)
    except (rendezvous.RendezvousError, OSError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        print(f"poprun: error: {reason}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
