"""Every product route at inference gives each row what it gets alone, at every row count: a row's result never
depends on the batch. On an Intel AVX-512 Xeon oneDNN multiplied a single row by another kernel (its sums 6.7e-6
off the same row's among others), which broke the merge of shards cut in other batches there."""

import pytest
import torch

from spacy_elmo.bilm.packed_matmul import (
    BF16_BLOCK,
    PackedWeights,
    in_fixed_blocks,
    int8_available,
    onednn_available,
    onednn_bf16_available,
    onednn_int8_available,
    product,
)

# the rows the biLM multiplies: an LSTM step's sentences (1 to docs-per-batch), a batch's positions and its words
ROW_COUNTS = list(range(1, 18)) + [31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300, 511, 512, 1000, 1024]


def _routes():
    routes = [("fp32 packed", torch.float32, False), ("fp32 of any size", "float32", False), ("unpacked", "product", False)]
    if onednn_bf16_available():
        routes.append(("bf16 packed", torch.bfloat16, False))
        routes.append(("bf16 packed, many rows (256-row blocks)", torch.bfloat16, True))
    if int8_available():
        routes.append(("int8 fbgemm", torch.qint8, False))
    if onednn_int8_available():
        routes.append(("int8 onednn", torch.qint8, True))
    return routes


@pytest.mark.slow
@pytest.mark.skipif(not onednn_available(), reason="this PyTorch build has no oneDNN products: plain matmul only")
@pytest.mark.parametrize("k, n", [(2048, 512), (512, 2048)])  # the small biLM's highway-like and LSTM-input-like shapes
def test_every_product_route_gives_each_row_what_it_gets_alone_at_every_row_count(k, n):
    generator = torch.Generator().manual_seed(k)
    x = torch.randn(max(ROW_COUNTS), k, generator=generator)
    weight = torch.randn(k, n, generator=generator) * k**-0.5
    bias = torch.randn(n, generator=generator)
    failed = []
    with torch.no_grad():
        for name, how, many_rows in _routes():
            packs = PackedWeights()

            def run(rows: torch.Tensor) -> torch.Tensor:
                if how == "float32":
                    return packs.float32(rows, weight, "w")
                if how == "product":
                    return product(rows, weight)
                packs.set_dtype(how)
                return packs.matmul(rows, weight, "w", bias=bias, many_rows=many_rows)

            alone = torch.cat([run(x[i : i + 1]) for i in range(len(x))])
            for m in ROW_COUNTS:
                together = run(x[:m].contiguous())
                if not torch.equal(together, alone[:m]):
                    failed.append(f"{name}: {m} rows, largest difference {(together - alone[:m]).abs().max().item():.2e}")
    assert not failed, failed


def _shape_dependent_kernel(weight: torch.Tensor):
    """A kernel that, like a library choosing by shape, sums in another order (here: rounds otherwise) past 32 rows
    and for a single row: what oneDNN's bfloat16 products did on an AMX Xeon."""

    def kernel(rows: torch.Tensor) -> torch.Tensor:
        out = rows @ weight
        if rows.shape[0] != BF16_BLOCK:
            out = out + 1e-3 * rows.shape[0]
        return out

    return kernel


@pytest.mark.parametrize("count", [1, 2, 31, 32, 33, 64, 100, 1000])
def test_fixed_blocks_give_each_row_what_it_gets_alone_whatever_the_kernel_picks_by_shape(count):
    generator = torch.Generator().manual_seed(count)
    x = torch.randn(count, 16, generator=generator)
    weight = torch.randn(16, 8, generator=generator)
    kernel = _shape_dependent_kernel(weight)
    assert not torch.equal(kernel(x[:1]), kernel(x[:1].expand(BF16_BLOCK, -1))[:1])  # the kernel alone is not batch-invariant
    together = in_fixed_blocks(kernel, x)
    alone = torch.cat([in_fixed_blocks(kernel, x[i : i + 1]) for i in range(count)])
    assert together.shape == (count, 8)
    assert torch.equal(together, alone)
    torch.testing.assert_close(together, x @ weight)  # the padding rows add nothing
