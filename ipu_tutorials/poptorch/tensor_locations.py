"""opts.TensorLocations and poptorch.TensorLocationSettings: where each kind of tensor lives."""
from __future__ import annotations

import functools

from ._checks import check_bool, check_int
from ._declared import Option, _OptionGroup, declared

TENSOR_KINDS = ("activation", "weight", "optimizer", "accumulator")  # what TensorLocations places


def _flag(where: str, use) -> int:
    """A bool stored as 0 or 1, as PopTorch stores these settings."""
    return int(check_bool(where, use))


_count = functools.partial(check_int, minimum=0)


class TensorLocationSettings(_OptionGroup):
    """Where one kind of tensor lives: on chip, off chip (streamed), or sharded across replicas.

    Each setting is absent until its setter runs; the simulator then applies its default
    (on chip, not sharded, except that phased execution puts what is left unset off chip).
    """

    # PopTorch keeps each by its setter's name, the flags as 0 or 1
    on_chip = Option(None, setter="useOnChipStorage", check=_flag, key="onChip",
                     spec="on_chip", to_spec=bool, optional=True)
    replicated_tensor_sharding = Option(
        None, setter="useReplicatedTensorSharding", check=_flag, key="useReplicatedTensorSharding",
        spec="replicated_sharding", to_spec=bool, optional=True)
    min_elements_for_off_chip = Option(
        None, setter="minElementsForOffChip", check=_count, key="minElementsForOffChip",
        spec="min_elements_off_chip", optional=True)
    min_elements_for_replicated_tensor_sharding = Option(
        None, setter="minElementsForReplicatedTensorSharding", check=_count,
        key="minElementsForReplicatedTensorSharding", spec="min_elements_sharding", optional=True)
    io_tiles_to_load = Option(None, setter="useIOTilesToLoad", check=_flag, key="useIOTilesToLoad",
                              optional=True)
    io_tiles_to_store = Option(None, setter="useIOTilesToStore", check=_flag,
                               key="useIOTilesToStore", optional=True)

    @classmethod
    def _from_dict(cls, settings: dict) -> "TensorLocationSettings":
        """The settings toDict() gave (stored as they are: 0 and 1 for the flags)."""
        rebuilt = cls()
        for option in declared(cls):
            if option.key in settings:
                rebuilt._store({option.name: settings[option.key]})
        return rebuilt

    def useOnChipStorage(self, use: bool = True) -> "TensorLocationSettings":
        """Keep the tensors in the IPU's own memory (True, the default when unset) or stream
        them from the host's Streaming Memory when needed (False).

        Args:
            use: True or False (default True).
        """
        return self._set(on_chip=use)

    def useReplicatedTensorSharding(self, use: bool = True) -> "TensorLocationSettings":
        """Split each tensor across the replicas, each holding one slice (for weights and
        optimizer state; PopTorch's replicated tensor sharding).

        Args:
            use: True or False (default True).
        """
        return self._set(replicated_tensor_sharding=use)

    def minElementsForOffChip(self, min_elements: int) -> "TensorLocationSettings":
        """Keep tensors smaller than this many elements on chip even when off chip is asked.

        Args:
            min_elements: an integer >= 0.
        """
        return self._set(min_elements_for_off_chip=min_elements)

    def minElementsForReplicatedTensorSharding(self, min_elements: int
                                               ) -> "TensorLocationSettings":
        """Shard only tensors of more than this many elements across the replicas.

        Args:
            min_elements: an integer >= 0.
        """
        return self._set(min_elements_for_replicated_tensor_sharding=min_elements)

    def useIOTilesToLoad(self, use: bool = True) -> "TensorLocationSettings":
        """Load the tensors through the I/O tiles (TensorLocations.numIOTiles sets them
        aside); recorded, not simulated.

        Args:
            use: True or False (default True).
        """
        return self._set(io_tiles_to_load=use)

    def useIOTilesToStore(self, use: bool = True) -> "TensorLocationSettings":
        """Store the tensors through the I/O tiles; recorded, not simulated.

        Args:
            use: True or False (default True).
        """
        return self._set(io_tiles_to_store=use)


def _io_tiles(where: str, num_tiles) -> int:
    if not isinstance(num_tiles, int) or isinstance(num_tiles, bool):
        raise TypeError(f"{where} expects an int, got {num_tiles!r}")
    # PopTorch checks with assert statements: the same AssertionError, kept under python -O
    if not (32 <= num_tiles <= 192 and num_tiles % 2 == 0):
        raise AssertionError("numIOTiles must be an even number between 32 and 192.")
    return num_tiles


def _location(where: str, settings) -> dict:
    """A copy of the settings' values by PopTorch's names ({"onChip": 0, ...})."""
    if not isinstance(settings, TensorLocationSettings):
        raise TypeError(f"{where} expects a poptorch.TensorLocationSettings, got "
                        f"{type(settings).__name__}")
    return settings.toDict()


def _location_option(kind: str) -> Option:
    return Option(None, setter=f"set{kind.title()}Location", check=_location, optional=True)


class _TensorLocationOptions(_OptionGroup):
    """opts.TensorLocations: where activations, weights, optimizer state and accumulators live."""

    _prefix = "TensorLocations."
    num_io_tiles = Option(None, setter="numIOTiles", check=_io_tiles, key="numIOTiles",
                          optional=True)
    location_activation = _location_option("activation")
    location_weight = _location_option("weight")
    location_optimizer = _location_option("optimizer")
    location_accumulator = _location_option("accumulator")

    def numIOTiles(self, num_tiles: int) -> "_TensorLocationOptions":
        """Set aside this many tiles of each IPU for host I/O (overlapped I/O needs them);
        recorded and checked, not simulated (the tiles still compute here).

        Args:
            num_tiles: an even number from 32 to 192; anything else raises AssertionError,
                as PopTorch's asserts do.
        """
        return self._set(num_io_tiles=num_tiles)

    def setActivationLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        """Where activations live.

        Args:
            location: a poptorch.TensorLocationSettings (copied: later changes to it do not
                reach these options).
        """
        return self._set(location_activation=location)

    def setWeightLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        """Where weights live.

        Args:
            location: a poptorch.TensorLocationSettings (copied).
        """
        return self._set(location_weight=location)

    def setOptimizerLocation(self, location: TensorLocationSettings) -> "_TensorLocationOptions":
        """Where the optimizer state lives (momentum, Adam's moments).

        Args:
            location: a poptorch.TensorLocationSettings (copied).
        """
        return self._set(location_optimizer=location)

    def setAccumulatorLocation(self, location: TensorLocationSettings
                               ) -> "_TensorLocationOptions":
        """Where the gradient accumulators live.

        Args:
            location: a poptorch.TensorLocationSettings (copied).
        """
        return self._set(location_accumulator=location)

    def _location(self, kind: str) -> dict:
        """The settings given for one kind of tensor, by PopTorch's names ({} when unset);
        PopTorch holds them as `location_<kind>` once set."""
        if kind not in TENSOR_KINDS:
            raise ValueError(f"unknown tensor kind {kind!r}; the kinds are {', '.join(TENSOR_KINDS)}")
        return dict(self._value(f"location_{kind}") or {})

    def _settings(self, kind: str) -> TensorLocationSettings:
        """The settings given for one kind of tensor, as TensorLocationSettings."""
        return TensorLocationSettings._from_dict(self._location(kind))
