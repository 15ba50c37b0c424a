"""`simtify opt` speaks MLIR's command-line conventions: `--pass-pipeline` (MLIR's
textual pipeline) and `-p` (xDSL's short form) with pass options, run in the order
written; repeated or conflicting flags are errors; `--mlir-print-ir-after-all` dumps
split back into stages under iree-opt's headers; `--split-input-file`; diagnostics as
mlir-opt prints them (``FILE:LINE:COL: error: ...``, the source line, a caret);
`--version`, `python -m simtify` and standard input."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from diagnostics import one_error
from test_warp_cli import COPY

from simtify.cli.main import main
from simtify.examples import example_program
from simtify.ir import parse

# iree-opt 3.12 prints `// -----// IR Dump After CSEPass: cse //----- //` (and
# `CanonicalizerPass: canonicalize{max-iterations=10 ...}` for a pass with options)
HEADER = re.compile(r"^// -----// IR Dump After (\w+): ([\w-]+)(\{[^}]*\})? //----- //$", re.M)

GOOD = "func.func @f(%a: vector<4xf32>) -> vector<4xf32> {\n  %b = arith.addf %a, %a : vector<4xf32>\n" \
       "  return %b : vector<4xf32>\n}\n"
BAD_OP = "func.func @f() {\n  %0 = vector.frobnicate : f32\n  return\n}\n"


def opt(capsys, *args):
    code = main(["opt", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def simtify(*args, **kwargs) -> subprocess.CompletedProcess:
    """The real executable, as a venv that is not activated runs it."""
    return subprocess.run([sys.executable, "-m", "simtify", *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False, **kwargs)


def stages(dump: str) -> list[tuple[str, str, str]]:
    """(class name, pass name with options, IR) of each stage of an IR dump."""
    heads = list(HEADER.finditer(dump))
    assert heads and dump[:heads[0].start()] == "", dump[:200]
    return [(h.group(1), h.group(2) + (h.group(3) or ""), dump[h.end() + 1:nxt.start() if nxt else len(dump)])
            for h, nxt in zip(heads, heads[1:] + [None])]


# --- passes, in the order written, with options -----------------------------------------


def test_pass_pipeline_runs_two_passes_with_an_option_in_order(capsys):
    code, out, err = opt(capsys, "example:row-max", "--pass-pipeline",
                         "builtin.module(nested-distribute{workgroup-size=256}, expand-subgroup-reduce)")
    assert (code, err) == (0, "")
    assert "gpu.subgroup_reduce" not in out and out.count("gpu.shuffle") == 6  # expanded after distributing
    assert opt(capsys, "example:row-max", "--pipeline", "nested-distribute-shuffles")[1] == out
    code, reversed_out, _ = opt(capsys, "example:row-max", "-p", "expand-subgroup-reduce,nested-distribute")
    assert code == 0 and "gpu.subgroup_reduce" in reversed_out and "gpu.shuffle" not in reversed_out


def test_pass_options_reach_the_pass(tmp_path, capsys):
    path = tmp_path / "copy.mlir"
    path.write_text(COPY)
    code, whole, _ = opt(capsys, path, "-p", "warp-distribute{target=gfx942 max-whole-write=32}")
    assert code == 0 and "vector<32xf32>" in whole and "scf.if" in whole  # the write stays whole on lane 0
    assert opt(capsys, path, "--pipeline", "warp-distribute", "--max-whole-write", "32")[1] == whole
    code, split, _ = opt(capsys, path, "--pass-pipeline", "builtin.module(warp-distribute{target=sm_90 warp-size=16})")
    assert code == 0 and "vector<2xf32>" in split and "arith.remui" in split
    assert opt(capsys, path, "--pipeline", "warp-distribute", "--target", "sm_90", "--warp-size", "16")[1] == split
    code, out, err = opt(capsys, path, "--pass-pipeline", "builtin.module(warp-wrap{warp-size=32 target=sm_90})")
    assert (code, err) == (0, "") and "gpu.warp_execute_on_lane_0(%laneid)[32]" in out


def test_nested_anchors_run_the_passes_on_those_ops(capsys):
    code, out, err = opt(capsys, "example:row-max", "--pass-pipeline", "builtin.module(func.func(nested-distribute))",
                         "--mlir-print-ir-after-all")
    assert code == 0 and out == opt(capsys, "example:row-max", "--pipeline", "nested-distribute")[1]
    [(name, arg, ir)] = stages(err)
    assert (name, arg) == ("NestedDistributePass", "nested-distribute{target=gfx942}")
    assert ir.startswith("func.func @row_max(")  # as MLIR dumps a function pass: the function alone
    parse(ir, "stage.mlir")
    code, untouched, _ = opt(capsys, "example:row-max", "--pass-pipeline", "builtin.module(gpu.module(nested-distribute))")
    assert code == 0 and untouched == opt(capsys, "example:row-max")[1]  # no gpu.module: nothing ran


def test_repeated_pass_flags_run_in_order(capsys):
    code, out, err = opt(capsys, "example:row-max", "--pass", "nested-distribute", "--pass", "expand-subgroup-reduce",
                         "--mlir-print-ir-after-all")
    assert code == 0 and out == opt(capsys, "example:row-max", "--pipeline", "nested-distribute-shuffles")[1]
    assert [arg for _, arg, _ in stages(err)] == ["nested-distribute{target=gfx942}",
                                                 "expand-subgroup-reduce{target=gfx942}"]


@pytest.mark.parametrize("args, message", [
    (["--pipeline", "nested-distribute", "--pass", "propagate-layouts"],
     "error: simtify opt: --pipeline and --pass cannot be combined"),
    (["--pass-pipeline", "builtin.module(nested-distribute)", "-p", "nested-distribute"],
     "error: simtify opt: --pass-pipeline and -p cannot be combined"),
    (["--pipeline", "nested-distribute", "--pipeline", "warp-wrap"],
     "error: simtify opt: --pipeline given twice (give it once)"),
    (["-p", "nested-distribute", "-p", "warp-wrap"], "error: simtify opt: -p given twice (give it once)"),
    (["--target", "gfx942", "--target", "sm_90"], "error: simtify opt: --target given twice (give it once)"),
    (["-o", "a.mlir", "-o", "b.mlir"], "error: simtify opt: -o given twice (give it once)"),
    (["--split-input-file", "--split-input-file"], "error: simtify opt: --split-input-file given twice"),
    (["--mlir-print-ir-after-all", "--mlir-print-ir-after", "nested-distribute", "-p", "nested-distribute"],
     "error: simtify opt: --mlir-print-ir-after-all and --mlir-print-ir-after cannot be combined"),
    (["--mlir-print-ir-after", "frobnicate", "-p", "nested-distribute"],
     "error: --mlir-print-ir-after: unknown pass 'frobnicate' (passes: lower-reduction-configs, "),
    (["--pass", "frobnicate"], "error: --pass: unknown pass 'frobnicate' (passes: lower-reduction-configs, "),
    (["--pipeline", "frobnicate"], "error: --pipeline: unknown pipeline 'frobnicate' (pipelines: warp-wrap, "),
])
def test_repeated_and_conflicting_flags_are_errors(args, message, capsys):
    code, out, err = opt(capsys, "example:row-max", *args)
    assert (code, out) == (2, "")
    assert one_error(err).startswith(message), err


@pytest.mark.parametrize("flag, text, column, message", [
    ("--pass-pipeline", "builtin.module(nested-distribute,frobnicate)", 34,
     "'frobnicate' does not refer to a registered pass or pipeline (passes: lower-reduction-configs, "),
    ("--pass-pipeline", "builtin.module(nested-distribute{tile=4})", 34,
     "'nested-distribute' has no option 'tile' (its options: target, subgroup-size, workgroup-size)"),
    ("--pass-pipeline", "builtin.module(lower-inner-tiled{target=gfx942})", 34,
     "'lower-inner-tiled' has no option 'target' (its options: none)"),
    ("--pass-pipeline", "builtin.module(nested-distribute{subgroup-size=many})", 48,
     "option 'subgroup-size' takes an integer, not 'many'"),
    ("--pass-pipeline", "builtin.module(nested-distribute{subgroup-size=32})", 16,
     "gfx942 runs subgroups of 64 lanes, not 32"),
    ("--pass-pipeline", "builtin.module(nested-distribute{target=gfx1})", 16,
     "unknown target 'gfx1' (known: gfx942, gfx950, sm_90, xe)"),
    ("--pass-pipeline", "nested-distribute", 1,
     "expected the pass pipeline wrapped in its anchor op, e.g. 'builtin.module(...)'"),
    ("--pass-pipeline", "builtin.module(nested-distribute", 33, "expected ')', found the end"),
    ("--pass-pipeline", "builtin.module(nested(nested-distribute))", 16,
     "'nested' is not an op name to nest passes on (e.g. func.func, gpu.module)"),
    ("-p", "nested-distribute,,warp-wrap", 19, "expected a pass name, found ','"),
    ("-p", "nested-distribute{workgroup-size=128}", 1, "nested-distribute{workgroup-size=128} conflicts with "
                                                       "--workgroup-size 256"),
])
def test_unknown_passes_and_options_point_into_the_pipeline(flag, text, column, message, capsys):
    extra = ["--workgroup-size", "256"] if "conflicts" in message else []
    code, out, err = opt(capsys, "example:row-max", flag, text, *extra)
    assert (code, out) == (2, "")
    assert one_error(err).startswith(f"{flag}:1:{column}: error: {message}"), err
    assert err.endswith(f"\n{text}\n{' ' * (column - 1)}^\n"), err  # the caret under the column


def test_list_pipelines_names_each_pass_options(capsys):
    code, out, _ = opt(capsys, "--list-pipelines")
    assert code == 0
    assert re.search(r"^  nested-distribute: .* \[options: target, subgroup-size, workgroup-size\]$", out, re.M)
    assert re.search(r"^  lower-inner-tiled: [^[]*$", out, re.M)


# --- IR dumps ---------------------------------------------------------------------------


def test_print_ir_after_all_splits_back_into_stages_that_simulate_alike(tmp_path, capsys):
    code, out, err = opt(capsys, "example:row-max", "--pass-pipeline",
                         "builtin.module(propagate-layouts,nested-distribute{subgroup-size=64},expand-subgroup-reduce)",
                         "--mlir-print-ir-after-all")
    assert code == 0
    found = stages(err)
    assert [(n, a) for n, a, _ in found] == [
        ("PropagateLayoutsPass", "propagate-layouts{target=gfx942}"),
        ("NestedDistributePass", "nested-distribute{target=gfx942 subgroup-size=64}"),
        ("ExpandSubgroupReducePass", "expand-subgroup-reduce{target=gfx942}"),
    ]
    assert all(ir.endswith("}\n\n\n") for _, _, ir in found)  # as iree-opt separates them
    assert parse(found[-1][2], "last.mlir") is not None and found[-1][2].strip() == out.strip()
    for i, (_, _, ir) in enumerate(found):
        stage = tmp_path / f"stage{i}.mlir"
        stage.write_text(ir)
        parse(ir, str(stage))
        code = main(["check", "example:row-max", str(stage), "--func", "row_max"])
        report, err = capsys.readouterr()
        assert code == 0 and report.strip().endswith("equal"), report + err


def test_print_ir_after_names_passes_of_a_named_pipeline(capsys):
    code, _, err = opt(capsys, "example:config-reduction", "--pipeline", "reduction-from-config",
                       "--mlir-print-ir-after", "lower-reduction-configs")
    assert code == 0
    [(name, arg, ir)] = stages(err)
    assert (name, arg) == ("LowerReductionConfigsPass", "lower-reduction-configs{target=gfx942}")
    assert "iree_vector_ext.to_layout" in ir and "gpu.subgroup_reduce" not in ir
    parse(ir, "stage.mlir")


# --- --split-input-file -----------------------------------------------------------------


def test_split_input_file_reports_a_bad_chunk_and_prints_the_others(tmp_path, capsys):
    path = tmp_path / "chunks.mlir"
    path.write_text(GOOD + "// -----\n" + BAD_OP + "// -----\n" + GOOD.replace("@f", "@g"))
    code, out, err = opt(capsys, path, "--split-input-file")
    assert code == 2
    # line 7 of the file is line 2 of the second chunk
    assert err == f"{path}:7:8: error: unknown operation 'vector.frobnicate'\n  %0 = vector.frobnicate : f32\n" \
                  "       ^\n"
    chunks = out.split("// -----\n")
    assert len(chunks) == 3 and chunks[1] == ""
    assert "@f(" in chunks[0] and "@g(" in chunks[2]
    for chunk in (chunks[0], chunks[2]):
        assert chunk.endswith("}\n\n")
        parse(chunk, "chunk.mlir")
    # a pass failing on every chunk: each chunk's error, in order, and nothing printed
    code, out, err = opt(capsys, path, "--split-input-file", "--pipeline", "nested-distribute")
    assert code == 2 and out == "// -----\n// -----\n"
    firsts = [line for line in err.splitlines() if ": error: " in line]
    assert [f.split(": error: ")[0] for f in firsts] == [f"{path}:2:3", f"{path}:7:8", f"{path}:12:3"], err
    assert "no layout reaches the result of 'arith.addf'" in firsts[2]


def test_without_split_input_file_the_markers_are_comments(tmp_path, capsys):
    path = tmp_path / "chunks.mlir"
    path.write_text(GOOD + "// -----\n" + GOOD.replace("@f", "@g"))
    code, out, _ = opt(capsys, path)
    assert code == 0 and "// -----" not in out and "@f(" in out and "@g(" in out


# --- diagnostics ------------------------------------------------------------------------


def test_diagnostics_are_located_first_with_the_source_line_and_a_caret(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%a: vector<4xf32>) {\n\t%0 = vector.transpose %a, [1, 0] : vector<4xf32> "
                    "to vector<4xf32>\n  return\n}\n")
    proc = simtify("opt", path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"{path}:2:2: error: 'vector.transpose' op permutation [1, 0] is not a permutation of "
                           "the 1 dims of vector<4xf32>\n"
                           "\t%0 = vector.transpose %a, [1, 0] : vector<4xf32> to vector<4xf32>\n"
                           "\t^\n")
    first = proc.stderr.splitlines()[0]  # what grep and editors' error matchers read
    assert re.fullmatch(r"(.+):(\d+):(\d+): error: .+", first).group(1) == str(path)


def test_diagnostics_of_other_verbs_and_unlocated_errors(tmp_path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text(BAD_OP)
    code = main(["run", str(path), "--func", "f"])
    assert code == 2 and capsys.readouterr().err == (f"{path}:2:8: error: unknown operation 'vector.frobnicate'\n"
                                                     "  %0 = vector.frobnicate : f32\n       ^\n")
    code, _, err = opt(capsys, tmp_path / "missing.mlir")
    assert code == 2 and err == f"error: {tmp_path / 'missing.mlir'}: cannot read input: No such file or directory\n"
    code = main(["run", "example:row-max", "--func", "nope"])
    assert code == 2 and capsys.readouterr().err.startswith("error: --func: no function named 'nope'")


def test_a_location_past_the_end_of_its_line_still_gets_a_caret(tmp_path, capsys):
    path = tmp_path / "short.mlir"
    path.write_text("func.func @f() {\n")
    code, _, err = opt(capsys, path)
    assert code == 2 and err.startswith(f"{path}:2:1: error: unexpected end of input") and err.endswith("\n\n^\n")


# --- --version, python -m simtify, standard input ----------------------------------------


def test_version_is_the_package_version_without_heavy_imports():
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "simtify", "--version"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout == f"simtify {version('simtify')}\n"
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert not {"numpy", "xdsl", "simtify.ir", "simtify.cli.opt_cmd"} & imported, sorted(imported)


def test_distributing_one_of_iree_s_lit_inputs_reads_no_numpy():
    """Distributing a small kernel asks its layouts about single threads only: numpy (a
    fifth of such a run's start-up) is left unread."""
    lit = Path(__file__).parent / "fixtures" / "iree_nested" / "main__12_distribute_transfer_read_write.mlir"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "simtify", "opt", str(lit), "--pipeline",
                           "nested-distribute"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "gpu.thread_id" in proc.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "simtify.transforms.nested.driver" in imported and "numpy" not in imported


def test_distributing_one_of_iree_s_lit_inputs_imports_only_what_its_pipeline_and_ops_use():
    """A pipeline's transforms are imported when it runs, and a module the input never
    reaches is left unread: the other pipelines' passes (warp, XeGPU, DMA, the reduction
    kernel), the transfer_gather rewrites (the input has no gather), the reduction
    configs (no `lowering_config`), the shape_cast layouts (no shape_cast) and the
    simulator's interpreter. Read from
    `sys.modules` after the command: `-X importtime` misses `importlib.import_module`."""
    lit = Path(__file__).parent / "fixtures" / "iree_nested" / "main__12_distribute_transfer_read_write.mlir"
    script = ("import sys\nfrom simtify.cli.main import main\n"
              f"code = main(['opt', {str(lit)!r}, '--pipeline', 'nested-distribute'])\n"
              "print('MODULES', ' '.join(sorted(sys.modules)))\nsys.exit(code)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "gpu.thread_id" in proc.stdout, proc.stderr
    imported = set(proc.stdout.rsplit("MODULES ", 1)[1].split())
    assert {"simtify.transforms.nested.driver", "simtify.transforms.transfer_gather_canonicalize",
            "simtify.ir.iree_gpu", "simtify.target"} <= imported  # the check is about a real run
    unrelated = {"simtify.transforms.warp_distribute", "simtify.transforms.xegpu_pipeline",
                 "simtify.transforms.xegpu_sg_to_lane", "simtify.transforms.lower_dma",
                 "simtify.transforms.gather_to_lds", "simtify.transforms.tensor_dma",
                 "simtify.transforms.reduction_kernel", "simtify.transforms.lower_inner_tiled",
                 "simtify.transforms.expand_subgroup_reduce", "simtify.transforms.transfer_gather_forms",
                 "simtify.layout.reduction_config", "simtify.sim.interpreter", "simtify.codegen",
                 "simtify.tune", "simtify.ir.xegpu", "simtify.layout.reshape", "numpy"}
    assert not unrelated & imported, sorted(unrelated & imported)


def test_the_process_exits_with_its_status_after_writing_everything_and_running_exit_handlers(tmp_path, capsys):
    """`entry` leaves without tearing the interpreter down: what was written still reaches
    the pipe and the file, registered exit handlers still run, the status is main's."""
    run_entry = ("import atexit, sys\n"
                 "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
                 "from simtify.cli.main import entry\n"
                 "entry()\n")
    expected = opt(capsys, "example:row-max", "--pipeline", "nested-distribute")[1]
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as a pipe is, by default
    out = tmp_path / "out.mlir"
    for extra in ([], ["-o", str(out)]):
        proc = subprocess.run([sys.executable, "-c", run_entry, "opt", "example:row-max", "--pipeline",
                               "nested-distribute", *extra], capture_output=True, text=True, timeout=120, check=False,
                              env=buffered)
        assert proc.returncode == 0 and proc.stderr == "exit handler ran\n"
        assert (out.read_text() if extra else proc.stdout) == expected
    proc = subprocess.run([sys.executable, "-c", run_entry, "opt", "-"], input=BAD_OP, capture_output=True, text=True,
                          timeout=120, check=False, env=buffered)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("<stdin>:2:8: error: unknown operation") and proc.stderr.endswith("exit handler ran\n")
    profile = tmp_path / "opt.prof"  # a profiler still writes its results at the exit
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "simtify", "opt", "example:row-max"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and profile.stat().st_size > 0


def test_python_dash_m_simtify_is_the_command_line(capsys):
    proc = simtify("opt", "example:row-max", "--pipeline", "nested-distribute")
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == opt(capsys, "example:row-max", "--pipeline", "nested-distribute")[1]
    proc = simtify("--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: simtify ")


def test_no_file_or_dash_reads_standard_input(monkeypatch, capsys):
    expected = opt(capsys, "example:row-max")[1]
    proc = simtify("opt", input=example_program("row-max"))
    assert proc.returncode == 0 and proc.stdout == expected
    monkeypatch.setattr(sys, "stdin", io.StringIO(BAD_OP))
    code, _, err = opt(capsys, "-", "--split-input-file")
    assert code == 2 and err.startswith("<stdin>:2:8: error: unknown operation 'vector.frobnicate'\n")



def test_a_command_collects_garbage_less_often_and_restores_the_setting(monkeypatch, capsys):
    import gc

    from simtify.cli import main as cli_main

    seen = []
    real_run = cli_main._run
    monkeypatch.setattr(cli_main, "_run", lambda argv: seen.append(gc.get_threshold()) or real_run(argv))
    before = gc.get_threshold()
    assert main(["opt", "example:row-max"]) == 0
    assert seen == [(cli_main.COLLECT_EVERY, *before[1:])] and gc.get_threshold() == before
    capsys.readouterr()
