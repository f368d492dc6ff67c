"""ipu_print_tensor's layout: Poplar's brackets, rows, wrapping, digits and summaries."""
import torch

from ipu_tutorials import poptorch
from ipu_tutorials.poptorch._print_layout import format_number
from ipu_tutorials.simulator import tracing


def test_print_tensor_lays_out_a_matrix_as_poplar_does(capsys):
    with tracing.running_on_ipu():
        poptorch.ipu_print_tensor(torch.tensor([[1.25, -2.0], [3.0, 0.125]]), "m", digits=3,
                                  separator=" ", open_bracket="{", close_bracket="}")
    assert capsys.readouterr().err == "m: {\n {1.25 -2}\n {3 0.125}\n}\n"


def test_print_tensor_wraps_long_rows_and_summarises_large_tensors(capsys):
    with tracing.running_on_ipu():
        poptorch.ipu_print_tensor(torch.tensor([1.5, 2.5]), float_format="scientific", digits=3,
                                  max_line_width=10, open_bracket="[", close_bracket="]")
        poptorch.ipu_print_tensor(torch.arange(10.0), summarise_threshold=5, edge_items=2)
    assert capsys.readouterr().err == "[1.50e+00, \n  2.50e+00]\n(0, 1, ..., 8, 9)\n"


def test_numbers_carry_the_requested_significant_digits():
    assert format_number(1.49625659, 8, "auto") == "1.4962566"
    assert format_number(1.49625659, 8, "fixed") == "1.4962566"
    assert format_number(1.49625659, 8, "scientific") == "1.4962566e+00"
