"""Where the instances of a run meet: a loopback-bound store, a shared secret, signed records.

poprun hosts torch.distributed's TCPStore on a socket it binds itself (TCPStore alone would
listen on every interface): 127.0.0.1 unless the user names another address. Every record an
instance puts in the store is JSON signed with the run's secret (HMAC-SHA256), and a record
whose signature does not match is refused, so a process that can reach the port but does not
hold the secret cannot join. poprun makes a fresh secret for a run on one host; across hosts
the user gives the same one to every host, in $IPU_TUTORIALS_RDZV_SECRET or in a file named
by $IPU_TUTORIALS_RDZV_SECRET_FILE that only its owner can read (mode 0600).
"""
from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import socket
import stat

SECRET_ENV = "IPU_TUTORIALS_RDZV_SECRET"
SECRET_FILE_ENV = "IPU_TUTORIALS_RDZV_SECRET_FILE"
LOOPBACK = "127.0.0.1"
MIN_SECRET_CHARS = 16


class RendezvousError(RuntimeError):
    """The instances cannot meet safely: a taken port, a missing secret, an unsigned peer."""


def new_secret() -> str:
    return secrets.token_hex(32)


def secret_from_environment(required: bool) -> str | None:
    """The run's secret from the environment (or its 0600 file); None when absent and optional.

    Raises:
        RendezvousError: required but absent, too short, or its file readable by others.
    """
    if os.environ.get(SECRET_FILE_ENV):
        return _secret_from_file(os.environ[SECRET_FILE_ENV])
    secret = os.environ.get(SECRET_ENV)
    if secret is None:
        if required:
            raise RendezvousError(f"instances on several hosts must share a secret: set "
                                  f"{SECRET_ENV} (or {SECRET_FILE_ENV}, a file of mode 0600) to "
                                  f"the same value of at least {MIN_SECRET_CHARS} characters on "
                                  f"every host, e.g. from `python -c 'import secrets; "
                                  f"print(secrets.token_hex(32))'`")
        return None
    return check_secret(secret, SECRET_ENV)


def _secret_from_file(path: str) -> str:
    try:
        info = os.stat(path)
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise RendezvousError(f"cannot read the secret file {path} ({error}); {SECRET_FILE_ENV} "
                              f"must name a readable text file") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise RendezvousError(f"the secret file {path} can be read by other users (mode "
                              f"{stat.S_IMODE(info.st_mode):o}); run `chmod 600 {path}`")
    return check_secret(text, path)


def check_secret(secret: str, where: str) -> str:
    if len(secret) < MIN_SECRET_CHARS:
        raise RendezvousError(f"the secret in {where} has {len(secret)} characters; use at "
                              f"least {MIN_SECRET_CHARS} (e.g. secrets.token_hex(32))")
    return secret


def sign(secret: str, value: dict) -> bytes:
    """`value` as JSON followed by its HMAC-SHA256 under `secret`."""
    body = json.dumps(value, sort_keys=True)
    mac = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
    return json.dumps({"body": body, "mac": mac}).encode()


def verify(secret: str, record: bytes, who: str) -> dict:
    """The value a signed record holds; refuses a record not signed with `secret`.

    Raises:
        RendezvousError: naming `who` (e.g. "instance 1"): unsigned, forged, or not JSON.
    """
    try:
        envelope = json.loads(record.decode())
        body, mac = envelope["body"], envelope["mac"]
        expected = hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()
        if isinstance(mac, str) and hmac.compare_digest(mac, expected):
            value = json.loads(body)
            if isinstance(value, dict):
                return value
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    raise RendezvousError(f"refused {who}: its record is not signed with this run's secret "
                          f"(a process without the secret tried to join, or the hosts were "
                          f"given different {SECRET_ENV} values)")


def check_port(port: int, several_hosts: bool) -> None:
    """A rendezvous port the other hosts can find: 1..65535, and not 0 across hosts."""
    if not 0 <= port <= 65535:
        raise ValueError(f"--rdzv-port must be between 1 and 65535, got {port}")
    if port == 0 and several_hosts:
        raise ValueError("--rdzv-port 0 lets the system pick a port the other hosts cannot "
                         "know; give a fixed free port such as --rdzv-port 29400")


def bind(address: str, port: int) -> socket.socket:
    """A listening socket on address:port, for the store to accept the instances on.

    Raises:
        RendezvousError: the port is taken or the address is not this machine's.
    """
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.bind((address, port))
        listener.listen(128)
    except OSError as error:
        listener.close()
        if error.errno == errno.EADDRINUSE:
            raise RendezvousError(f"port {port} on {address} is already in use (another run "
                                  f"or program holds it); choose a free one with --rdzv-port, "
                                  f"or leave it out on one host") from None
        raise RendezvousError(f"cannot listen on {address}:{port} ({error.strerror}); give an "
                              f"address of this machine with --rdzv-address") from None
    return listener


def is_local_address(address: str) -> bool:
    """True when this machine can listen on `address` (it is one of its own)."""
    try:
        info = socket.getaddrinfo(address, None, proto=socket.IPPROTO_TCP)[0]
    except OSError:
        return False
    with socket.socket(info[0], socket.SOCK_STREAM) as probe:
        try:
            probe.bind((info[4][0], 0))
        except OSError:
            return False
    return True
