"""Several host processes sharing one replicated run: the `poprun` launcher (`poprun.py`, the
Pod flags it accepts with a note in `_poprun_flags.py`, the process groups it starts and
supervises in `_launch.py`) and `popdist`, which each instance reads. Their store, where the
instances meet, is `support/rendezvous.py`: the facade joins it too, so it lies below both.

`ipu_tutorials.popdist` and `ipu_tutorials.poprun` (and `python -m ipu_tutorials.poprun`) stay
the names PopTorch code and the `poprun` command use.
"""
