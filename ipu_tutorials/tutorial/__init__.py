"""The tutorial's own material: its models, its training and test loops, and its datasets."""
from .loops import (BLOCKS, EpochStats, inference_options, strategy, summary_table, test, train,
                    training_options, whole_calls)

__all__ = ["BLOCKS", "EpochStats", "inference_options", "strategy", "summary_table", "test", "train",
           "training_options", "whole_calls"]
