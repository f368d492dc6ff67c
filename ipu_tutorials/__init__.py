"""Learn IPU model parallelism with real PopTorch code on simulated IPUs."""
from .simulator.hardware import default_system, reset_system, set_system

__version__ = "0.1.0"
__all__ = ["default_system", "reset_system", "set_system"]
