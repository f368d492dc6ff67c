"""Helpers every floor may use, importing no other room: files written atomically and read back
with one clear line on a bad one (`atomic_io.py`), `torch.load` that runs no code from the file
(`trusted_load.py`), the environment variables the package honours (`environment.py`), host
memory (`host_memory.py`), torch's thread count (`threads.py`) and the store where several
processes meet (`rendezvous.py`)."""
