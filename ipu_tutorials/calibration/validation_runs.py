"""Runs Graphcore published that the cost model was NOT calibrated on: its validation set.

The calibration runs live in published_runs.py; nothing here feeds a constant. Each run is
rebuilt from its published configuration (real-size models on the meta device) and compared
with the throughput Graphcore's performance-results table lists for it
(https://www.graphcore.ai/performance-results, Bow Pod rows, as mirrored at
https://www.graphcore.cn/performance-results/; "Training" tables, SDK 3.0-3.3). The
configurations are graphcore/examples' files at the commit named in each source.
"""
from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn as nn

from .. import poptorch
from ..simulator.compile import Plan
from ..simulator.hardware import System, ipu_spec
from ..tutorial.models import TransformerLayer
from .published_runs import BertConfig, PublishedRun, bert_plan, plan_run, resnet50_tf1_plan

RESULTS = "graphcore.ai/performance-results"
BERT_CONFIGS = "graphcore/examples@3cc8f81 nlp/bert/pytorch/configs_pretraining.yml"
TF1_CONFIGS = "graphcore/examples@8ae588c vision/cnns/tensorflow1/training/configs.yml"
VIT_CONFIGS = "graphcore/examples@3cc8f81 vision/vit/pytorch/configs.yml"
TOLERANCE = 1.25  # the accepted ratio either way for a run the model was not fitted on
PACKING = {128: 1.17, 512: 2.0}  # configs_pretraining.yml packing_factor


def _bow(num_ipus: int) -> System:
    return System(ipu_spec("ipu21"), num_ipus)


def _run(name: str, unit: str, published: float, source: str, plan: Plan,
         per_row: float = 1.0) -> PublishedRun:
    return PublishedRun(name, unit, published, source, TOLERANCE, plan, per_row)


# --- BERT ----------------------------------------------------------------------------------
LARGE_512 = BertConfig(context=512, mask_tokens=76, micro_batch=2,
                       matmul_proportion=(0.10, 0.15, 0.15, 0.15))
LARGE_512_POD64 = dataclasses.replace(LARGE_512, replicas=16, accumulation=512,
                                      matmul_proportion=(0.13, 0.19, 0.19, 0.19))
BASE_128 = BertConfig(width=768, depth=12, heads=12, layers_per_ipu=(0, 4, 4, 4), micro_batch=32,
                      accumulation=512, matmul_proportion=(0.25,) * 4)


def bert_runs() -> list[PublishedRun]:
    seq = "sequences/s"
    return [
        _run("BERT-Large phase 2 (seq 512), Bow Pod16, 4 IPUs x 4 replicas, packed", seq, 1_973,
             f"{RESULTS}, PyTorch SDK 3.3; {BERT_CONFIGS} pretrain_large_512",
             bert_plan(LARGE_512, _bow(16)), PACKING[512]),
        _run("BERT-Large phase 2 (seq 512), Bow Pod64, 4 IPUs x 16 replicas, packed", seq, 6_543,
             f"{RESULTS}, PyTorch SDK 3.2; {BERT_CONFIGS} pretrain_large_512_POD64",
             bert_plan(LARGE_512_POD64, _bow(64)), PACKING[512]),
        _run("BERT-Base phase 1, Bow Pod16, 4 IPUs x 4 replicas", seq, 15_911,
             f"{RESULTS}, PyTorch SDK 3.3; {BERT_CONFIGS} pretrain_base_128",
             bert_plan(BASE_128, _bow(16))),
    ]


# --- ViT -----------------------------------------------------------------------------------
class ViTLayer(TransformerLayer):
    """A ViT encoder layer as vit/pytorch writes it: query, key and value are three Linear
    layers (models/modules.py Attention; transformers' ViTSelfAttention for fine-tuning), not
    the one fused projection Graphcore's BERT swaps in (bert_fused_attention.py). Of its
    dropouts, the two BERT also has (after the projection and the MLP) are left out as the
    BERT rebuilds leave them out; the two BERT has not are in: on the attention probabilities
    (pre-training's attention_probs_dropout_prob: 0.1) and after the GELU (Mlp.dropout)."""

    def __init__(self, width: int, heads: int, attention_dropout: float, hidden_dropout: float):
        super().__init__(width, heads)
        del self.qkv
        self.query, self.key, self.value = (nn.Linear(width, width) for _ in range(3))
        self.attention_dropout = nn.Dropout(attention_dropout)
        self.mlp_dropout = nn.Dropout(hidden_dropout)

    def forward(self, x):  # x: (B, T, C)
        b, t, c = x.shape
        h = self.norm1(x)
        q, k, v = (p(h).view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for p in (self.query, self.key, self.value))
        attention = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mixed = self.attention_dropout(attention.softmax(-1)) @ v
        x = x + self.proj(mixed.transpose(1, 2).reshape(b, t, c))
        return x + self.down(self.mlp_dropout(torch.nn.functional.gelu(self.up(self.norm2(x)))))


class VisionTransformer(nn.Module):
    """ViT-B/16 as graphcore/examples vision/vit/pytorch places it: 3 layers on each of 4 IPUs.

    `pretraining` adds what pretrain.py's model has and fine-tuning's has not (models/modules.py
    VisionTransformer): 8-bit images normalised on IPU 0 (--byteio), mixup of each micro-batch
    with itself rolled by one and its two-label loss, attention dropout, the tanh pre-logits
    layer (representation_size: 768).
    """

    def __init__(self, width=768, depth=12, heads=12, patch=16, image=224, classes=1000,
                 layers_per_ipu=(3, 3, 3, 3), pretraining=False):
        super().__init__()
        self.pretraining = pretraining
        self.patches = nn.Conv2d(3, width, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.position = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, width))
        attention_dropout = 0.1 if pretraining else 0.0  # configs.yml
        self.layers = nn.ModuleList(ViTLayer(width, heads, attention_dropout, 0.1)
                                    for _ in range(depth))
        self.ipus = [ipu for ipu, count in enumerate(layers_per_ipu) for _ in range(count)]
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, classes)
        self.representation = nn.Linear(width, width) if pretraining else None
        self.loss = nn.CrossEntropyLoss()

    def forward(self, images, labels, mixup=None):
        with poptorch.Block("embedding", ipu_id=0):
            x = self._mixed(images, mixup) if self.pretraining else images
            x = self.patches(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.position
        for index, (layer, ipu) in enumerate(zip(self.layers, self.ipus)):
            with poptorch.Block(f"layer{index}", ipu_id=ipu):
                x = poptorch.recomputationCheckpoint(layer(x))
        with poptorch.Block("head", ipu_id=self.ipus[-1]):
            pooled = self.norm(x[:, 0])
            if self.representation is not None:
                pooled = torch.tanh(self.representation(pooled))
            logits = self.head(pooled)
            loss = self.loss(logits, labels)
            if not self.pretraining:
                return logits, loss
            return self._mixed_loss_and_accuracy(logits, loss, labels, mixup)

    def _mixed_loss_and_accuracy(self, logits, loss, labels, mixup):
        """pretrain.py's outputs: the mixup loss (the mixed-in images' labels weigh 1 - mixup)
        and the micro-batch's accuracy against both labels (models/modules.py, metrics.py)."""
        share, other = mixup.float().mean(), labels.roll(1, 0)
        loss = share * loss + (1 - share) * self.loss(logits, other)
        predicted = logits.argmax(-1)
        hits = [(predicted == target).float().mean() for target in (labels, other)]
        return loss, share * hits[0] + (1 - share) * hits[1]

    @staticmethod
    def _mixed(images, mixup):
        """8-bit images normalised on the IPU in float32, then mixed with their neighbours."""
        x = (images.float() / 255.0 * 2.0 - 1.0).half()  # mean and std 0.5 (preprocess.py)
        share = mixup.view(-1, 1, 1, 1)
        return share * x + (1 - share) * x.roll(1, 0)


def vit_plan(micro_batch: int, replicas: int, accumulation: int, lamb: bool,
             device_iterations: int = 1, instances: int = 1) -> Plan:
    """ViT-B/16 training on ImageNet-1k as vit/pytorch configures it (4 IPUs per replica).

    Pre-training (pretrain.py, LAMB) streams 8-bit images (benchmarks.yml --byteio true) and
    has the pre-logits layer; fine-tuning (finetune.py, SGD) streams float16 images (configs.yml
    byteio: False, precision "16.16"). Both get every micro-batch's outputs back (ipu_options.py
    get_options sets OutputMode.All for both scripts: fine-tuning's logits, pre-training's loss
    and accuracy) and use half partials (args.py --half-partials defaults to True).
    """
    with torch.device("meta"):
        model = VisionTransformer(pretraining=lamb).half()
    opts = poptorch.Options().replicationFactor(replicas // instances)
    opts.deviceIterations(device_iterations).outputMode(poptorch.OutputMode.All)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.Training.gradientAccumulation(accumulation)
    opts.setAvailableMemoryProportion({f"IPU{i}": 0.3 for i in range(4)})
    opts.Precision.setPartialsType(torch.half)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useReplicatedTensorSharding(True))
    if instances > 1:
        opts.Distributed.configureProcessId(0, instances)
    params = model.parameters()
    # configs.yml: LAMB accumulates and keeps both moments in float32 (accum_type,
    # first_order_type, second_order_type: fp32); SGD in float16 (args.py --accum-type
    # default fp16, first_order_type: fp16)
    optimizer = (poptorch.optim.LAMB(params, accum_type=torch.float32,
                                     first_order_momentum_accum_type=torch.float32,
                                     second_order_momentum_accum_type=torch.float32) if lamb
                 else poptorch.optim.SGD(params, lr=0.01, momentum=0.9, accum_type=torch.half,
                                         velocity_accum_type=torch.half))
    image_dtype = torch.uint8 if lamb else torch.half
    inputs = (torch.zeros(micro_batch, 3, 224, 224, dtype=image_dtype, device="meta"),
              torch.zeros(micro_batch, dtype=torch.long, device="meta"))
    if lamb:  # pretrain.py feeds one mixup coefficient (float16) with every micro-batch
        inputs += (torch.zeros(1, dtype=torch.half, device="meta"),)
    return plan_run(model, inputs, opts, optimizer, micro_batch, _bow(4 * replicas))


def vit_runs() -> list[PublishedRun]:
    img = "images/s"
    return [
        _run("ViT-B/16 pre-training, Bow Pod16, 4 IPUs x 4 replicas, LAMB", img, 7_615,
             f"{RESULTS}, PyTorch SDK 3.0; {VIT_CONFIGS} b16_in1k_pretrain_lamb",
             vit_plan(8, 4, 2048, lamb=True)),
        _run("ViT-B/16 pre-training, Bow Pod64, 4 IPUs x 16 replicas, LAMB", img, 27_868,
             f"{RESULTS}, PyTorch SDK 3.0; {VIT_CONFIGS} b16_in1k_pretrain_lamb, "
             "benchmarks.yml pod64 (A 512, 8 instances)",
             vit_plan(8, 16, 512, lamb=True, instances=8)),
        _run("ViT-B/16 fine-tuning, Bow Pod16, 4 IPUs x 4 replicas, SGD", img, 7_319,
             f"{RESULTS}, PyTorch SDK 3.0; {VIT_CONFIGS} b16_imagenet1k",
             vit_plan(17, 4, 30, lamb=False, device_iterations=8)),
    ]


# --- CNNs ----------------------------------------------------------------------------------
def resnet50_runs() -> list[PublishedRun]:
    img = "images/s"
    return [
        _run("ResNet-50, Bow Pod64, 64 replicas of 1 IPU", img, 153_205,
             f"{RESULTS}, TensorFlow1 SDK 3.0; {TF1_CONFIGS} resnet50_mlperf_pod64_bs20",
             resnet50_tf1_plan(replicas=64, accumulation=2, proportion=0.145, instances=32)),
        _run("ResNet-50, Bow Pod256, 256 replicas of 1 IPU", img, 456_906,
             f"{RESULTS}, TensorFlow1 SDK 3.0; batch 10,240 = 20 x 256 x 2",
             resnet50_tf1_plan(replicas=256, accumulation=2, proportion=0.145, instances=128)),
    ]


def all_runs() -> list[PublishedRun]:
    """The validation set, in the order of docs/cost-model.md's validation table."""
    from .validation_cnns import cnn_runs  # the grouped-convolution models
    return bert_runs() + vit_runs() + resnet50_runs() + cnn_runs()
