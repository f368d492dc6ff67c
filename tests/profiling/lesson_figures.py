"""The figures lessons draw with the plotting functions, drawn by the lessons' own code.

Each entry names a walkthrough, a snippet of its figure's cell and a function building the
inputs that code uses (the same as the lesson's, compiled on the meta device where the lesson
trains first); the cell's figure code runs on them (tests/walkthrough_code.py).
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import warnings
from types import SimpleNamespace
from typing import Callable

import matplotlib.pyplot as plt
import pytest
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.profiling import Report
from tests.walkthrough_code import figure_code, imports


@dataclasses.dataclass(frozen=True)
class LessonFigure:
    lesson: str
    snippet: str  # a piece of the figure's cell that no other cell holds
    inputs: Callable[..., dict]  # the names the figure's code uses

    def draw(self, directory: str):
        """Run the figure's code from the walkthrough; returns the figure it drew."""
        plt.close("all")
        inputs = self.inputs(directory)  # first: it skips when an extra the lesson needs is missing
        namespace = {**imports(self.lesson), **inputs}
        code = compile(figure_code(self.lesson, self.snippet), f"walkthroughs/{self.lesson}.py",
                       "exec")
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # plt.show() under Agg says it cannot show
            exec(code, namespace)
        return plt.gcf()


def loader_plans(_) -> dict:
    from ipu_tutorials.classroom.explorers.data_loading import plan_call

    return {"plans": {mode: plan_call(poptorch.Options().deviceIterations(16), 8, mode)
                      for mode in ("Sync", "Async")}}


def blocks_report(_) -> dict:
    """Lesson 3's inference model: the tutorial network, B1..B4 on IPUs 0..3, D 4."""
    from ipu_tutorials.tutorial.models import Network

    torch.manual_seed(0)
    strategy = poptorch.PipelinedExecution(*(poptorch.Stage(f"B{i + 1}").ipu(i) for i in range(4)))
    opts = poptorch.Options().deviceIterations(4).setExecutionStrategy(strategy)
    model = poptorch.inferenceModel(Network(), opts.showCompilationProgressBar(False))
    model.compile(torch.randn(4 * 8, 1, 28, 28))
    report = model.report()
    model.destroy()
    return {"report": report}


def tutorial_plan(name: str):
    """Lessons 4 and 5's configuration (D 10, accumulation 10, AdamW) under one strategy."""
    from ipu_tutorials.classroom.plans import lesson_plan
    from ipu_tutorials.tutorial.loops import strategy

    return lesson_plan(strategy(name))


def pipelined_report(_) -> dict:
    return {"report": Report.from_plan(tutorial_plan("pipelined"))}


def both_strategies(_) -> dict:
    plans = {name: tutorial_plan(name) for name in ("pipelined", "sharded")}
    return {"plans": plans,
            "work": {name: plan.timeline.device_span() for name, plan in plans.items()}}


def phased_best(_) -> dict:
    from ipu_tutorials.classroom.exercises import phased as exercises

    best = exercises.serial_outcome(exercises.fastest_fitting_liveness().name).plan
    return {"exercises": exercises, "best": best,
            "first": [e for e in best.timeline.events if e.micro_batch == 0 and e.step == 0]}


def transformer_plan(offload=False, half=False):
    """Lesson 8's plan_transformer: GPT-2-small on 4 IPUs, AdamW, accumulation 32; the
    OutOfMemoryError when it does not fit."""
    from ipu_tutorials.classroom.explorers.memory import even_split
    from ipu_tutorials.tutorial.models import TransformerLM, split_layers

    with torch.device("meta"):
        lm = TransformerLM(width=768, depth=12, heads=12, recompute_checkpoint_every_layer=True)
    lm = split_layers(lm.half() if half else lm, even_split(12, 4))
    opts = poptorch.Options().showCompilationProgressBar(False)
    opts.Training.gradientAccumulation(32)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(not offload))
    accum = torch.float16 if half else torch.float32
    model = poptorch.trainingModel(lm, opts, poptorch.optim.AdamW(lm.parameters(), accum_type=accum))
    tokens = torch.zeros(4 * 32, 128, dtype=torch.long, device="meta")
    try:
        model.compile(tokens, tokens)
        return model.plan
    except poptorch.OutOfMemoryError as error:
        return error
    finally:
        model.destroy()


def offload_plans(_) -> dict:
    return {"failed": transformer_plan().plan, "offloaded": transformer_plan(offload=True),
            "off_chip": transformer_plan(offload=True, half=True)}


def small_loss_gradients(_) -> dict:
    from ipu_tutorials.classroom.explorers.precision import survival

    return {"result": survival(1.0, torch.float16)}


def four_replicas(_) -> dict:
    """Lesson 10's replicated(4): the tutorial network pipelined, accumulation 8, SGD."""
    from ipu_tutorials.tutorial.loops import training_options
    from ipu_tutorials.tutorial.models import Network, TrainingModelWithLoss

    torch.manual_seed(0)
    opts = training_options("pipelined", device_iterations=1, gradient_accumulation=8,
                            output_all=False)
    opts.replicationFactor(4).showCompilationProgressBar(False)
    net = Network()
    model = poptorch.trainingModel(TrainingModelWithLoss(net), opts,
                                   poptorch.optim.SGD(net.parameters(), lr=0.05))
    model.compile(torch.zeros(10 * 8 * 4, 1, 28, 28), torch.zeros(10 * 8 * 4, dtype=torch.long))
    return {"plan": model.plan}


def observed_report(_) -> dict:
    from ipu_tutorials.classroom.explorers.observing import compiled_report

    return {"report": compiled_report("pipelined", 1, 8)}


def bert_base_even(_) -> dict:
    pytest.importorskip("transformers", reason="lesson 13's figure needs the huggingface extra")
    from ipu_tutorials.classroom.explorers.ipuconfig import bert_ipu_config, plan_bert

    return {"even": plan_bert(bert_ipu_config([3, 3, 3, 3]))}


def lightning_report(directory: str) -> dict:
    """Lesson 14's Lightning run with its automatic report, as the lesson makes it."""
    pytest.importorskip("lightning.pytorch", reason="lesson 14's figure needs the lightning extra")
    import lightning.pytorch as pl

    from ipu_tutorials.lightning import IPUStrategy
    from ipu_tutorials.tutorial.mnist_lightning import MnistClassifier
    from ipu_tutorials.profiling import load_report
    from ipu_tutorials.tutorial.datasets import embedded_digits
    from ipu_tutorials.tutorial.loops import training_options

    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    opts = training_options("sharded", device_iterations=2, gradient_accumulation=4,
                            output_all=False).showCompilationProgressBar(False)
    digits = torch.utils.data.Subset(embedded_digits(train=True), range(512))
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = pl.Trainer(accelerator="ipu", devices=2, max_epochs=1, default_root_dir=directory,
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False,
                             strategy=IPUStrategy(autoreport_dir=directory,
                                                  training_opts=opts.replicationFactor(2)))
        trainer.fit(MnistClassifier(), torch.utils.data.DataLoader(digits, batch_size=16))
    return {"report": load_report(os.path.join(directory, "training"))}


def bert_large(_) -> dict:
    from ipu_tutorials.tutorial.capstone import PUBLISHED, plan_pod16

    return {"plan": plan_pod16(PUBLISHED)}


def schedule_panels(_) -> dict:
    """Lesson 16's three schedules: the IPU's step, and the orders torch's GPipe and 1F1B run
    (which the lesson checks against four real processes; here torch_orders stands in for them)."""
    from ipu_tutorials.classroom.explorers.schedules import recomputing_stages
    from ipu_tutorials.profiling.diagrams import unit_stages
    from ipu_tutorials import torch_engines as engines

    runs = {schedule: SimpleNamespace(schedule=schedule,
                                      orders=engines.torch_orders(schedule, 4, 10))
            for schedule in ("GPipe", "1F1B")}
    times, ipu_times = unit_stages(4), recomputing_stages(4)
    ipu = engines.ipu_step(ipu_times, 10)
    panels = [("simulated IPU pipeline: 4 IPUs, gradientAccumulation(10)", "IPU", ipu)]
    panels += [(f"torch Schedule{run.schedule}: the order its 4 processes ran", "stage",
                engines.replay(run.orders, times)) for run in runs.values()]
    return {"panels": panels, "engines": engines, "ipu_times": ipu_times,
            "gpipe": runs["GPipe"], "one_f_one_b": runs["1F1B"]}


FIGURES = {
    "02 the loaders' calls": LessonFigure("02_efficient_data_loading", "plot_timeline(plan.timeline",
                                          loader_plans),
    "03 placement": LessonFigure("03_blocks_and_stages", "report.plot_placement()", blocks_report),
    "03 memory": LessonFigure("03_blocks_and_stages", "report.plot_memory(zoom=True)", blocks_report),
    "04 one step": LessonFigure("04_pipelining", "report.plot_timeline(steps=1)", pipelined_report),
    "05 pipelined and sharded": LessonFigure("05_sharding", "plot_timeline(plan.timeline", both_strategies),
    "06 one micro-batch in phases": LessonFigure("06_phased_execution", "plot_timeline(first",
                                                 phased_best),
    "08 state on chip": LessonFigure("08_optimizer_offload", "plot_memory(failed.ipus", offload_plans),
    "08 state off chip": LessonFigure("08_optimizer_offload", "plot_memory(offloaded.memory",
                                      offload_plans),
    "08 streaming": LessonFigure("08_optimizer_offload", "Report.from_plan(off_chip)", offload_plans),
    "09 gradients": LessonFigure("09_half_precision", "draw_histogram(result", small_loss_gradients),
    "10 the all-reduce": LessonFigure("10_replication", "plot_timeline(plan.timeline", four_replicas),
    "11 a report": LessonFigure("11_observing_and_profiling", "report.plot_memory(ax=", observed_report),
    "13 BERT-Base": LessonFigure("13_ipuconfig", "plot_memory(even.memory.ipus", bert_base_even),
    "14 Lightning's report": LessonFigure("14_lightning", "timeline = report.plot_timeline()",
                                          lightning_report),
    "15 BERT-Large": LessonFigure("15_capstone_pod16", "plot_memory(plan.memory.ipus", bert_large),
    "16 three schedules": LessonFigure("16_pytorch_engines", "draw_schedules(panels, 4,",
                                       schedule_panels),
}
