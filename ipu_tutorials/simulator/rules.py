"""The execution rules, one function each: pipeline depth, minimum counts, stash depth, recomputation.

Placement, memory, costs, schedule and the classroom all call these, so a rule changes in one
place. Legend: N stages, s a stage's index (0 first), A gradient accumulation, D device iterations.

Pipelined training runs each micro-batch forward through the N stages and backward down
them again: 2N-1 pipeline stages, the last forward merged with the first backward.
"""
from __future__ import annotations

from ..errors import Error
from .spec import RunSpec, StrategyKind

PIPELINE_RECOMPUTATION = 3  # PopART's RecomputationType::Pipeline (willow sessionoptions.hpp)


def pipelines(spec: RunSpec, num_stages: int) -> bool:
    """Whether the stages overlap in a pipeline: a one-stage pipeline has nothing to overlap."""
    return spec.strategy.kind == StrategyKind.PIPELINED and num_stages > 1


def schedule_kind(spec: RunSpec, num_stages: int) -> StrategyKind:
    """The schedule that runs: a one-stage pipeline runs sharded."""
    if spec.strategy.kind == StrategyKind.PIPELINED and num_stages == 1:
        return StrategyKind.SHARDED
    return spec.strategy.kind


def pipeline_depth(num_stages: int, training: bool) -> int:
    """Pipeline stages a micro-batch passes through: 2N-1 when training, N for inference."""
    return 2 * num_stages - 1 if training else num_stages


def min_gradient_accumulation(num_stages: int) -> int:
    """Pipelined training needs A >= 2N-1 micro-batches to fill its pipeline once."""
    return pipeline_depth(num_stages, training=True) if num_stages > 1 else 1


def min_device_iterations(num_stages: int) -> int:
    """Pipelined inference fills its N stages with D >= N micro-batches."""
    return num_stages


def fill_cycles(num_stages: int, training: bool) -> int:
    """Cycles before the pipeline is full, and again to drain it: depth - 1."""
    return pipeline_depth(num_stages, training) - 1


def stash_depth(spec: RunSpec, stage_index: int, num_stages: int) -> int:
    """Micro-batches whose inputs and checkpoints stage s holds until their backward.

    A pipeline over N (merged) stages stashes 2(N-1-s)+1 on stage s (PopART pipeline.cpp:
    "2*(IPUs to end) + 1"); recomputation without pipelining (spec.recompute) keeps one
    micro-batch's checkpoints.
    """
    if not spec.training:
        return 0
    if not pipelines(spec, num_stages):
        return 1 if spec.recompute else 0
    return 2 * (num_stages - 1 - stage_index) + 1


def recomputes(spec: RunSpec, num_stages: int) -> bool:
    """Whether the backward pass recomputes the forward's activations.

    PopTorch turns recomputation on for PipelinedExecution over more than one IPU
    (autoRecomputation = Pipeline, poptorch popart_compiler Compiler.cpp), and only when the
    user left autoRecomputation unset, so setting it to 0 turns recomputation off for a
    pipeline too; a user can ask for it on one IPU with opts._Popart.set("autoRecomputation",
    1 or 4), as Graphcore's ResNet-50 does (RecomputeAll): spec.recompute. Every non-zero
    RecomputationType is simulated as recomputing every checkpointed segment. The forward is
    rebuilt from each stage's stashed inputs one recomputation segment at a time, so it costs
    a forward's time and saves all but one segment's activations.
    """
    if spec.recompute is not None:  # set explicitly, also to 0 for a pipeline
        return spec.training and bool(spec.recompute)
    return spec.training and pipelines(spec, num_stages)


def verify_recomputation(spec: RunSpec, num_stages: int) -> None:
    """autoRecomputation 3 (Pipeline) needs a pipeline: without one, PopART 3.4 refuses it
    when it annotates the graph (willow/src/recompute.cpp; phased execution skips that pass).
    The message starts with PopART's own wording."""
    if (spec.recompute == PIPELINE_RECOMPUTATION and not pipelines(spec, num_stages)
            and not spec.strategy.kind.phased):
        raise Error(f"Invalid RecomputationType::Pipeline in autoAnnotate when using implicit "
                    f"pipelining. autoRecomputation 3 (Pipeline) recomputes the stages of a "
                    f"pipeline, and {spec.strategy.text} over {num_stages} stage(s) is none. "
                    f"Fix: opts._Popart.set(\"autoRecomputation\", 1) (Standard) or 4 "
                    f"(RecomputeAll) to recompute without a pipeline.")


def verify_counts(spec: RunSpec, num_stages: int) -> None:
    """Raise Error when a pipeline's counts cannot fill it (A for training, D for inference).

    `num_stages` counts the merged stages (one per IPU switch, placement.merge_same_ipu_stages):
    PopTorch counts K = switches + 1 forward stages and needs 2K-1 micro-batches per step in
    training, K in inference. The message starts with PopTorch's own wording.
    """
    if not pipelines(spec, num_stages):
        return
    n, a, text = num_stages, spec.gradient_accumulation, spec.strategy.text
    need = min_gradient_accumulation(n)
    if spec.training and a < need:
        raise Error(f"poptorch.Options().Training.gradientAccumulation must be greater than or "
                    f"equal to the number of pipeline stages ({need}) when using "
                    f"poptorch.PipelinedExecution. Please note that a model with {n} pipeline "
                    f"stages in PopTorch will have an additional {n - 1} stages when training. "
                    f"Here ({text}), pipelined training over {n} stages (consecutive blocks on one IPU form "
                    f"one stage) runs 2N-1 = {need} pipeline stages "
                    f"(forward, then backward back down), so gradient accumulation must be at "
                    f"least {need}; it is {a}. Fix: opts.Training.gradientAccumulation({need}) "
                    f"or more (more fills the pipeline better), or use ShardedExecution.")
    need = min_device_iterations(n)
    if not spec.training and spec.device_iterations < need:
        raise Error(f"poptorch.Options().deviceIterations must be greater than or equal to the "
                    f"number of pipeline stages ({n}) when using {text}: "
                    f"pipelined inference over {n} stages needs at least {n} micro-batches in "
                    f"flight, so device iterations must be at least {n}; it is "
                    f"{spec.device_iterations}. Fix: opts.deviceIterations({n}) or more.")
