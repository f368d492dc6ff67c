"""The IPUConfig explorer: layers per IPU of a BERT -> memory and utilisation per IPU.

Every figure comes from pipelining a transformers BERT (float16, on meta tensors) with
`to_pipelined(model, IPUConfig(...)).parallelize()` and compiling it with
poptorch.trainingModel, as optimum-graphcore's IPUTrainer would. Needs transformers.
"""
from __future__ import annotations

import dataclasses
import functools

import torch

from ... import poptorch
from ...optimum.graphcore import IPUConfig
from ...optimum.graphcore.modeling_utils import to_pipelined
from ...profiling.plots import plot_memory, plot_timeline
from .widgets import FIGURE_INCHES, Explorer, slider

MICRO_BATCH, SEQUENCE, ACCUMULATION = 4, 128, 32  # A >= 2 x 14 stages - 1; 8 runs out of memory
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072}  # Devlin et al. (2019), BERT-Base


@functools.lru_cache(maxsize=1)
def bert_base_on_meta() -> torch.nn.Module:
    """BertForMaskedLM, BERT-Base sizes, float16, shapes only (no weights).

    Its masked-LM head projects onto the 30,522-token vocabulary and shares that weight with
    the word embedding, so optimum-graphcore puts it on IPU 0: IPU 0 has extra work.
    """
    from transformers import BertConfig, BertForMaskedLM

    with torch.device("meta"):
        return BertForMaskedLM(BertConfig(**BERT_BASE)).half()


@dataclasses.dataclass
class BertPlan:
    """A compiled plan, or only its memory plan when the model does not fit."""

    ipu_config: IPUConfig
    memory: object  # MemoryPlan
    plan: object | None  # Plan, None when out of memory

    @property
    def fits(self) -> bool:
        return self.plan is not None


def plan_bert(ipu_config: IPUConfig, model: torch.nn.Module | None = None) -> BertPlan:
    """Pipeline BERT-Base (or `model`) by `ipu_config` and compile its training on meta tensors."""
    model = to_pipelined(model if model is not None else bert_base_on_meta(), ipu_config)
    model.parallelize()
    opts = ipu_config.to_options().showCompilationProgressBar(False)
    optimizer = poptorch.optim.AdamW(model.parameters(), accum_type=torch.float16)
    training = poptorch.trainingModel(model, opts, optimizer)
    tokens = torch.zeros(MICRO_BATCH * ipu_config.batch_size_factor(), SEQUENCE,
                         dtype=torch.long, device="meta")
    try:
        training.compile(input_ids=tokens, labels=tokens)
    except poptorch.OutOfMemoryError as error:
        return BertPlan(ipu_config, error.plan, None)
    return BertPlan(ipu_config, training.plan.memory, training.plan)


def bert_ipu_config(layers_per_ipu: list[int], **kwargs) -> IPUConfig:
    """The lesson's training configuration around a layers_per_ipu."""
    kwargs.setdefault("gradient_accumulation_steps", ACCUMULATION)
    # BERT-Base pre-training's cap; Graphcore's BERT configs use 0.05 to 0.28
    # (graphcore/examples@v3.4.1:nlp/bert/pytorch/configs_pretraining.yml)
    kwargs.setdefault("matmul_proportion", 0.25)
    kwargs.setdefault("optimizer_state_offchip", True)  # as the published BERT runs (v0.7's default: on chip)
    return IPUConfig(layers_per_ipu=list(layers_per_ipu), **kwargs)


def describe(result: BertPlan) -> str:
    """One line: throughput and the busiest IPU, or which IPU is out of memory."""
    memory = ", ".join(f"IPU {m.ipu} {m.utilisation:.0%}" for m in result.memory.ipus)
    if not result.fits:
        return f"<b style='color:#c62828'>out of memory</b>; memory used: {memory}"
    plan = result.plan
    busy = ", ".join(f"IPU {i} {u:.0%}" for i, u in enumerate(plan.timeline.utilisation()))
    return (f"{plan.samples_per_second:,.0f} sequences/s simulated; memory used: {memory}; "
            f"busy: {busy}")


def ipuconfig_explorer(first: int = 3, second: int = 3, third: int = 3) -> Explorer:
    """Sliders for BERT-Base's layers on IPUs 0-2 (IPU 3 takes the rest, like -1) -> plots."""
    controls = {"first": slider("layers on IPU 0", first, 0, 12),
                "second": slider("layers on IPU 1", second, 0, 12),
                "third": slider("layers on IPU 2", third, 0, 12)}

    def compute(first, second, third):
        rest = 12 - first - second - third
        if rest < 0:
            raise poptorch.Error(f"IPUs 0-2 take {first + second + third} of BERT-Base's 12 "
                                 f"layers: lower a slider so that IPU 3 keeps at least 0")
        result = plan_bert(bert_ipu_config([first, second, third, rest]))
        head = f"layers_per_ipu=[{first}, {second}, {third}, {rest}]: "
        return {"result": result, "text": head + describe(result)}

    def draw(result, figure):  # the memory panel above the timeline, each as wide as the column
        plan = result["result"].plan
        axes = figure.subplots(2 if plan else 1, 1, squeeze=False,
                               gridspec_kw={"height_ratios": [2, 3] if plan else [1]})[:, 0]
        plot_memory(result["result"].memory.ipus, ax=axes[0])
        if plan is not None:
            plot_timeline(plan.timeline.events, plan.timeline.num_ipus, ax=axes[1],
                          label_micro_batches=False)

    return Explorer("IPUConfig explorer: BERT-Base layers per IPU", controls, compute, draw,
                    figsize=(FIGURE_INCHES, 7))
