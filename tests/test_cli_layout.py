"""`simtify layout` end to end, as a user runs it."""

import json
import subprocess
import sys
import time

from simtify.cli.main import main
from test_layout_seeds import SEED_64x64

XEGPU_128 = "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>"


def run(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_owners_json_lists_every_thread_in_register_order(capsys):
    rc, out, err = run(["layout", "owners", SEED_64x64, "--shape", "64x64", "--json"], capsys)
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert data["shape"] == [64, 64] and data["subgroup_size"] == 64 and data["num_threads"] == 128
    assert [t["tid"] for t in data["threads"]] == list(range(128))
    t16 = data["threads"][16]
    assert (t16["subgroup"], t16["lane"]) == (0, 16)
    assert t16["elements"][:5] == [[0, 4], [0, 5], [0, 6], [0, 7], [0, 20]]
    t64 = data["threads"][64]
    assert (t64["subgroup"], t64["lane"]) == (1, 0) and t64["elements"][0] == [32, 0]


def test_owners_defaults_for_xegpu(capsys):
    rc, out, _ = run(["layout", "owners", XEGPU_128, "--shape", "128x128", "--json"], capsys)
    data = json.loads(out)
    assert rc == 0 and data["subgroup_size"] == 16 and data["num_threads"] == 64
    # subgroup 2 (tid 32), lane 0: rows 32..63 then 96..127 (second round), column 0, 16, ...
    els = data["threads"][32]["elements"]
    assert els[0] == [32, 0] and els[1] == [32, 16] and [96, 0] in els


def test_owners_reads_layout_from_file(tmp_path, capsys):
    f = tmp_path / "layout.txt"
    f.write_text(SEED_64x64 + "\n")
    rc, out, _ = run(["layout", "owners", f"@{f}", "--json"], capsys)
    assert rc == 0 and json.loads(out)["num_threads"] == 128


def test_basis_cli(capsys):
    rc, out, _ = run(["layout", "basis", "--counts", "16,4", "--mapping", "1,0", "--id", "42", "--json"], capsys)
    assert rc == 0 and json.loads(out) == {"digits": [10, 2], "coords": [2, 10]}
    rc, out, _ = run(["layout", "basis", "--basis", "[[16, 4], [1, 0]]", "--id", "42"], capsys)
    assert rc == 0 and "[2, 10]" in out


def test_check_reports_coverage_and_replication(capsys):
    rc, out, _ = run(["layout", "check", XEGPU_128, "--shape", "128x128", "--json"], capsys)
    r = json.loads(out)
    assert rc == 0 and r["covers"] and r["max_replication"] == 2 and r["replicated_elements"] == 128 * 128
    rc, out, _ = run(["layout", "check", SEED_64x64], capsys)
    assert rc == 0 and "every element is owned" in out and "replication: none" in out


def test_convert_to_nested_equal_or_explained(capsys):
    rc, out, _ = run(["layout", "convert", "#xegpu.layout<sg_layout = [2, 2], sg_data = [64, 64], lane_layout = [1, 16], lane_data = [1, 1]>",
                      "--shape", "128x128", "--to", "nested", "--json"], capsys)
    r = json.loads(out)
    assert rc == 0 and r["nested"].startswith("#iree_vector_ext.nested_layout<subgroup_tile = [2, 2]")
    rc, out, _ = run(["layout", "convert", XEGPU_128, "--shape", "128x128", "--to", "nested"], capsys)
    assert rc == 1 and "round-robin" in out


def test_cli_starts_light():
    """`simtify --help` and `simtify layout` import neither the IR layer nor xdsl."""
    code = (
        "import sys, simtify.cli.main as m\n"
        "try:\n    m.main(['layout', 'basis', '--counts', '4', '--id', '1', '--json'])\n"
        "finally:\n    bad = [k for k in sys.modules if k.startswith(('xdsl', 'simtify.ir', 'simtify.sim'))]\n"
        "    print('HEAVY' if bad else 'LIGHT', bad)\n"
    )
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    assert "LIGHT" in p.stdout, p.stdout + p.stderr
    assert elapsed < 5  # generous: typically ~0.2 s; a timing, not a benchmark
    p = subprocess.run([sys.executable, "-m", "simtify.cli.main", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "layout" in p.stdout


def _owners(capsys, layout):
    rc, out, err = run(["layout", "owners", layout, "--json"], capsys)
    assert rc == 0 and err == "", err
    data = json.loads(out)
    return data, {tuple(e): (t["lane"], r) for t in data["threads"] for r, e in enumerate(t["elements"])}


def test_mma_operand_layouts_match_the_vendor_manuals(capsys):
    """`mma:NAME:ROLE` shows an intrinsic operand's lanes; checked against the CDNA3 ISA's
    MFMA 16x16x16 f16 fragments and PTX's mma.m16n8k16 fragments (register order: IREE's,
    row block first)."""
    data, own = _owners(capsys, "mma:MFMA_F32_16x16x16_F16:A")
    assert data["subgroup_size"] == 64 and data["shape"] == [16, 16]
    assert own == {(i, k): (i + 16 * (k // 4), k % 4) for i in range(16) for k in range(16)}
    _, own = _owners(capsys, "mma:MFMA_F32_16x16x16_F16:B")
    assert own == {(k, j): (j + 16 * (k // 4), k % 4) for k in range(16) for j in range(16)}
    _, own = _owners(capsys, "mma:MFMA_F32_16x16x16_F16:acc")
    assert own == {(i, j): (j + 16 * (i // 4), i % 4) for i in range(16) for j in range(16)}
    data, own = _owners(capsys, "mma:mma.sync.m16n8k16.f32.f16.f16.f32:A")
    assert data["subgroup_size"] == 32 and data["shape"] == [16, 16]
    want = {}
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for r, (rb, cb, e) in enumerate((rb, cb, e) for rb in (0, 8) for cb in (0, 8) for e in (0, 1)):
            want[(g + rb, 2 * t + e + cb)] = (lane, r)
    assert own == want
    _, own = _owners(capsys, "mma:NV_MMA_SYNC_F32_16x8x16_F16:C")
    assert own == {(lane // 4 + 8 * (i // 2), 2 * (lane % 4) + i % 2): (lane, i) for lane in range(32) for i in range(4)}


def test_bad_mma_layouts_are_one_error_line(capsys):
    rc, out, err = run(["layout", "show", "mma:MFMA_F32_16x16x16_F16:Q"], capsys)
    assert rc == 2 and out == "" and err.startswith("error: layout: ") and "mma:NAME:A" in err
    rc, _, err = run(["layout", "show", "mma:NOPE:A"], capsys)
    assert rc == 2 and err.startswith("error: mma:NOPE:A: unknown MMA intrinsic 'NOPE'") and err.count("\n") == 1
