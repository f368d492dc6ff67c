"""The memory plan against an independent byte count, offloading, and out-of-memory."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch
from ipu_tutorials.simulator.memory import CODE_BASE_BYTES, CODE_PER_OP_BYTES

MB, A = 16, 8  # micro-batch, gradient accumulation


class TwoLayer(nn.Module):
    """Linear(64,128)+ReLU on IPU 0, Linear(128,10)+loss on IPU 1."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 128), nn.Linear(128, 10)

    def forward(self, x, y):
        with poptorch.Block("first", ipu_id=0):
            h = torch.relu(self.fc1(x))
        with poptorch.Block("second", ipu_id=1):
            out = self.fc2(h)
            loss = nn.functional.cross_entropy(out, y)
        return out, loss


def plan_for(offload=False, optimizer=poptorch.optim.Adam, rts=False, replicas=1):
    model = TwoLayer()
    opts = poptorch.Options().replicationFactor(replicas)
    opts.Training.gradientAccumulation(A)
    settings = poptorch.TensorLocationSettings().useOnChipStorage(not offload)
    if rts:
        settings.useReplicatedTensorSharding(True)
    opts.TensorLocations.setOptimizerLocation(settings)
    training = poptorch.trainingModel(model, opts, optimizer(model.parameters()))
    n = MB * A * replicas
    training.compile(torch.randn(n, 64), torch.randint(0, 10, (n,)))
    return training.plan


FLOAT = 4
FC1 = 64 * 128 + 128
FC2 = 128 * 10 + 10


def test_weights_gradients_and_adam_state_match_an_independent_count():
    ipu0, ipu1 = plan_for().memory.ipus
    for ipu, params in ((ipu0, FC1), (ipu1, FC2)):
        assert ipu.weights == params * FLOAT
        assert ipu.gradients == params * FLOAT  # float32 accumulators
        assert ipu.optimizer == 2 * params * FLOAT  # Adam: first and second moments


def test_activations_stash_and_exchange_match_an_independent_count():
    ipu0, ipu1 = plan_for().memory.ipus
    hidden = MB * 128 * FLOAT  # the activation crossing from IPU 0 to IPU 1
    logits = MB * 10 * FLOAT
    # IPU 0 keeps addmm and relu outputs; IPU 1 the logits, log-softmax, and nll_loss's two
    # scalars (the loss and its total weight)
    assert ipu0.activations == 2 * hidden
    assert ipu1.activations == 2 * logits + 2 * FLOAT
    # 2 pipeline stages: stage 0 stashes its input for 2(N-1-0)+1 = 3 micro-batches, stage 1 for 1
    inputs0 = MB * 64 * FLOAT
    assert ipu0.stash == 3 * inputs0
    assert ipu1.stash == 1 * (hidden + MB * 8)  # the hidden activation and the int64 labels
    # the hidden activation goes over and its gradient comes back; inputs come from the host
    assert ipu0.exchange == 2 * hidden + inputs0
    assert ipu1.exchange == 2 * hidden + MB * 8 + logits + FLOAT


def test_code_grows_with_the_ops_on_each_ipu():
    ipu0, ipu1 = plan_for().memory.ipus
    # forward, and two backward ops per forward op; IPU 0 runs addmm and relu
    assert ipu0.code == CODE_BASE_BYTES + CODE_PER_OP_BYTES * 2 * 3
    assert ipu1.code > ipu0.code


def test_offloading_optimizer_state_removes_exactly_those_bytes():
    on_chip, off_chip = plan_for().memory.ipus, plan_for(offload=True).memory.ipus
    for before, after in zip(on_chip, off_chip):
        assert before.total - after.total == before.optimizer
        assert after.optimizer == 0
        assert after.off_chip["optimizer"] == before.optimizer


def test_replicated_tensor_sharding_splits_state_across_replicas():
    single = plan_for(replicas=2).memory.ipus
    sharded = plan_for(replicas=2, rts=True).memory.ipus
    assert [s.optimizer for s in sharded] == [m.optimizer // 2 for m in single]


def test_sgd_without_momentum_keeps_no_state():
    ipu0, _ = plan_for(optimizer=lambda p: poptorch.optim.SGD(p, lr=0.1)).memory.ipus
    assert ipu0.optimizer == 0


def test_float16_weights_halve_weight_memory():
    model = TwoLayer().half()
    optimizer = poptorch.optim.SGD(model.parameters(), lr=0.1, accum_type=torch.float16)
    training = poptorch.trainingModel(model, _opts(), optimizer)
    n = MB * A
    training.compile(torch.randn(n, 64).half(), torch.randint(0, 10, (n,)))
    assert training.plan.memory[0].weights == FC1 * 2
    assert training.plan.memory[0].gradients == FC1 * 2


def _opts():
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(A)
    return opts


class Wide(nn.Module):
    """Four 8192x8192 layers (1 GiB of float32 weights), built on the meta device."""

    def __init__(self, ipus):
        super().__init__()
        self.ipus = ipus
        self.layers = nn.ModuleList(nn.Linear(8192, 8192) for _ in range(4))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            with poptorch.Block(f"L{i}", ipu_id=self.ipus[i]):
                x = layer(x)
        with poptorch.Block("L3", ipu_id=self.ipus[3]):
            loss = poptorch.identity_loss(x.square(), reduction="mean")
        return x, loss


def compile_wide(ipus):
    with torch.device("meta"):
        model = Wide(ipus)
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(8)
    training = poptorch.trainingModel(model, opts)
    training.compile(torch.empty(8, 8192, device="meta"))
    return training.plan


def test_a_model_too_big_for_one_ipu_fails_with_the_plan():
    with pytest.raises(poptorch.OutOfMemoryError, match=r"IPU 0 needs .* but has 897.0 MiB") as info:
        compile_wide([0, 0, 0, 0])
    message = str(info.value)
    assert "weights" in message and "model.half()" in message and "setPartialsType" in message
    assert "useOnChipStorage(False)" not in message  # plain SGD keeps no optimizer state
    assert not info.value.plan.fits


def test_out_of_memory_advice_leaves_out_what_the_configuration_already_does():
    advice = {}
    for offload in (False, True):
        with torch.device("meta"):
            model = Wide([0, 0, 0, 0])
        opts = poptorch.Options()
        opts.Training.gradientAccumulation(8)
        if offload:
            opts.TensorLocations.setOptimizerLocation(
                poptorch.TensorLocationSettings().useOnChipStorage(False))
        optimizer = poptorch.optim.Adam(model.parameters())
        training = poptorch.trainingModel(model, opts, optimizer=optimizer)
        with pytest.raises(poptorch.OutOfMemoryError) as info:
            training.compile(torch.empty(8, 8192, device="meta"))
        advice[offload] = str(info.value)
    assert "useOnChipStorage(False)" in advice[False]
    assert "useOnChipStorage(False)" not in advice[True]


def test_the_same_model_fits_when_spread_over_more_ipus():
    plan = compile_wide([0, 1, 2, 3])
    assert plan.memory.fits
    assert all(m.weights == (8192 * 8192 + 8192) * 4 for m in plan.memory.ipus)


def test_offloaded_state_streams_around_the_weight_update():
    on_chip, off_chip = plan_for(), plan_for(offload=True)
    assert not on_chip.timeline.of_kind("stream")
    streams = off_chip.timeline.of_kind("stream")
    assert len(streams) == 2 * 2  # in and out, on each IPU
    update = off_chip.timeline.of_kind("update")[0]
    assert min(e.end for e in streams if e.ipu == update.ipu) <= update.start
    assert off_chip.device_seconds > on_chip.device_seconds


# --- recomputation and the embedding's gradient (lesson 7, memory tuning) --------------------

def plan_with_recomputation(value):
    """TwoLayer pipelined over 2 IPUs, with opts._Popart.set("autoRecomputation", value)."""
    model = TwoLayer()
    opts = _opts()
    if value is not None:
        opts._Popart.set("autoRecomputation", value)
    training = poptorch.trainingModel(model, opts, poptorch.optim.Adam(model.parameters()))
    training.compile(torch.randn(MB * A, 64), torch.randint(0, 10, (MB * A,)))
    return training.plan


def test_a_pipeline_without_recomputation_keeps_every_in_flight_micro_batchs_activations():
    ipu0, ipu1 = plan_with_recomputation(0).memory.ipus
    hidden, logits = MB * 128 * FLOAT, MB * 10 * FLOAT
    # stage s keeps 2(N-1-s)+1 micro-batches in flight: 3 on IPU 0, 1 on IPU 1
    assert ipu0.activations == 3 * 2 * hidden
    assert ipu1.activations == 1 * (2 * logits + 2 * FLOAT)
    default0, _ = plan_with_recomputation(None).memory.ipus
    assert default0.activations == 2 * hidden
    assert ipu0.stash == default0.stash == 3 * MB * 64 * FLOAT  # the stage's inputs either way


def test_autorecomputation_0_turns_off_the_pipelines_recomputed_forward():
    default, off = plan_with_recomputation(None), plan_with_recomputation(0)
    for on, without in zip(default.stage_costs, off.stage_costs):
        assert on.backward == pytest.approx(without.backward + without.forward)


class Checkpointed(nn.Module):
    """Three Linear(64, 64) on one IPU, a recomputation checkpoint after the first."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(64, 64) for _ in range(3))

    def forward(self, x):
        x = poptorch.recomputationCheckpoint(self.layers[0](x))
        x = self.layers[2](self.layers[1](x))
        return poptorch.identity_loss(x.square(), reduction="mean")


def plan_checkpointed(recompute: int):
    model = Checkpointed()
    opts = poptorch.Options()
    opts._Popart.set("autoRecomputation", recompute)
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.1))
    training.compile(torch.randn(MB, 64))
    return training.plan.memory[0]


def test_checkpoints_are_stashed_only_when_the_backward_recomputes():
    row = MB * 64 * FLOAT
    recomputing, keeping = plan_checkpointed(4), plan_checkpointed(0)
    assert recomputing.stash == 2 * row  # one micro-batch's input and its checkpoint
    assert keeping.stash == 0
    # recomputing keeps one segment's activations (layers 1 and 2 plus the loss's square,
    # mean and the scalar), keeping all of them adds layer 0's output
    assert keeping.activations - recomputing.activations == row


class Lookup(nn.Module):
    """An embedding of `vocab` rows of 32 floats, then a small linear layer and a loss."""

    def __init__(self, vocab: int, slices: int = 1):
        super().__init__()
        self.tables = nn.ModuleList(nn.Embedding(vocab // slices, 32) for _ in range(slices))
        self.fc = nn.Linear(32, 8)

    def forward(self, tokens):
        x = sum(table(tokens % table.num_embeddings) for table in self.tables)
        return poptorch.identity_loss(self.fc(x).square(), reduction="mean")


def lookup_temporaries(vocab: int, slices: int = 1, training: bool = True) -> int:
    model = Lookup(vocab, slices)
    wrap = poptorch.trainingModel if training else poptorch.inferenceModel
    wrapped = wrap(model, poptorch.Options())
    wrapped.compile(torch.randint(0, vocab, (4, 16)))
    return wrapped.plan.memory[0].temporaries


def test_an_embeddings_gradient_wants_a_temporary_the_size_of_its_table():
    assert lookup_temporaries(20_000) == 20_000 * 32 * FLOAT
    # looked up in four slices, each slice's gradient is built on its own
    assert lookup_temporaries(20_000, slices=4) == 5_000 * 32 * FLOAT
    assert lookup_temporaries(20_000, training=False) < 20_000 * 32 * FLOAT  # no backward


def test_replicated_tensor_sharding_of_the_weights_is_accepted_but_not_planned():
    # docs/differences.md: the simulator shards the optimizer state only
    def weights_on_two_replicas(shard_weights):
        model = TwoLayer()
        opts = poptorch.Options().replicationFactor(2)
        opts.Training.gradientAccumulation(A)
        opts.TensorLocations.setWeightLocation(
            poptorch.TensorLocationSettings().useReplicatedTensorSharding(shard_weights))
        training = poptorch.trainingModel(model, opts, poptorch.optim.Adam(model.parameters()))
        n = MB * A * 2
        training.compile(torch.randn(n, 64), torch.randint(0, 10, (n,)))
        return [m.weights for m in training.plan.memory.ipus]

    assert weights_on_two_replicas(True) == weights_on_two_replicas(False) == [FC1 * FLOAT,
                                                                             FC2 * FLOAT]
