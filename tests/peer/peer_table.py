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
LOWERING = "tests an op lowering"
DIFFERENCE = "known difference"
NOT_LIGHTNING_IPU = "not an IPU test"
OLD_LIGHTNING = "tests Lightning 2.0.9's own internals"

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
        "grouping_scatters_gathers_test.py", "gru_test.py", "index_ops_test.py", "losses_test.py",
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
    ("poptorch", r"poptorch_core\.", SDK, "calls PopTorch's C++ extension"),
]


def classify(suite: str, nodeid: str) -> tuple[str, str] | None:
    """(kind, reason) of the first row that matches this test, or None (applicable, no row)."""
    for row_suite, pattern, kind, reason in TABLE:
        if row_suite == suite and re.search(pattern, nodeid):
            return kind, reason
    return None
