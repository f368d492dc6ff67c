"""Which of the peer suites' tests do not apply to a simulator, and why: one table.

Each row is (suite, test-id pattern, kind, reason). A pattern is a regular expression searched
in the pytest node id ("optimizers_test.py::test_x[...]"). The first matching row wins.
`DIFFERENCE` rows are applicable tests where ipu_tutorials differs on purpose (each one is a
line of docs/differences.md); every other kind is "not applicable".
"""
from __future__ import annotations

import re

HARDWARE = "needs IPU hardware"
SDK = "needs the Poplar SDK"
SDK_LOG = "needs the SDK's C++ logs"
LOWERING = "tests an op lowering"
DIFFERENCE = "known difference"
NOT_LIGHTNING_IPU = "not an IPU test"
OLD_LIGHTNING = "tests Lightning 2.0.9's own internals"
OLD_PYTEST = "expects an older pytest's wording"
OLD_TORCH = "expects an older PyTorch"

# PopTorch's test files, by what they test. Op-coverage files hold one test per ATen op lowering
# (PopTorch's C++ turns each op into Poplar code); they are counted apart from the user-facing ones.
POPTORCH_FILES = {
    "user-facing": [
        "attach_detach_test.py", "attach_detach_wait_for_ipu_test.py", "batching_test.py",
        "buffers_test.py", "cpu_op_test.py", "custom_loss_test.py", "dataloader_test.py",
        "debug_tensors_test.py", "exception_test.py", "fine_tuning_test.py", "half_float_test.py",
        "half_test.py", "hooks_test.py", "if_test.py", "inplace_test.py", "inputs_test.py",
        "io_performance_test.py", "ipu_print_tensor_test.py", "loop_test.py", "misc_test.py",
        "multiconv_test.py", "non_contiguous_tensors_test.py", "optimizers_test.py",
        "options_test.py", "outputs_test.py", "overlapped_io_test.py", "phased_execution_test.py",
        "pipelining_test.py", "poplar_executor_test.py", "popdist_test.py",
        "precompilation_test.py", "replicated_graph_test.py", "requires_grad_test.py",
        "sharding_test.py", "test_perf_counters.py", "type_support_test.py",
        "weights_writing_test.py",
    ],
    "op-coverage": [
        "activations_test.py", "blas_test.py", "bool_support_test.py", "convs_test.py",
        "ctc_decoder_test.py", "distance_ops_test.py", "functional_test.py",
        "gru_test.py", "index_ops_test.py", "losses_test.py",
        "lstm_test.py", "math_ops_test.py", "misc_nn_layers_test.py", "norms_test.py",
        "ops_test.py", "other_ops_test.py", "pooling_and_padding_test.py",
        "random_sampling_test.py", "reduce_ops_test.py", "rnn_test.py", "slice_test.py",
        "tensor_ops_test.py", "torch_nn_test.py",
    ],
}

# PopTorch's test files the runner does not start, and why.
POPTORCH_NOT_RUN = {
    "bert_small_and_medium_test.py": "downloads pretrained Hugging Face models (no network)",
    "torchvision_inference_test.py": "downloads pretrained torchvision weights (no network)",
    "custom_ops_test.py": "loads custom ops compiled against the Poplar SDK",
    "custom_ops_attributes_test.py": "loads custom ops compiled against the Poplar SDK",
    "pyg_torch_scatter_test.py": "tests poptorch_geometric, a separate package",
    "grouping_scatters_gathers_test.py": "each test counts the fused ScatterReduce ops in PopART's "
                                         "IR (_debugGetPopartIR); it imports torch_scatter, a "
                                         "compiled PyG extension",
    "test_doc_urls.py": "fetches the documentation's URLs (no network)",
    "cpp/, gnn/, custom_ops/": "C++ unit tests, poptorch_geometric, SDK custom ops",
}

# Lightning 2.0.9's test files that mention IPUs, and the pytest -k selection of the IPU tests.
LIGHTNING_FILES = {
    "accelerators/test_ipu.py": "",
    "accelerators/test_registry.py": "",
    "trainer/connectors/test_accelerator_connector.py": "ipu",
    "trainer/properties/test_estimated_stepping_batches.py": "ipu",
    "trainer/test_config_validator.py": "batch_transfer_hooks",
    "trainer/test_trainer.py": "test_trainer_config_device_ids",
    "callbacks/test_gradient_accumulation_scheduler.py": "unsupported_accelerators",
    "utilities/test_data.py": "disallow_batch_sampler",
    "utilities/test_imports.py": "",
}

TABLE = [
    # --- Lightning 2.0.9 ------------------------------------------------------------------
    ("lightning", r"test_trainer\.py::test_trainer_config_device_ids\[trainer_kwargs(?!1[34]-)",
     NOT_LIGHTNING_IPU, "a CPU/GPU case of a test whose IPU cases are kwargs13 and 14"),
    ("lightning", r"test_imports\.py::(?!test_imports$)", NOT_LIGHTNING_IPU,
     "import-time checks of Lightning itself"),
    ("lightning", r"test_registry\.py::test_available_accelerators_in_registry", OLD_LIGHTNING,
     "checks Lightning 2.0.9's own list of accelerators; Lightning 2.6 registers others"),
    ("lightning", r"test_data\.py::test_dataloader_disallow_batch_sampler", OLD_LIGHTNING,
     "calls a private helper of Lightning 2.0.9 that 2.6 changed; ipu_tutorials checks the "
     "same rule (tests/lightning/test_strategy.py)"),
    ("lightning", r"test_ipu\.py::test_autoreport", DIFFERENCE,
     "autoreport writes the simulator's report (JSON + Chrome trace), not Poplar's profile.pop"),
    # --- PopTorch -------------------------------------------------------------------------
    # The SDK's C++ debug log (PopART's op placement, the optimizer it built, option echoes):
    ("poptorch", r"optimizers_test\.py::test_(adam|sgd)_accum_type\[", SDK_LOG,
     "reads the accumulator types PopART's optimizer logs"),
    ("poptorch", r"optimizers_test\.py::test_(variable_groups|variable_default|LR_scheduler|"
     r"optimizer_SGD_separate_velocity_scale_matched)\b", SDK_LOG,
     "reads the optimizer settings PopART logs at (re)compilation"),
    ("poptorch", r"pipelining_test\.py::test_(api_inline|api_wrap|api_wrap_2stages|"
     r"inline_AutoIncrement|api_AutoIncrement|block_function|removeBlocks)\b", SDK_LOG,
     "reads PopART's per-op placement log (mode, ipu, stage)"),
    ("poptorch", r"phased_execution_test\.py::test_(2x2_parallel_phased_execution_|"
     r"serial_tensor_liveness)", SDK_LOG, "reads PopART's per-op phase and IPU placement log"),
    ("poptorch", r"options_test\.py::test_(set_options_from_file|override_options_from_file|"
     r"popart_partials|running_statistics)\b", SDK_LOG, "reads the options PopART logs"),
    ("poptorch", r"poplar_executor_test\.py::test_distributed_compile\b", SDK_LOG,
     "reads the compilation log of each popdist instance"),
    # PopART's IR, Poplar's files and tools, PopTorch's C++ extension and private modules:
    ("poptorch", r"optimizers_test\.py::test_sgd_IR\b|multiconv_test\.py::test_multiconv_"
     r"(basic|layers|options_broadcast|options_per_conv)\b|options_test\.py::"
     r"test_name_scope_hook_disabled\b", SDK, "inspects PopART's IR (_debugGetPopartIR)"),
    ("poptorch", r"options_test\.py::test_(set_options|invalid_options|set_popart_options|"
     r"popart_patterns)\b", SDK, "validates options in PopTorch's C++ extension"),
    ("poptorch", r"half_float_test\.py::test_ones_zeros_|options_test\.py::"
     r"test_mean_reduction_strategy_implicit\b|buffers_test\.py::test_buffer_implicit_copy\b",
     SDK, "calls PopTorch's private poptorch._impl"),
    ("poptorch", r"precompilation_test\.py::test_pva_annotations\b", SDK,
     "reads the profile with the SDK's libpva"),
    ("poptorch", r"options_test\.py::test_(profile_report|profile_report_with_model_name|"
     r"export_proto_file)\b", SDK, "looks for Poplar's profile.pop or PopART's ONNX file"),
    ("poptorch", r"misc_test\.py::test_(generic|specific)_error_handling\b", SDK,
     "raises the C++ extension's own test errors (poptorch_core._throwTestError)"),
    ("poptorch", r"other_ops_test\.py::test_(2d_scatter_reduce|2d_scatter_add|gather)_with_index_"
     r"expansion\[|other_ops_test\.py::test_available_memory_scatter_add\b|index_ops_test\.py::"
     r"test_vectorized_scatter\[", SDK_LOG,
     "reads PopTorch's log of how it lowered the gather or scatter"),
    ("poptorch", r"other_ops_test\.py::test_scatter_reduce_(fusable|should_not_apply_grouped_fuse)\[",
     SDK, "counts the fused ScatterReduce ops in PopART's IR (_debugGetPopartIR)"),
    ("poptorch", r"ops_test\.py::test_available_memory_(last_op|linear)\b", SDK_LOG,
     "reads PopTorch's TRACE log of the graph before lowering to PopART"),
    ("poptorch", r"ops_test\.py::test_name_scope\b", SDK,
     "looks for the op's name in PopART's IR (_debugGetPopartIR)"),
    ("poptorch", r"pipelining_test\.py::test_saving_of_begin_block\b", OLD_TORCH,
     "its python3 subprocess reloads a whole module with torch.load, which PyTorch 2.6 and "
     "later refuse by default (weights_only=True); it also imports an installed poptorch"),
    ("poptorch", r"weights_writing_test\.py::test_torch_save\b", OLD_TORCH,
     "reloads a whole model with torch.load, which PyTorch 2.6 and later refuse by default "
     "(weights_only=True)"),
    ("poptorch", r"weights_writing_test\.py::test_torch_save_unwrapped\b", SDK,
     "mocks PopTorch's private poptorch._impl._restoreWrapperIfNecessary"),
    ("poptorch", r"misc_test\.py::test_(set_popart_log_level|outline_attribute)\b", SDK_LOG,
     "sets PopART's log level and reads its log"),
    ("poptorch", r"poptorch_core\.", SDK, "calls PopTorch's C++ extension"),
    ("poptorch", r"tensor_ops_test\.py::TestOpHarness::test_(error_mismatch|reject_fuzzy_match_"
     r"without_fuzzy_option)\[", OLD_PYTEST,
     "tests the suite's own op harness against pytest's old \"Regex pattern ... does not match\""),
    ("poptorch", r"index_ops_test\.py::test_index_put_masked_(fill\[mask_size:[24]|assign\[mask_"
     r"size:4)-dtype:torch\.uint8\]", OLD_TORCH,
     "the test's own CPU run fails: PyTorch 2 refuses uint8 masks (masked_fill_), PopTorch's "
     "PyTorch accepted them"),
    ("poptorch", r"dataloader_test\.py::test_custom_batch_sampler(_non_deterministic_len)?\[",
     OLD_TORCH, "the test's own batch sampler calls torch.utils.data.Sampler.__init__(None); "
     "PyTorch 2.14's Sampler has no __init__ of its own, so object.__init__ refuses the argument"),
    # Differences kept on purpose (each is a line of docs/differences.md):
    ("poptorch", r"poplar_executor_test\.py::test_get_cycles_no_hw\b", DIFFERENCE,
     "logCycleCount works without hardware: the cycles are simulated"),
    ("poptorch", r"dataloader_test\.py::test_KeyboardInterrupt_in_async_data_accessor\[",
     DIFFERENCE, "sends SIGINT to the AsynchronousDataAccessor's worker process, found by the pid "
     "PopTorch logs; the simulator's accessor reads in a thread, so there is no such process"),
    ("poptorch", r"misc_nn_layers_test\.py::test_weight_norm\[", DIFFERENCE,
     "getTensorNames() lists the module's names, not PopART's UpdatedVar___ names (the values "
     "are checked first and match)"),
    ("poptorch", r"norms_test\.py::test_groupNorm_exfail\b", DIFFERENCE,
     "_Popart options are recorded, not simulated: groupNormStridedChannelGrouping does not "
     "change GroupNorm's grouping"),
    ("poptorch", r"debug_tensors_test\.py::test_tensor_names\b", DIFFERENCE,
     "getTensorNames() lists the module's names, not PopART's (input, loss, Gradient___, "
     "scaledLearningRate...), and raises poptorch.Error, not AssertionError, before compile"),
    ("poptorch", r"weights_writing_test\.py::test_(weights_sharing_ipu_cpu|weights_sharing_ipus|"
     r"weight_overwrite_trained_weight)\b", DIFFERENCE,
     "training writes the weights to the host after every call: no implicit copyWeightsToHost() "
     "to count, and copyWeightsToDevice() uploads the trained weights"),
    ("poptorch", r"type_support_test\.py::test_many_implicit_cast_equals\[input_2_type:torch\."
     r"(float32-input_1_type:torch\.float64|float64-input_1_type:torch\.float32)\]", DIFFERENCE,
     "a float64 input keeps its 64 bits inside the model, so 550.4 in float64 and in float32 "
     "differ; the IPU holds both in 32 bits"),
    ("poptorch", r"half_test\.py::test_buffers\b", DIFFERENCE,
     "an inferenceModel's BatchNorm in train mode returns its running statistics updated, as in "
     "PyTorch; PopTorch returns them unchanged"),
]


def classify(suite: str, nodeid: str) -> tuple[str, str] | None:
    """(kind, reason) of the first row that matches this test, or None (applicable, no row)."""
    for row_suite, pattern, kind, reason in TABLE:
        if row_suite == suite and re.search(pattern, nodeid):
            return kind, reason
    return None
