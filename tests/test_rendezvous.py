"""rendezvous.py: peer records signed with the run's secret, and where that secret comes from."""
import pickle

import pytest

from ipu_tutorials import rendezvous

SECRET = "s" * 64


def test_a_record_signed_with_the_secret_is_read_back():
    assert rendezvous.verify(SECRET, rendezvous.sign(SECRET, {"host": "a", "pid": 1}), "x") == \
        {"host": "a", "pid": 1}


@pytest.mark.parametrize("record", [
    rendezvous.sign("t" * 64, {"host": "a", "pid": 1}),  # another secret
    b'{"body": "{\\"host\\": \\"a\\", \\"pid\\": 1}", "mac": "00"}',  # forged
    b"a 1",  # the old unsigned format
    pickle.dumps({"host": "a"}),  # a pickle
    b"[" * 100_000,  # nested
])
def test_a_record_without_the_secret_is_refused(record):
    with pytest.raises(rendezvous.RendezvousError, match=r"refused instance 1: its record is not "
                                                         r"signed with this run's secret"):
        rendezvous.verify(SECRET, record, "instance 1")


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
