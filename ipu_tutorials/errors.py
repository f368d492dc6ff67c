"""The errors the simulated toolchain raises when a rule is broken."""


class Error(RuntimeError):
    """A rule of the IPU toolchain was broken (placement, batching, memory, device state).

    Bad argument types and values raise the built-in TypeError and ValueError instead, as
    real PopTorch does. Every message states the rule, the offending values and the fix.
    """


class OutOfMemoryError(Error):
    """The memory plan does not fit on at least one IPU; `plan` holds the whole plan."""

    def __init__(self, message: str, plan=None):
        super().__init__(message)
        self.plan = plan


class OfflineDeviceError(AssertionError):
    """A model compiled for an offline IPU was called. PopTorch asserts here, so this is an
    AssertionError (and, as there, not a poptorch.Error)."""
