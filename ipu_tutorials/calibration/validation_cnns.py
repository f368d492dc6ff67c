"""Validation runs of grouped-convolution CNNs: ResNeXt-101 and Graphcore's EfficientNet-B4 G16.

Configurations from graphcore/examples@8ae588c vision/cnns/tensorflow1/training/configs.yml
(resnext101_16ipus, efficientnet_b4_g16_16ipus / _64ipus); published throughputs from
graphcore.ai/performance-results (TensorFlow1, SDK 3.0, Bow Pod16 and Pod64). Both are
pipelined over 2 IPUs with recomputation, half partials and 8-bit input. The TF1 configs do
not state poprun's instance count: like the ResNet-50 calibration run, one host process per
2 IPUs is assumed.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from .. import poptorch
from ..simulator.hardware import System, ipu_spec
from .published_runs import PublishedRun, plan_run

RESULTS = "graphcore.ai/performance-results, TensorFlow1 SDK 3.0"
TF1_CONFIGS = "graphcore/examples@8ae588c vision/cnns/tensorflow1/training/configs.yml"
GROUP_DIM = 16  # efficientnet_b4_g16: channels per group of the "depthwise" convolutions
EXPAND_RATIO = 4  # efficientnet_b4_g16: expansion of the MBConv blocks (6 in EfficientNet)


class Classifier(nn.Module):
    """A torchvision network fed 8-bit images cast to float16, split over 2 pipelined IPUs."""

    def __init__(self, net: nn.Module, first: nn.Module, split: nn.Module):
        super().__init__()
        self.net, self.loss = net, nn.CrossEntropyLoss()
        poptorch.BeginBlock(first, "first", ipu_id=0)
        poptorch.BeginBlock(split, "second", ipu_id=1)

    def forward(self, images, labels):
        logits = self.net(images.half())
        return logits, self.loss(logits, labels)


def resnext101() -> Classifier:
    """ResNeXt-101 32x4d, split before stage 3's fourth unit (pipeline_splits stage3/unit4)."""
    from torchvision.models.resnet import Bottleneck, ResNet
    net = ResNet(Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=4)
    return Classifier(net, net.conv1, net.layer3[3])


def _grouped(conv: nn.Conv2d) -> nn.Conv2d:
    """The G16 form of a depthwise convolution: groups of GROUP_DIM channels."""
    groups = max(1, conv.in_channels // GROUP_DIM)
    return nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                     conv.padding, groups=groups, bias=False)


def efficientnet_b4_g16() -> Classifier:
    """EfficientNet-B4 with G16 convolutions and expansion 4, split at block4a."""
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    setting, last_channel = _efficientnet_conf("efficientnet_b4", width_mult=1.4, depth_mult=1.8)
    for stage in setting:
        stage.expand_ratio = EXPAND_RATIO if stage.expand_ratio > 1 else 1
    net = EfficientNet(setting, dropout=0.4, last_channel=last_channel)
    for module in list(net.modules()):
        for name, child in module.named_children():
            if isinstance(child, nn.Conv2d) and child.groups == child.in_channels > 1:
                setattr(module, name, _grouped(child))
    return Classifier(net, net.features[0], net.features[4][0])


def cnn_plan(build, micro_batch: int, replicas: int, accumulation: int, proportion: float):
    with torch.device("meta"):
        model = build().half()
    instances = replicas  # one host process per 2-IPU replica (see the module docstring)
    opts = poptorch.Options().replicationFactor(replicas // instances)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(accumulation)
    opts.setAvailableMemoryProportion({"IPU0": proportion, "IPU1": proportion})
    opts.Precision.setPartialsType(torch.half)
    opts.Distributed.configureProcessId(0, instances)
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    inputs = (torch.zeros(micro_batch, 3, 224, 224, dtype=torch.uint8, device="meta"),
              torch.zeros(micro_batch, dtype=torch.long, device="meta"))
    return plan_run(model, inputs, opts, optimizer, micro_batch,
                    System(ipu_spec("ipu21"), 2 * replicas))


def cnn_runs() -> list[PublishedRun]:
    img = "images/s"
    return [
        PublishedRun("ResNeXt-101 32x4d, Bow Pod16, 2 IPUs x 8 replicas", img, 12_277,
                     f"{RESULTS}; {TF1_CONFIGS} resnext101_16ipus", 1.25,
                     cnn_plan(resnext101, 6, 8, 16, 0.6)),
        PublishedRun("EfficientNet-B4 G16, Bow Pod16, 2 IPUs x 8 replicas", img, 9_000,
                     f"{RESULTS}; {TF1_CONFIGS} efficientnet_b4_g16_16ipus", 1.25,
                     cnn_plan(efficientnet_b4_g16, 3, 8, 256, 0.4)),
        PublishedRun("EfficientNet-B4 G16, Bow Pod64, 2 IPUs x 32 replicas", img, 34_140,
                     f"{RESULTS}; {TF1_CONFIGS} efficientnet_b4_g16_64ipus", 1.25,
                     cnn_plan(efficientnet_b4_g16, 3, 32, 64, 0.4)),
    ]
