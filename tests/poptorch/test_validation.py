"""Checks made once when a model is wrapped: options that fit together, a usable optimizer."""
import pytest
import torch
import torch.nn as nn

from ipu_tutorials import poptorch


def test_options_of_the_wrong_type():
    # PopTorch's class and words (python/_poplar_executor.py: PoplarExecutor.__init__)
    with pytest.raises(poptorch.Error, match=r"Invalid type: 'options' is of type dict "
                                             r"\(Expected poptorch.Options\)"):
        poptorch.inferenceModel(nn.Linear(2, 2), {"deviceIterations": 2})


REFUSED_ACCUMULATION = (r"You must set poptorch\.Options\(\)\.Training\.gradientAccumulation to 1"
                        r" or leave it as its default value \(1\) when running a "
                        r"poptorch\.inferenceModel\(\)\.")


def test_inference_refuses_gradient_accumulation_in_poptorchs_words(options):
    with pytest.raises(poptorch.Error, match=REFUSED_ACCUMULATION + r" Use poptorch\.Options\(\)"
                                             r"\.deviceIterations to process .* it is 4"):
        poptorch.inferenceModel(nn.Linear(2, 2), options(a=4))


def test_sharded_inference_is_not_pointed_to_pipeline_filling(options):
    opts = options(a=2).setExecutionStrategy(poptorch.ShardedExecution())
    with pytest.raises(poptorch.Error, match=REFUSED_ACCUMULATION + r" \(An inferenceModel"):
        poptorch.inferenceModel(nn.Linear(2, 2), opts)


def test_input_grouping_must_still_divide_the_replication_factor_when_wrapping():
    # was wrong: a grouping made invalid by a later replicationFactor was accepted.
    opts = poptorch.Options().replicationFactor(2)
    opts.inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
    opts.replicationFactor(1)
    with pytest.raises(poptorch.Error, match=r"group size \(2\) must divide the replication "
                                             r"factor \(1\)"):
        poptorch.inferenceModel(nn.Linear(2, 2), opts)


def test_updatable_named_buffers_must_name_buffers_of_the_model():
    model = nn.BatchNorm1d(2)
    opts = poptorch.Options().updatableNamedBuffers(["running_mean", "no_such_buffer"])
    with pytest.raises(poptorch.Error, match=r"updatableNamedBuffers: 'no_such_buffer' is not a "
                       r"buffer of the model; its buffers are: running_mean, running_var, "
                       r"num_batches_tracked"):
        poptorch.inferenceModel(model, opts).compile(torch.ones(3, 2))


@pytest.mark.parametrize("key, value, kind", [  # PopTorch's options_test.py, test_invalid_options
    ("asdfasdf", True, "bool"), ("autoRecompute", 3, "uint64"), ("logdir", "x", "string")])
def test_an_unknown_popart_option_is_refused_when_the_model_compiles(key, value, kind):
    opts = poptorch.Options()
    opts._Popart.set(key, value)
    model = poptorch.inferenceModel(nn.Linear(2, 2), opts)  # wrapping takes it as PopTorch does
    with pytest.raises(poptorch.Error, match=rf"^Unknown {kind} option {key}: not a PopART session "
                                             rf"option. The ones ipu_tutorials records are: "
                                             rf".*autoRecomputation"):
        model.compile(torch.ones(1, 2))
    opts = poptorch.Options()
    opts._Popart.set("autoRecomputation", 1)
    poptorch.inferenceModel(nn.Linear(2, 2), opts).compile(torch.ones(1, 2))
