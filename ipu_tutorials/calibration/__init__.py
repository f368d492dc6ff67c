"""The cost model's calibration: Graphcore's published runs rebuilt as simulator plans
(`published_runs.py`, the runs its constants were fitted on) and the runs it was not fitted on
(`validation_runs.py`, `validation_cnns.py`). `benchmarks/calibration.py` and
`benchmarks/validation.py` print their tables.

It lives in `tutorial/`, not `simulator/`: every run is configured through the facade
(`poptorch.Options`, its optimizers) and the tutorial's models, which sit above the simulator.
"""
