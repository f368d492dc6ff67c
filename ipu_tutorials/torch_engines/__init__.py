"""Lesson 16's engines: lesson 4's model trained for real by torch.distributed on a few local
processes, and torch's pipeline schedules as data, beside the simulated IPU."""
from .processes import EngineError
from .runs import (STAGES, DataParallelRun, PipelineRun, ShardedRun, flat_weights,
                   run_data_parallel, run_pipeline, run_sharded_state)
from .schedules import (SCHEDULES, bubble, ipu_step, order_text, orders_of, peak_in_flight,
                        replay, torch_orders)

__all__ = ["DataParallelRun", "EngineError", "PipelineRun", "SCHEDULES", "STAGES", "ShardedRun",
           "bubble", "flat_weights", "ipu_step", "order_text", "orders_of", "peak_in_flight",
           "replay", "run_data_parallel", "run_pipeline", "run_sharded_state", "torch_orders"]
