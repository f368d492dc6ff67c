"""DeviceLink: a wrapped model's hold on its IPUs, its tensor names and its random state."""
from __future__ import annotations

import torch

from ..errors import Error
from .enums import ConnectionType


class DeviceLink:
    """PoplarExecutor's attach/detach, compile state, tensor names, anchors and `rng_state`.

    A part of PoplarExecutor (it reads the executor's compiled plan, options, anchors and
    optimizer state), kept apart so that each module stays small.
    """

    def detachFromDevice(self) -> None:
        """Release the IPUs so that another process or model may use them, as PopTorch does.

        A training model's weights and optimizer state are read back first (here the host
        already holds the weights); the next call, or `attachToDevice()`, attaches again.

        Raises:
            Error: before compile, or when the device is not attached.
        """
        self._require_compiled()
        if not self._attached:
            raise Error("the device is not attached: nothing to detach")
        if self._optimizer_state is not None:
            self._optimizer_state.on_detach()
        self._attached = False

    def attachToDevice(self) -> None:
        """Attach to the IPUs again after `detachFromDevice()`, uploading the host's weights
        and the optimizer state, as PopTorch reloads its engine and streams on attach.

        Raises:
            Error: before compile, or when the device is already attached.
            AssertionError: for a model compiled offline (`ConnectionType.Never`), as
                PopTorch asserts.
        """
        self._require_compiled()
        assert self._options._value("connection_type") != ConnectionType.Never, (
            "Trying to attach to an offline device (ConnectionType.Never): the model was "
            "compiled for an offline IPU")
        if self._attached:
            raise Error("the device is already attached")
        self._attached = True
        self.copyWeightsToDevice()  # PopTorch uploads the host's weights on every attach
        if self._optimizer_state is not None:
            self._optimizer_state.on_attach()

    def isAttachedToDevice(self) -> bool:
        """Whether the compiled model holds its IPUs now (False before compile, after
        `detachFromDevice()` or `destroy()`, and for a model compiled offline)."""
        return self._attached

    def isCompiled(self) -> bool:
        """Whether the model has been compiled (by `compile()` or its first call) and not
        destroyed since."""
        return self._plan is not None

    def getTensorNames(self) -> list[str]:
        """The names of the compiled graph's tensors, for `Options.anchorTensor`.

        PopTorch lists PopART's names; the simulator has no PopART graph and lists the
        module's parameter and buffer names, then `output0`, `output1`, ...
        (docs/differences.md).

        Raises:
            AssertionError: before compile (PopTorch asserts).
        """
        assert self._graph is not None, ("Model must be compiled before calling "
                                         "getTensorNames: call model.compile(inputs) first")
        return list(self._graph.params) + [f"output{i}" for i in range(len(self._graph.outputs))]

    def getAnchoredTensor(self, short_name: str) -> torch.Tensor:
        """The value of a tensor anchored with `opts.anchorTensor(short_name, ...)`, from the
        last call (PopTorch's `getAnchoredTensor`).

        Args:
            short_name: the name given to `anchorTensor`.

        Raises:
            AssertionError: for a name that was not anchored, or one with no value before the
                first call (PopTorch asserts).
        """
        return self._anchors.get(short_name)

    @property
    def rng_state(self) -> torch.Tensor:
        """The random number generator's state, to read or to set (`model.rng_state = s`).

        PopTorch reads the IPU's seed and generator state as a list of ints; the simulator's
        random numbers come from torch's CPU generator, so this is `torch.get_rng_state()`'s
        tensor and setting it calls `torch.set_rng_state` (docs/differences.md).

        Raises:
            Error: before compile, as in PopTorch.
        """
        self._require_compiled()
        return torch.get_rng_state()

    @rng_state.setter
    def rng_state(self, state: torch.Tensor):
        self._require_compiled()
        torch.set_rng_state(state)
