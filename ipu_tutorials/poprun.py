"""poprun: launch a program as several instances sharing replicas, on torch.distributed's launcher.

    poprun --num-instances 2 --num-replicas 4 python mnist_pipeline.py
    python -m ipu_tutorials.poprun --num-instances 2 --num-replicas 4 python train.py

Each instance is a process started by torch.distributed's elastic agent (the engine behind
torchrun); popdist reads what this command sets (replicas, instances, IPUs per replica) and the
agent's RANK. Output lines carry the instance prefix "[1,<instance>]: ". On several machines,
run the same command on every host listed in --host: the instances meet through the c10d
rendezvous on the first host.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import uuid

from .poptorch._instances import TIMEOUT_ENV
from .simulator.hardware import default_system

ENV_TOTAL_REPLICAS = "POPDIST_NUM_TOTAL_REPLICAS"
ENV_IPUS_PER_REPLICA = "POPDIST_NUM_IPUS_PER_REPLICA"
ENV_INSTANCES = "POPDIST_NUM_INSTANCES"
ENV_UNDER_POPRUN = "IPU_TUTORIALS_POPRUN"
PREFIX = "[1,${rank}]: "  # poprun (through mpirun --tag-output) tags lines with [job,rank]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="poprun", description="Run a program as several instances, each driving some "
        "of the replicas (simulated IPUs; processes on torch.distributed).")
    parser.add_argument("--num-instances", type=int, default=1, help="host processes in all")
    parser.add_argument("--num-replicas", type=int, default=None,
                        help="replicas in all, split evenly between the instances "
                             "(default: one per instance)")
    parser.add_argument("--ipus-per-replica", type=int, default=1, help="IPUs each replica uses")
    parser.add_argument("--numa-aware", nargs="?", const="yes", default="no",
                        help="accepted for compatibility; the simulated instances are not pinned")
    parser.add_argument("--host", default=None,
                        help="comma-separated hosts; run this same command on each of them; "
                             "the first one hosts the rendezvous")
    parser.add_argument("--rdzv-port", type=int, default=29400,
                        help="port of the rendezvous on the first host (with --host)")
    parser.add_argument("--only-output-from-instance", type=int, default=None,
                        help="show the output of this instance only")
    parser.add_argument("--instance-timeout", type=float, default=None,
                        help=f"seconds an instance waits for the others before failing "
                             f"(default: ${TIMEOUT_ENV} or 120)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")
    args = parser.parse_args(argv)
    try:
        check_args(args)
    except ValueError as error:
        parser.error(str(error))
    return args


def check_args(args: argparse.Namespace) -> None:
    """Raises ValueError stating the rule when the counts do not fit together."""
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
    hosts = hosts_of(args)
    if args.num_instances % len(hosts):
        raise ValueError(f"--num-instances ({args.num_instances}) must be a multiple of the "
                         f"{len(hosts)} host(s) in --host, so that each host runs as many")
    ipus, system = args.num_replicas * args.ipus_per_replica, default_system()
    if ipus > system.num_ipus:
        raise ValueError(f"{args.num_replicas} replicas x {args.ipus_per_replica} IPU(s) per "
                         f"replica need {ipus} IPUs but the simulated system has "
                         f"{system.num_ipus}; set IPU_TUTORIALS_NUM_IPUS={ipus} (a bigger Pod) "
                         f"or use fewer replicas")
    if args.instance_timeout is not None and args.instance_timeout <= 0:
        raise ValueError(f"--instance-timeout must be positive, got {args.instance_timeout}")


def hosts_of(args: argparse.Namespace) -> list[str]:
    return [h for h in (args.host or "").split(",") if h] or ["localhost"]


def instance_environment(args: argparse.Namespace, local_instances: int) -> dict[str, str]:
    """What popdist reads in every instance (the agent adds RANK, WORLD_SIZE, MASTER_*)."""
    env = {ENV_TOTAL_REPLICAS: str(args.num_replicas),
           ENV_IPUS_PER_REPLICA: str(args.ipus_per_replica),
           ENV_INSTANCES: str(args.num_instances), ENV_UNDER_POPRUN: "1",
           "PYTHONUNBUFFERED": "1"}  # lines reach the prefixed console as they are printed
    if args.instance_timeout is not None:
        env[TIMEOUT_ENV] = str(args.instance_timeout)
    if "OMP_NUM_THREADS" not in os.environ:  # share the cores between this host's instances
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // local_instances))
    return env


def torchrun_arguments(args: argparse.Namespace, log_dir: str) -> list[str]:
    """The same launch spelled in torch.distributed.run's terms."""
    hosts = hosts_of(args)
    local = args.num_instances // len(hosts)
    command = list(args.command)
    if command[0] in ("python", "python3"):  # the instances run in poprun's interpreter
        command[0] = sys.executable
    argv = [f"--nproc-per-node={local}", "--max-restarts=0", "--monitor-interval=0.2",
            "--tee=3", f"--log-dir={log_dir}", f"--log-line-prefix-template={PREFIX}",
            "--no-python"]
    if len(hosts) == 1:
        argv += ["--nnodes=1", "--rdzv-backend=c10d", "--rdzv-endpoint=localhost:0"]
    else:
        argv += [f"--nnodes={len(hosts)}", "--rdzv-backend=c10d",
                 f"--rdzv-endpoint={hosts[0]}:{args.rdzv_port}", "--rdzv-id=poprun"]
    if args.only_output_from_instance is not None:
        argv.append(f"--local-ranks-filter={args.only_output_from_instance % local}")
    return argv + command


def describe_failures(error) -> str:
    """One line per instance that ended badly, in the order the launcher saw them end."""
    lines = []
    for rank, failure in sorted(error.failures.items(), key=lambda kv: (kv[1].timestamp, kv[0])):
        code = failure.exitcode
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        lines.append(f"poprun: instance {rank} ended ({how}, pid {failure.pid})")
    return "\n".join(lines + ["poprun: the run failed; the instances' own messages above say why"])


def main(argv: list[str] | None = None) -> int:
    """Launch the instances and wait for them; 0 when every instance succeeded."""
    args = parse_args(argv)
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import elastic_launch

    hosts = hosts_of(args)
    os.environ.update(instance_environment(args, args.num_instances // len(hosts)))
    logging.getLogger("torch.distributed.elastic").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="poprun-") as log_dir:
        launch = torchrun.parse_args(torchrun_arguments(args, log_dir))
        if launch.master_port is None:  # as torchrun's own run() does; c10d ignores it
            launch.master_port = 29500
        if len(hosts) == 1:
            launch.rdzv_id = uuid.uuid4().hex
        config, command, command_args = torchrun.config_from_args(launch)
        try:
            elastic_launch(config, command)(*command_args)
        except ChildFailedError as error:
            print(describe_failures(error), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
