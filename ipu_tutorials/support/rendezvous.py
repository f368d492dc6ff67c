"""Where the instances of a run meet: a store only the job can use, values signed with a secret.

On one host poprun makes a folder only its user can open (mode 0700) and the instances meet in
a torch.distributed FileStore inside it: another user's process cannot read or write it, and
no port is opened. Across hosts (or when the user names a port or address) they meet in a
TCPStore that poprun hosts on a socket it binds itself (TCPStore alone would listen on every
interface). torch's stores have no authentication of their own, so every value is stored with
an HMAC-SHA256 of its key and value under the run's secret (`SignedStore`), gloo's connection
records included, and a value without it is refused where it is read: a process that can reach
the port but does not hold the secret can disturb the meeting, not join or redirect it. poprun
makes a fresh secret for a run on one host; across hosts the user gives the same one to every
host, in $IPU_TUTORIALS_RDZV_SECRET or in a file named by $IPU_TUTORIALS_RDZV_SECRET_FILE that
only its owner can read (mode 0600).
"""
from __future__ import annotations

import datetime
import errno
import hashlib
import hmac
import os
import secrets
import shutil
import socket
import stat
import tempfile

import torch.distributed as dist

SECRET_ENV = "IPU_TUTORIALS_RDZV_SECRET"
SECRET_FILE_ENV = "IPU_TUTORIALS_RDZV_SECRET_FILE"
STORE_FILE_ENV = "IPU_TUTORIALS_RDZV_FILE"  # the FileStore poprun gives the instances of one host
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


class ForgedValue(RendezvousError):
    """A value in the run's store that was not stored with the run's secret."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(f"refused the store's {key!r}: it is not signed with this run's secret "
                         f"(a process without the secret wrote it, or the hosts were given "
                         f"different {SECRET_ENV} values)")


class SignedStore(dist.Store):
    """A torch.distributed store whose values carry an HMAC-SHA256 of their key and value.

    `set` signs, `get` checks and refuses a value that was not signed with the same secret under
    the same key (so a value cannot be copied to another key either). Counters (`add`,
    `compare_set`) pass through unsigned: gloo and the instances only set, wait and get.
    """

    MAC_BYTES = hashlib.sha256().digest_size

    def __init__(self, store: dist.Store, secret: str):
        super().__init__()
        self.store, self._key = store, secret.encode()

    def _mac(self, key: str, value: bytes) -> bytes:
        message = f"{len(key)}:{key}".encode() + value
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def set(self, key: str, value) -> None:
        value = value.encode() if isinstance(value, str) else bytes(value)
        self.store.set(key, self._mac(key, value) + value)

    def get(self, key: str) -> bytes:
        record = self.store.get(key)
        mac, value = record[:self.MAC_BYTES], record[self.MAC_BYTES:]
        if not hmac.compare_digest(mac, self._mac(key, value)):
            raise ForgedValue(key)
        return value

    def check(self, keys: list[str]) -> bool:
        return self.store.check(keys)

    def wait(self, keys: list[str], timeout: datetime.timedelta | None = None) -> None:
        if timeout is None:
            self.store.wait(keys)
        else:
            self.store.wait(keys, timeout)

    def add(self, key: str, amount: int) -> int:
        return self.store.add(key, amount)

    def compare_set(self, key: str, expected, desired) -> bytes:
        return self.store.compare_set(key, expected, desired)

    def delete_key(self, key: str) -> bool:
        return self.store.delete_key(key)

    def num_keys(self) -> int:
        return self.store.num_keys()

    def set_timeout(self, timeout: datetime.timedelta) -> None:
        self.store.set_timeout(timeout)


def private_folder() -> str:
    """A new folder that only this user can open (mkdtemp makes it 0700, with a random name)."""
    return tempfile.mkdtemp(prefix="ipu-tutorials-rdzv-")


def remove_private_folder(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def file_store(path: str, count: int, timeout: float) -> dist.FileStore:
    """The FileStore at `path`, once its folder is shown to be this user's alone.

    Raises:
        RendezvousError: the folder is missing, someone else's, or open to other users.
    """
    folder = os.path.dirname(os.path.abspath(path))
    try:
        info = os.stat(folder)
    except OSError as error:
        raise RendezvousError(f"the run's store folder {folder} cannot be read "
                              f"({error.strerror}); start the instances with poprun") from None
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise RendezvousError(f"the run's store folder {folder} can be opened by other users "
                              f"(mode {stat.S_IMODE(info.st_mode):o}, owner {info.st_uid}); "
                              f"{STORE_FILE_ENV} must name a file in a folder of mode 700 that "
                              f"is yours, as poprun makes it")
    store = dist.FileStore(path, count)
    store.set_timeout(datetime.timedelta(seconds=timeout))
    return store


def tcp_store(host: str, port: int, world_size: int | None, listener: socket.socket | None,
              timeout: float) -> dist.TCPStore:
    """torch's TCPStore at host:port; it serves on `listener` when given (else it is a client).

    The store takes the listening socket over (Python would otherwise close it at exit while
    the store's thread still polls it, which aborts the process). It uses torch's older backend:
    the libuv one, torch's default since 2.4, refuses a listening socket in torch 2.6 (2.14
    takes it), and trying it first leaves the socket unusable.
    """
    serving = {"master_listen_fd": listener.detach(), "use_libuv": False} if listener else {}
    return dist.TCPStore(host, port, world_size, is_master=listener is not None,
                         timeout=datetime.timedelta(seconds=timeout), wait_for_workers=False,
                         **serving)


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
    try:
        return listen(address, port)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise RendezvousError(f"port {port} on {address} is already in use (another run "
                                  f"or program holds it); choose a free one with --rdzv-port, "
                                  f"or leave it out on one host") from None
        raise RendezvousError(f"cannot listen on {address}:{port} ({error.strerror}); give an "
                              f"address of this machine with --rdzv-address") from None


def listen(address: str, port: int) -> socket.socket:
    """A socket listening on address:port (0: a free port); on failure it is closed again and
    the OSError raised, for the caller to say what to do about it."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.bind((address, port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
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
