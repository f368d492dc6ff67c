"""rendezvous.py: the store's values signed with the run's secret, the private store folder,
and where the secret comes from."""
import datetime
import os
import re
import threading

import pytest
import torch.distributed as dist

from ipu_tutorials.support import rendezvous

SECRET = "s" * 64


def signed(secret: str = SECRET):
    plain = dist.HashStore()
    return plain, rendezvous.SignedStore(plain, secret)


def test_a_value_set_through_the_signed_store_reads_back():
    _, store = signed()
    store.set("joined/0", '{"host": "a", "pid": 1}')
    store.set("gloo/0", b"\x00\xffaddress")
    assert store.get("joined/0") == b'{"host": "a", "pid": 1}'
    assert store.get("gloo/0") == b"\x00\xffaddress"
    assert store.check(["joined/0", "gloo/0"]) and not store.check(["joined/1"])
    store.wait(["gloo/0"], datetime.timedelta(seconds=1))


@pytest.mark.parametrize("forge", [
    lambda plain, store: plain.set("joined/1", b'{"host": "a", "pid": 1}'),  # written directly
    lambda plain, store: rendezvous.SignedStore(plain, "t" * 64).set("joined/1", b"x"),  # secret
    lambda plain, store: (store.set("joined/0", b"x"),  # a signed value copied to another key
                          plain.set("joined/1", plain.get("joined/0"))),
    lambda plain, store: plain.set("joined/1", b"short"),  # shorter than a signature
])
def test_a_value_not_signed_with_the_secret_under_its_key_is_refused(forge):
    plain, store = signed()
    forge(plain, store)
    with pytest.raises(rendezvous.ForgedValue, match=r"refused the store's 'joined/1': it is not "
                                                     r"signed with this run's secret"):
        store.get("joined/1")


def test_gloos_own_connection_records_are_checked_too():
    class Unsigned(rendezvous.SignedStore):  # an instance whose records lack the secret
        def set(self, key, value):
            self.store.set(key, b"x" * self.MAC_BYTES + bytes(value))

    plain, results = dist.HashStore(), {}

    def connect(rank, store):
        try:
            dist.ProcessGroupGloo(dist.PrefixStore("pg", store), rank, 2,
                                  datetime.timedelta(seconds=20))
            results[rank] = "connected"
        except Exception as error:  # noqa: BLE001 (the test reads what each rank met)
            results[rank] = f"{type(error).__name__}: {error}"

    ranks = [threading.Thread(target=connect, args=(0, rendezvous.SignedStore(plain, SECRET)),
                              daemon=True),
             threading.Thread(target=connect, args=(1, Unsigned(plain, SECRET)), daemon=True)]
    for thread in ranks:
        thread.start()
    for thread in ranks:
        thread.join(60)
    assert re.fullmatch(r"ForgedValue: refused the store's 'pg/\S+': it is not signed with this "
                        r"run's secret .*", results[0])


def test_the_private_folder_is_this_users_alone(tmp_path):
    folder = rendezvous.private_folder()
    try:
        info = os.stat(folder)
        assert info.st_uid == os.getuid() and info.st_mode & 0o777 == 0o700
        store = rendezvous.file_store(os.path.join(folder, "store"), 1, timeout=5)
        store.set("k", b"v")
        assert store.get("k") == b"v"
    finally:
        rendezvous.remove_private_folder(folder)
    assert not os.path.exists(folder)


def test_a_store_folder_others_can_open_is_refused(tmp_path):
    tmp_path.chmod(0o755)
    with pytest.raises(rendezvous.RendezvousError, match=r"can be opened by other users \(mode "
                                                         r"755, owner \d+\); "
                                                         r"IPU_TUTORIALS_RDZV_FILE must name"):
        rendezvous.file_store(str(tmp_path / "store"), 2, timeout=5)
    with pytest.raises(rendezvous.RendezvousError, match="cannot be read"):
        rendezvous.file_store(str(tmp_path / "missing" / "store"), 2, timeout=5)


def test_a_secret_file_must_be_private_and_long_enough(tmp_path, monkeypatch):
    path = tmp_path / "secret"
    path.write_text(SECRET)
    monkeypatch.delenv(rendezvous.SECRET_ENV, raising=False)
    monkeypatch.setenv(rendezvous.SECRET_FILE_ENV, str(path))
    path.chmod(0o644)
    with pytest.raises(rendezvous.RendezvousError, match=r"can be read by other users \(mode "
                                                         r"644\); run `chmod 600"):
        rendezvous.secret_from_environment(required=True)
    path.chmod(0o600)
    assert rendezvous.secret_from_environment(required=True) == SECRET
    path.write_text("short")
    with pytest.raises(rendezvous.RendezvousError, match="has 5 characters; use at least 16"):
        rendezvous.secret_from_environment(required=True)


def test_several_hosts_need_a_secret(monkeypatch):
    monkeypatch.delenv(rendezvous.SECRET_ENV, raising=False)
    monkeypatch.delenv(rendezvous.SECRET_FILE_ENV, raising=False)
    assert rendezvous.secret_from_environment(required=False) is None
    with pytest.raises(rendezvous.RendezvousError, match="instances on several hosts must share "
                                                         "a secret: set IPU_TUTORIALS_RDZV_SECRET"):
        rendezvous.secret_from_environment(required=True)


@pytest.mark.parametrize("port, several_hosts, message", [
    (70000, False, "--rdzv-port must be between 1 and 65535, got 70000"),
    (-1, True, "--rdzv-port must be between 1 and 65535, got -1"),
    (0, True, "--rdzv-port 0 lets the system pick a port the other hosts cannot know"),
])
def test_a_port_the_other_hosts_cannot_find_is_refused(port, several_hosts, message):
    with pytest.raises(ValueError, match=message):
        rendezvous.check_port(port, several_hosts)
    rendezvous.check_port(0, several_hosts=False)  # one host: any free port will do


def test_a_taken_port_is_one_clear_error():
    with rendezvous.bind(rendezvous.LOOPBACK, 0) as first:
        port = first.getsockname()[1]
        with pytest.raises(rendezvous.RendezvousError, match=f"port {port} on 127.0.0.1 is "
                                                             f"already in use"):
            rendezvous.bind(rendezvous.LOOPBACK, port)


def test_only_this_machines_addresses_are_local():
    assert rendezvous.is_local_address("127.0.0.1")
    assert not rendezvous.is_local_address("192.0.2.1")  # TEST-NET-1: never assigned to a host
    assert not rendezvous.is_local_address("no-such-host.invalid")
