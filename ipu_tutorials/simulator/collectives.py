"""Pod-scale costs of data parallelism: the gradient all-reduce and the host work of poprun's instances.

A Pod16 is four IPU-M2000s (16 IPUs) joined by IPU-Links; larger pods join Pod16s through the
M2000s' gateway links. The all-reduce is hierarchical, as Graphcore's GCL runs it across pods:
a ring reduce-scatter over the IPU-Links among the replicas of one Pod16, an all-reduce of
each IPU's 1/k share across the Pod16s over the gateway links, a ring all-gather back.
"""
from __future__ import annotations

import math

from .units import GB

POD16_IPUS = 16  # IPUs joined by IPU-Links (four IPU-M2000s / Bow-2000s)
# IPU-Links a ring all-reduce drives at once per IPU: two rings, each over one 32 GB/s link
# ([HC33] in hardware.py: 10 links, 320 GB/s per chip). Assumption on how GCL lays its rings.
RING_LINKS = 2
# Graphcore, "Switched GW-Links in large scale Bow Pod systems"
# (https://docs.graphcore.ai/projects/switched-gwlinks/, sections 1.2-1.3): each IPU-Machine has
# two GW-Link ports ('east' and 'west') with 100 Gbps interfaces, shared by its 4 IPUs:
# 25 GB/s a machine, 6.25 GB/s an IPU. The launch's 2.8 Tbps is the gateway chip's total.
GATEWAY_BYTES_PER_SECOND_PER_IPU = 2 * 12.5 * GB / 4
# s per all-reduce across Pod16s (the gateways' synchronisation: a few 100 GbE RoCE round trips).
# Assumption, fitted on no run (the validation table's Pod64 and Pod256 rows show its effect).
GATEWAY_LATENCY = 100e-6
# s of host work per micro-batch each poprun instance feeds one replica, NOT overlapped with the
# device (the host side of each replica's input stream callback). Calibrated on BERT-Large phase
# 1 at Pod16 and Pod64 (5,600 and 18,442 sequences/s at the same global batch,
# graphcore.ai/performance-results): the gain of 3.29x, not 4x, implies ~1 s per step of
# 8,192 micro-batches fed by one host process at both scales.
INSTANCE_MICRO_BATCH_SECONDS = 120e-6


def allreduce_seconds(gradient_bytes: int, replicas: int, ipus_per_replica: int,
                      link_bandwidth: float, latency: float) -> float:
    """One all-reduce of each IPU's `gradient_bytes` across `replicas` data-parallel copies."""
    if replicas == 1 or not gradient_bytes:
        return 0.0
    within = max(1, min(replicas, POD16_IPUS // ipus_per_replica))  # replicas sharing a Pod16
    pods = math.ceil(replicas / within)
    seconds = 2 * (within - 1) / within * gradient_bytes / (link_bandwidth * RING_LINKS) + latency
    if pods > 1:
        share = gradient_bytes / within  # each IPU's slice after the reduce-scatter
        seconds += (2 * (pods - 1) / pods * share / GATEWAY_BYTES_PER_SECOND_PER_IPU
                    + GATEWAY_LATENCY)
    return seconds


def instance_seconds(micro_batches_per_call: int, instances: int) -> float:
    """Host work per call each instance does before the device can start, in parallel.

    micro_batches_per_call: micro-batches of every replica of every instance (D x A x R).
    """
    return micro_batches_per_call / max(1, instances) * INSTANCE_MICRO_BATCH_SECONDS
