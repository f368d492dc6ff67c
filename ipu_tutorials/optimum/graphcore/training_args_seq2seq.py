"""IPUSeq2SeqTrainingArguments: IPUTrainingArguments plus the sequence-to-sequence generation fields."""
from __future__ import annotations

import dataclasses

from .training_args import IPUTrainingArguments


@dataclasses.dataclass
class IPUSeq2SeqTrainingArguments(IPUTrainingArguments):
    """optimum-graphcore's seq2seq arguments: sortish_sampler, predict_with_generate,
    generation_max_length, generation_num_beams, generation_config."""

    sortish_sampler: bool = False
    predict_with_generate: bool = False
    generation_max_length: int | None = None
    generation_num_beams: int | None = None
    generation_config: str | None = None
