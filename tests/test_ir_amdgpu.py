"""amdgpu.gather_to_lds in upstream MLIR's syntax, with upstream's checks."""

from __future__ import annotations

import pytest
from dialect_context import ops_named, parse, print_ir, roundtrip
from iree_oracle import iree_opt_accepts
from xdsl.utils.exceptions import VerifyException

from simtify.ir.amdgpu import GatherToLDSOp, transfer_bits

LDS = "memref<256x256xf16, #gpu.address_space<workgroup>>"
ARGS = (
    f"%g: memref<1024x1024xf16>, %lds: {LDS}, %fat: memref<1024xf16, #amdgpu.address_space<fat_raw_buffer>>, "
    "%row: memref<64xf16, strided<[1], offset: ?>, #gpu.address_space<workgroup>>, %i: index, %j: index"
)

SNIPPETS = {
    "vector": f"  amdgpu.gather_to_lds %g[%i, %j], %lds[%i, %j] : vector<2xf16>, memref<1024x1024xf16>, {LDS}",
    "scalar_async": f"  amdgpu.gather_to_lds async %g[%i, %j], %lds[%i, %j] : f16, memref<1024x1024xf16>, {LDS}",
    "sixteen_bytes": f"  amdgpu.gather_to_lds %g[%i, %j], %lds[%i, %j] : vector<8xf16>, memref<1024x1024xf16>, {LDS}",
    "fat_raw_buffer_to_strided_row": "  amdgpu.gather_to_lds %fat[%i], %row[%j] : vector<2xf16>, "
    "memref<1024xf16, #amdgpu.address_space<fat_raw_buffer>>, memref<64xf16, strided<[1], offset: ?>, #gpu.address_space<workgroup>>",
}


def func(body: str) -> str:
    return f"func.func @f({ARGS}) {{\n{body}\n  func.return\n}}\n"


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_round_trip_in_upstream_syntax(name):
    printed = roundtrip(func(SNIPPETS[name]))
    assert SNIPPETS[name].strip() in printed


def test_the_design_documents_to_spelling_is_read_and_printed_as_upstreams():
    """direct_load_to_lds_design.md writes ``%global[..] to %lds[..]``."""
    seed = f"  amdgpu.gather_to_lds %g[%i, %j] to %lds[%i, %j] : vector<2xf16>, memref<1024x1024xf16>, {LDS}"
    printed = print_ir(parse(func(seed)))
    assert SNIPPETS["vector"].strip() in printed and " to " not in printed


def test_fields():
    (op,) = ops_named(parse(func(SNIPPETS["scalar_async"])), "amdgpu.gather_to_lds")
    assert isinstance(op, GatherToLDSOp)
    assert op.is_async is not None
    assert transfer_bits(op.transfer_type) == 16
    assert len(op.src_indices) == 2 and len(op.dst_indices) == 2


def verify_error(body: str) -> str:
    with pytest.raises(VerifyException) as info:
        parse(func(body))
    return str(info.value)


@pytest.mark.parametrize("transfer, bits", [("vector<4xf16>", 64), ("vector<3xf16>", 48), ("vector<2xf32>", 64)])
def test_transfer_sizes_global_load_lds_cannot_move(transfer, bits):
    message = verify_error(
        f"  amdgpu.gather_to_lds %g[%i, %j], %lds[%i, %j] : {transfer}, memref<1024x1024xf16>, {LDS}"
    )
    assert f"transfers {bits} bits" in message


def test_destination_must_be_lds():
    message = verify_error(
        "  amdgpu.gather_to_lds %g[%i, %j], %g[%i, %j] : f16, memref<1024x1024xf16>, memref<1024x1024xf16>"
    )
    assert "workgroup memory" in message


def test_source_must_not_be_lds():
    message = verify_error(f"  amdgpu.gather_to_lds %lds[%i, %j], %lds[%i, %j] : f16, {LDS}, {LDS}")
    assert "global memory or a fat raw buffer" in message


def test_index_counts():
    assert "expected 2 destination indices, got 1" in verify_error(
        f"  amdgpu.gather_to_lds %g[%i, %j], %lds[%i] : f16, memref<1024x1024xf16>, {LDS}"
    )
    assert "expected 2 source indices, got 3" in verify_error(
        f"  amdgpu.gather_to_lds %g[%i, %j, %i], %lds[%i, %j] : f16, memref<1024x1024xf16>, {LDS}"
    )


def test_element_types_must_match():
    text = (
        "func.func @f(%g: memref<64xf32>, %l: memref<64xf16, #gpu.address_space<workgroup>>, %i: index) {\n"
        "  amdgpu.gather_to_lds %g[%i], %l[%i] : f16, memref<64xf32>, memref<64xf16, #gpu.address_space<workgroup>>\n"
        "  func.return\n}\n"
    )
    with pytest.raises(VerifyException, match="element types differ"):
        parse(text)


def test_destination_innermost_dim_must_be_contiguous():
    text = (
        "func.func @f(%g: memref<64xf16>, %l: memref<64xf16, strided<[2]>, #gpu.address_space<workgroup>>, %i: index) {\n"
        "  amdgpu.gather_to_lds %g[%i], %l[%i] : f16, memref<64xf16>, memref<64xf16, strided<[2]>, #gpu.address_space<workgroup>>\n"
        "  func.return\n}\n"
    )
    with pytest.raises(VerifyException, match="contiguous"):
        parse(text)


@pytest.mark.iree
def test_printed_ir_parses_in_iree_opt():
    ok, errors = iree_opt_accepts(print_ir(parse(func("\n".join(SNIPPETS.values())))))
    assert ok, errors
