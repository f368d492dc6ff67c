"""Pod-scale collectives: the all-reduce within a Pod16 and across Pod16s, and poprun's instances."""
import pytest

from ipu_tutorials.simulator import collectives
from ipu_tutorials.simulator.collectives import allreduce_seconds, instance_seconds
from ipu_tutorials.simulator.units import GB

LINK = 32 * GB
GRADIENTS = 100_000_000


def test_one_replica_reduces_nothing():
    assert allreduce_seconds(GRADIENTS, 1, 1, LINK, 1e-6) == 0.0


def test_within_a_pod16_the_ring_runs_over_ipu_links():
    seconds = allreduce_seconds(GRADIENTS, 16, 1, LINK, 0.0)
    expected = 2 * 15 / 16 * GRADIENTS / (LINK * collectives.RING_LINKS)
    assert seconds == pytest.approx(expected)


def test_across_pod16s_each_ipus_share_crosses_the_gateway_links():
    pod16 = allreduce_seconds(GRADIENTS, 16, 1, LINK, 0.0)
    pod64 = allreduce_seconds(GRADIENTS, 64, 1, LINK, 0.0)
    gateway = (2 * 3 / 4 * GRADIENTS / 16 / collectives.GATEWAY_BYTES_PER_SECOND_PER_IPU
               + collectives.GATEWAY_LATENCY)
    assert pod64 == pytest.approx(pod16 + gateway)


def test_replicas_of_four_ipus_share_a_pod16_four_at_a_time():
    four = allreduce_seconds(GRADIENTS, 4, 4, LINK, 0.0)
    sixteen = allreduce_seconds(GRADIENTS, 16, 4, LINK, 0.0)
    assert four == pytest.approx(2 * 3 / 4 * GRADIENTS / (LINK * collectives.RING_LINKS))
    assert sixteen > four  # the other 12 replicas sit in three more Pod16s


def test_instances_share_the_host_work_of_a_call():
    one = instance_seconds(8_192, 1)
    assert one == pytest.approx(8_192 * collectives.INSTANCE_MICRO_BATCH_SECONDS)
    assert instance_seconds(8_192, 8) == pytest.approx(one / 8)
