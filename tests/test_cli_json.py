"""JSON that scripts can trust: every verb that prints a result has --json, and what it
prints is complete (the swizzle a memory plan uses; the iteration space a config was
solved for, which `config explain` accepts unchanged)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from simtify.cli.main import SUBCOMMANDS, build_parser, main
from simtify.layout.conversion_plan import BufferLayout


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...]):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, path + (name,))


def test_every_verb_has_json():
    missing = []
    for name in SUBCOMMANDS:
        parser, _ = build_parser([name])
        top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        for path, leaf in _leaves(top, (name,)):
            if not any("--json" in a.option_strings for a in leaf._actions):
                missing.append(" ".join(path))
    assert missing == []


NESTED = ("<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [4, 16], "
          "element_tile = [4, 1], subgroup_strides = [0, 0], thread_strides = [1, 4]>")


@pytest.mark.parametrize("argv,keys", [
    (["layout", "show", NESTED, "--json"], {"layout", "shape", "owners", "view"}),
    (["layout", "show", NESTED, "--view", "threads", "--json"], {"layout", "shape", "threads", "view"}),
    (["opt", "example:row-max", "--json"], {"module", "pipeline", "passes"}),
    (["emit", "cuda", "example:reduction", "--pipeline", "nested-distribute-shuffles", "--json"],
     {"language", "target", "kernel", "launch", "source"}),
    (["bench", "gpu", "--kernels", "reduction", "--json"], {"results"}),
])
def test_new_json_outputs_are_one_object(capsys, argv, keys):
    code, out, err = cli(capsys, *argv)
    assert code == 0, err
    obj = json.loads(out)
    assert keys <= set(obj)


def test_layout_show_json_owners_are_the_ownership_map(capsys):
    from simtify.layout import ownership_map, parse_layout

    code, out, _ = cli(capsys, "layout", "show", "#xegpu.layout<sg_layout = [2, 2], sg_data = [8, 16], "
                       "lane_layout = [2, 8], lane_data = [1, 1]>", "--shape", "32x16", "--json")
    assert code == 0
    obj = json.loads(out)
    omap = ownership_map(parse_layout("#xegpu.layout<sg_layout = [2, 2], sg_data = [8, 16], lane_layout = [2, 8], "
                                      "lane_data = [1, 1]>"), (32, 16))
    for flat in (0, 17, 511):
        coord = (flat // 16, flat % 16)
        assert [tuple(p) for p in obj["owners"][flat]] == omap.owners(coord)


def test_opt_json_names_the_passes_run_in_order(capsys, tmp_path):
    out_path = tmp_path / "o.mlir"
    code, out, err = cli(capsys, "opt", "example:row-max", "--pipeline", "nested-distribute-shuffles", "--json",
                         "-o", out_path)
    assert code == 0, err
    obj = json.loads(out)
    assert obj["pipeline"] == "nested-distribute-shuffles"
    assert obj["passes"] == ["nested-distribute", "expand-subgroup-reduce"]
    assert obj["module"] == out_path.read_text() and "gpu.shuffle" in obj["module"]


# --- plan-conversion: the swizzle, enough to recompute every address ----------------------

SRC = ("<subgroup_tile = [4, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [16, 4], "
       "element_tile = [1, 16], subgroup_strides = [1, 0], thread_strides = [4, 1]>")
DST = ("<subgroup_tile = [1, 4], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [4, 16], "
       "element_tile = [16, 1], subgroup_strides = [0, 1], thread_strides = [1, 4]>")


def _address_from_json(buf: dict, coords: np.ndarray) -> np.ndarray:
    """A script's reading of the JSON buffer (2-D, order [0, 1])."""
    row, col = coords[..., buf["order"][0]], coords[..., buf["order"][1]]
    sw = buf["swizzle"]
    if sw is None:
        return row * buf["pitch"] + col
    if sw["kind"] == "column-groups":
        col = ((col // sw["vec"]) ^ ((row // sw["per_phase"]) % sw["max_phase"])) * sw["vec"] + col % sw["vec"]
        return row * buf["pitch"] + col
    plain = row * buf["pitch"] + col
    out = plain.copy()
    for bit, mask in sw["xor"]:
        out ^= ((plain >> bit) & 1) * mask
    return out


def test_plan_conversion_json_carries_the_swizzle_it_prints(capsys):
    code, text, _ = cli(capsys, "plan-conversion", SRC, DST, "--shared-memory")
    assert code == 0 and "address ^=" in text
    code, out, _ = cli(capsys, "plan-conversion", SRC, DST, "--shared-memory", "--json")
    buf = json.loads(out)["buffer"]
    assert buf["swizzle"]["kind"] == "xor-bits" and buf["swizzle"]["xor"]
    assert buf["description"] in text
    coords = np.stack(np.indices((64, 64)), axis=-1)
    layout = BufferLayout((64, 64), tuple(buf["order"]), buf["pad"],
                          xor_columns=tuple(tuple(x) for x in buf["swizzle"]["xor"]))
    assert np.array_equal(_address_from_json(buf, coords), layout.address(coords))
    # the addresses are a permutation of the buffer: no two elements share a slot
    assert len(np.unique(_address_from_json(buf, coords))) == 64 * 64


def test_column_group_swizzle_json_recomputes_the_address():
    layout = BufferLayout((16, 32), (0, 1), 0, (4, 2, 8))
    buf = {"order": [0, 1], "pitch": layout.pitch, "swizzle": layout.swizzle_json()}
    coords = np.stack(np.indices((16, 32)), axis=-1)
    assert buf["swizzle"]["kind"] == "column-groups"
    assert np.array_equal(_address_from_json(buf, coords), layout.address(coords))


# --- config suggest / tune -> config explain ---------------------------------------------

def _explain(capsys, obj: dict, *space):
    if not space:
        space = ("--iteration-space", "x".join(map(str, obj["iteration_space"])),
                 "--reduction-dims", ",".join(map(str, obj["reduction_dims"])))
    return cli(capsys, "config", "explain", *space, "--dtype", obj["dtype"], "--target", obj["target"],
               "--config", obj["lowering_config"] if "best" not in obj else obj["best"]["lowering_config"], "--json")


def test_suggest_json_pipes_into_explain(capsys):
    code, out, err = cli(capsys, "config", "suggest", "--iteration-space", "4x6656x16384", "--reduction-dims", "2",
                         "--dtype", "f16", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["iteration_space"] == [26624, 16384] and obj["reduction_dims"] == [1]
    assert obj["input_dims"] == [0, 1] and obj["dtype"] == "f16" and obj["target"] == "gfx942"
    assert obj["reduction_config"] == obj["lowering_config"]  # VectorDistribute: IREE's config is a reduction's
    code, out, err = _explain(capsys, obj)
    assert code == 0, err
    info = json.loads(out)
    assert info["iteration_space"] == [26624, 16384] and info["workgroup_count"] == 26624
    # and with the space given to suggest, unchanged: explained on the folded space, with a note
    code, out2, err = _explain(capsys, obj, "--iteration-space", "4x6656x16384", "--reduction-dims", "2")
    assert code == 0, err
    info2 = json.loads(out2)
    assert info2["workgroup_count"] == 26624 and info2["notes"][0].startswith(
        "the config is for IREE's dispatch iteration space 26624x16384")


def test_a_transposing_dispatch_explains_with_the_input_in_memory_order(capsys):
    code, out, err = cli(capsys, "config", "suggest", "--iteration-space", "128x512", "--reduction-dims", "0",
                         "--strategy", "simtify", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["iteration_space"] == [512, 128] and obj["reduction_dims"] == [1] and obj["input_dims"] == [1, 0]
    code, out, err = _explain(capsys, obj, "--iteration-space", "128x512", "--reduction-dims", "0")
    assert code == 0, err
    assert json.loads(out)["iteration_space"] == [512, 128]


def test_suggest_json_without_a_reduction_config(capsys):
    code, out, err = cli(capsys, "config", "suggest", "--iteration-space", "128x512", "--reduction-dims", "0",
                         "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["pipeline"] != "VectorDistribute" and obj["iteration_space"] == [512, 128]


def test_tune_json_pipes_into_explain(capsys):
    code, out, err = cli(capsys, "tune", "reduction", "--iteration-space", "2x64x512", "--reduction-dims", "2",
                         "--jobs", "1", "--top", "1", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["iteration_space"] == [128, 512] and obj["reduction_dims"] == [1] and obj["op"] == "sum"
    code, out, err = _explain(capsys, obj)
    assert code == 0, err
    assert json.loads(out)["config"] == obj["best"]["lowering_config"]
