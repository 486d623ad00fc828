"""scripts/layering.py, the layering check: on hand-made symbol tables (cycles, upward calls,
the simulator's narrower rule, duplicate definitions, unknown directories), on objects
compiled here from tiny sources (object names as meson gives them, nm's output), and on the
real build.

Needs neither root nor the daemon. JOBLET_BUILD names the build directory (default: ./build).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("JOBLET_BUILD", os.path.join(ROOT, "build"))
SCRIPT = os.path.join(ROOT, "scripts", "layering.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import layering  # noqa: E402


def check(table, graph=False):
    r = layering.analyze(table)
    rc, lines = layering.report(r, graph)
    return r, rc, "\n".join(lines)


def test_layers_table():
    names = [name for name, _ in layering.LAYERS]
    assert names == ["common", "sched", "gpu", "store", "exec", "core", "api", "daemon", "cli", "sim", "slurm"]
    assert layering.USES["sim"] == ("common", "sched", "gpu")
    assert layering.USES["slurm"] == ("common",)


def test_clean_graph_passes_with_one_line():
    table = {
        "src/common/util.c": ({"xmalloc"}, {"malloc"}),
        "src/core/jobs.c": ({"job_new"}, {"xmalloc", "printf"}),
        "src/core/queue.c": ({"queue_push"}, {"job_new", "xmalloc"}),
        "src/api/routes.c": ({"routes_dispatch"}, {"queue_push", "job_new"}),
    }
    r, rc, out = check(table)
    assert rc == 0 and r.ok
    assert out == "layering: 4 files, 5 arrows, no cycles, no upward calls"
    assert r.arrows[("src/core/queue.c", "src/core/jobs.c")] == ["job_new"]
    # --graph: the graph, then the same summary
    _, rc, out = check(table, graph=True)
    assert rc == 0
    assert "[core]\n  src/core/jobs.c\n    -> src/common/util.c: xmalloc" in out
    assert out.endswith("layering: 4 files, 5 arrows, no cycles, no upward calls")


def test_two_file_cycle_is_reported_with_its_symbols():
    table = {
        "src/api/routes.c": ({"http_reply_error", "routes_dispatch"}, {"metrics_reply"}),
        "src/api/metrics_http.c": ({"metrics_reply"}, {"http_reply_error"}),
        "src/api/http.c": ({"http_start"}, {"routes_dispatch"}),
    }
    r, rc, out = check(table)
    assert rc == 1
    assert [comp for comp, _ in r.cycles] == [["src/api/metrics_http.c", "src/api/routes.c"]]
    assert "cycle: 2 files tie each other: src/api/metrics_http.c, src/api/routes.c" in out
    assert "src/api/metrics_http.c -> src/api/routes.c -> src/api/metrics_http.c" in out
    assert "src/api/metrics_http.c -> src/api/routes.c: http_reply_error" in out
    assert "src/api/routes.c -> src/api/metrics_http.c: metrics_reply" in out
    assert "1 cycles" in out.splitlines()[-1]
    # the graph comes with the failure
    assert "[api]\n  src/api/http.c\n    -> src/api/routes.c: routes_dispatch" in out


def test_every_arrow_of_a_larger_cycle_is_shown():
    # a -> b -> c -> a, and c -> b: two cycles in one component
    table = {
        "src/exec/a.c": ({"fa"}, {"fb"}),
        "src/exec/b.c": ({"fb"}, {"fc"}),
        "src/exec/c.c": ({"fc"}, {"fa", "fb"}),
    }
    r, rc, out = check(table)
    assert rc == 1
    (comp, cycles), = r.cycles
    assert comp == ["src/exec/a.c", "src/exec/b.c", "src/exec/c.c"]
    assert ["src/exec/b.c", "src/exec/c.c"] in cycles
    assert ["src/exec/a.c", "src/exec/b.c", "src/exec/c.c"] in cycles
    shown = {(a, b) for c in cycles for a, b in zip(c, c[1:] + c[:1])}
    assert shown == set(r.arrows)


def test_upward_call_names_file_symbol_and_definer():
    table = {
        "src/store/db.c": ({"db_update_job"}, {"job_state_name"}),
        "src/core/jobs.c": ({"job_state_name"}, {"xmalloc"}),
        "src/common/util.c": ({"xmalloc"}, set()),
    }
    r, rc, out = check(table)
    assert rc == 1 and not r.cycles
    assert r.violations == [("src/store/db.c", "job_state_name", "src/core/jobs.c", "upward call: store is below core")]
    assert ("layer violation: src/store/db.c uses job_state_name defined in src/core/jobs.c "
            "(upward call: store is below core)") in out
    assert out.splitlines()[-1] == "layering: 3 files, 2 arrows, no cycles, 1 layer violations"


def test_cycle_and_upward_call_together():
    table = {
        "src/common/log.c": ({"log_msg"}, {"core_now"}),
        "src/core/loop.c": ({"core_now"}, {"log_msg"}),
    }
    r, rc, out = check(table)
    assert rc == 1
    assert len(r.cycles) == 1
    assert [(a, s, b) for a, s, b, _ in r.violations] == [("src/common/log.c", "core_now", "src/core/loop.c")]


def test_sim_may_use_only_common_sched_gpu():
    table = {
        "src/sim/sim.c": ({"sim_run"}, {"sched_decide", "gpu_find", "jerr_set", "core_schedule"}),
        "src/sched/sched.c": ({"sched_decide"}, set()),
        "src/gpu/inventory.c": ({"gpu_find"}, set()),
        "src/common/err.c": ({"jerr_set"}, set()),
        "src/core/queue.c": ({"core_schedule"}, set()),
    }
    r, rc, out = check(table)
    assert rc == 1
    assert [(a, s, b) for a, s, b, _ in r.violations] == [("src/sim/sim.c", "core_schedule", "src/core/queue.c")]
    assert "sim may use only common, sched, gpu" in out


def test_file_outside_the_layers_fails():
    r, rc, out = check({"src/plugins/x.c": ({"x"}, set()), "src/common/y.c": ({"y"}, {"x"})})
    assert rc == 1
    assert r.unknown == ["src/plugins/x.c"]
    assert "unknown layer: src/plugins/x.c" in out


def test_symbol_defined_in_several_files():
    # Several programs define main and the same helper name: a use resolves to the definer
    # in its own directory; with none there, every definer gets an arrow (strict).
    table = {
        "src/cli/rnx.c": ({"main", "usage"}, set()),
        "src/cli/cmd.c": ({"cmd"}, {"usage"}),
        "src/sim/sim_main.c": ({"main", "usage"}, set()),
        "src/api/x.c": ({"x"}, {"usage"}),
    }
    r, rc, _ = check(table)
    assert r.duplicates == {"main": ["src/cli/rnx.c", "src/sim/sim_main.c"],
                            "usage": ["src/cli/rnx.c", "src/sim/sim_main.c"]}
    assert ("src/cli/cmd.c", "src/cli/rnx.c") in r.arrows
    assert ("src/cli/cmd.c", "src/sim/sim_main.c") not in r.arrows
    assert ("src/api/x.c", "src/cli/rnx.c") in r.arrows and ("src/api/x.c", "src/sim/sim_main.c") in r.arrows
    assert rc == 1 and len(r.violations) == 2


CC = shutil.which("cc") or shutil.which("gcc")


@pytest.mark.skipif(not (CC and shutil.which("nm")), reason="needs a C compiler and nm")
def test_reads_meson_style_objects(tmp_path):
    """Objects named as meson names them, in several targets and under tests/ (skipped): the
    script finds them, maps them back to src/ paths (underscores in file names included) and
    reads their symbols with nm; statics make no arrows; an object the build no longer lists
    in compile_commands.json is left out."""
    src = tmp_path / "src"
    build = tmp_path / "build"
    sources = {
        "src/common/str_util.c": "int su_len(const char *s) { int n = 0; while (s[n]) n++; return n; }\n",
        "src/core/job_list.c": ("int su_len(const char *s);\nint core_job_count;\n"
                                "static int helper(void) { return 1; }\n"
                                "int jl_add(const char *s) { core_job_count += helper(); return su_len(s); }\n"),
        "src/common/bad.c": "int jl_add(const char *s);\nint bad(void) { return jl_add(\"x\"); }\n",
    }
    objects = {
        "src/common/str_util.c": ["libjcommon.a.p/src_common_str_util.c.o", "tests/unit/t.p/.._.._src_common_str_util.c.o"],
        "src/core/job_list.c": ["joblet.p/src_core_job_list.c.o", "other.p/src_core_job_list.c.o"],
        "src/common/bad.c": ["libjcommon.a.p/src_common_bad.c.o"],
    }
    for path, text in sources.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
        for obj in objects[path]:
            (build / obj).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([CC, "-c", "-o", str(build / obj), str(tmp_path / path)], check=True)
    (build / "tests" / "unit" / "t.p" / "test_x.c.o").write_bytes(b"")  # not src/: never read
    (build / "meson-info").mkdir()
    (build / "meson-info" / "meson-info.json").write_text(json.dumps({"directories": {"source": str(tmp_path)}}))
    assert src.is_dir()

    found = layering.find_objects(str(build), str(tmp_path))
    assert sorted(found) == sorted(sources)
    assert "/tests/" not in found["src/common/str_util.c"]
    table = layering.read_symbols(found)
    assert table["src/core/job_list.c"][0] == {"jl_add", "core_job_count"}
    assert "su_len" in table["src/core/job_list.c"][1]

    res = subprocess.run([sys.executable, SCRIPT, str(build)], capture_output=True, text=True)
    assert res.returncode == 1, res.stdout + res.stderr
    assert ("layer violation: src/common/bad.c uses jl_add defined in src/core/job_list.c "
            "(upward call: common is below core)") in res.stdout
    assert "    -> src/common/str_util.c: su_len" in res.stdout
    assert "helper" not in res.stdout
    assert res.stdout.splitlines()[-1] == "layering: 3 files, 2 arrows, no cycles, 1 layer violations"

    # bad.c taken out of the build: its object is still there, but compile_commands.json no
    # longer lists it
    outputs = [o for path, objs in objects.items() if path != "src/common/bad.c" for o in objs]
    (build / "compile_commands.json").write_text(json.dumps(
        [{"directory": str(build), "file": "x.c", "output": o} for o in outputs]))
    assert sorted(layering.find_objects(str(build), str(tmp_path))) == ["src/common/str_util.c", "src/core/job_list.c"]
    res = subprocess.run([sys.executable, SCRIPT, str(build)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "layering: 2 files, 1 arrows, no cycles, no upward calls\n"


def test_no_build_dir(tmp_path):
    res = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "nothing")], capture_output=True, text=True)
    assert res.returncode == 2 and "no build directory" in res.stderr


@pytest.mark.skipif(not os.path.isdir(os.path.join(BUILD, "libjcommon.a.p")), reason=f"{BUILD} is not built")
def test_real_build_has_clean_layers():
    """The check itself, on the build under test: no cycles, no upward calls in src/."""
    res = subprocess.run([sys.executable, SCRIPT, BUILD], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("layering: ") and "no upward calls" in res.stdout
    assert ", no cycles, no upward calls" in res.stdout.splitlines()[-1]


# -- the #include lines and the tests' objects (issue 27 item 9) ---------------------------

def check_all(table=None, includes=None, functions=None, test_uses=None, sources=None):
    r = layering.analyze(table or {}, includes=includes, functions=functions, test_uses=test_uses, sources=sources)
    rc, lines = layering.report(r)
    return r, rc, "\n".join(lines)


def test_include_cycle_between_headers():
    includes = {
        "src/core/a.h": [(3, "b.h", "src/core/b.h"), (4, "<stdio.h>", None)],
        "src/core/b.h": [(5, "c.h", "src/core/c.h")],
        "src/core/c.h": [(2, "a.h", "src/core/a.h")],
        "src/core/a.c": [(1, "a.h", "src/core/a.h")],
    }
    r, rc, out = check_all(includes=includes)
    assert rc == 1 and not r.violations and not r.inc_violations
    (comp, cycles), = r.inc_cycles
    assert comp == ["src/core/a.h", "src/core/b.h", "src/core/c.h"]
    assert "include cycle: 3 files include each other: src/core/a.h, src/core/b.h, src/core/c.h" in out
    assert "src/core/a.h -> src/core/b.h -> src/core/c.h -> src/core/a.h" in out
    assert "src/core/c.h:2 includes src/core/a.h" in out
    assert out.splitlines()[-1].endswith("; includes: 5 read, 1 include cycles, none upward")
    # without the arrow that closes it: clean
    includes["src/core/c.h"] = []
    r, rc, out = check_all(includes=includes)
    assert rc == 0 and not r.inc_cycles
    assert out == "layering: 0 files, 0 arrows, no cycles, no upward calls; includes: 4 read, no cycles, none upward"


def test_store_including_core_is_an_upward_include():
    includes = {
        "src/store/db.h": [(9, "../core/job.h", "src/core/job.h"), (10, "../common/err.h", "src/common/err.h")],
        "src/core/job.h": [(11, "../common/jobstate.h", "src/common/jobstate.h")],
        "src/common/err.h": [], "src/common/jobstate.h": [],
        "src/sim/sim.c": [(4, "../core/state.h", "src/core/state.h")],
        "src/core/state.h": [(14, "../store/db.h", "src/store/db.h")],
    }
    r, rc, out = check_all(includes=includes)
    assert rc == 1 and not r.inc_cycles
    assert r.inc_violations == [
        ("src/sim/sim.c", 4, "src/core/state.h", "sim may use only common, sched, gpu"),
        ("src/store/db.h", 9, "src/core/job.h", "upward include: store is below core"),
    ]
    assert ("include violation: src/store/db.h:9 includes src/core/job.h (upward include: store is below core)"
            in out)
    assert "2 include violations" in out.splitlines()[-1]


def test_microhttpd_outside_the_api():
    includes = {
        "src/api/http.h": [(8, "microhttpd.h", None)],
        "src/api/routes.c": [(3, "microhttpd.h", None)],
        "src/core/jobs.c": [(12, "microhttpd.h", None)],
        "src/store/db.h": [(2, "../api/microhttpd.h", None)],
    }
    r, rc, out = check_all(includes=includes)
    assert rc == 1
    assert r.mhd == [("src/core/jobs.c", 12), ("src/store/db.h", 2)]
    assert "http outside the API: src/core/jobs.c:12 includes microhttpd.h (only src/api/ may)" in out
    assert "2 microhttpd.h outside api/" in out.splitlines()[-1]


def test_function_only_tests_call():
    table = {
        "src/common/parse.c": ({"parse_u64", "parse_percent", "parse_self", "parse_ptr"}, set()),
        "src/core/config.c": ({"config_load"}, {"parse_u64"}),
        "src/daemon/main.c": ({"main"}, {"config_load"}),
    }
    functions = {"src/common/parse.c": {"parse_u64", "parse_percent", "parse_self", "parse_ptr"},
                 "src/core/config.c": {"config_load"}}
    sources = {"src/common/parse.c": (
        "int parse_u64(void) { return 0; }\n"
        "/* parse_percent: see parse_u64 */ int parse_percent(void) { return 1; }\n"
        "int parse_self(void) { return 2; }\n"
        "int parse_ptr(void) { return 3; }\n"
        "static int helper(void) { return parse_self(); }\n"
        "static int (*const table[])(void) = {parse_ptr};\n"
        "const char *s = \"parse_percent\";\n")}
    test_uses = {"tests/unit/test_parse.p/test_parse.c.o": {"parse_u64", "parse_percent", "parse_self", "parse_ptr"},
                 "tests/unit/test_config.p/test_config.c.o": {"config_load", "parse_percent"}}
    r, rc, out = check_all(table, functions=functions, test_uses=test_uses, sources=sources)
    assert rc == 1
    # called by config.c, by its own file, its address taken by its own file: running code
    assert r.test_only == [("src/common/parse.c", "parse_percent",
                            ["tests/unit/test_config.p/test_config.c.o", "tests/unit/test_parse.p/test_parse.c.o"])]
    assert ("test-only function: parse_percent (src/common/parse.c) is called by no file of src/, only by "
            "tests/unit/test_config.p/test_config.c.o, tests/unit/test_parse.p/test_parse.c.o") in out
    assert out.splitlines()[-1].endswith(", 1 test-only functions")
    # a function nobody calls at all is not this rule's (no test calls it)
    del test_uses["tests/unit/test_config.p/test_config.c.o"]
    test_uses["tests/unit/test_parse.p/test_parse.c.o"].discard("parse_percent")
    assert check_all(table, functions=functions, test_uses=test_uses, sources=sources)[1] == 0


def test_reads_include_lines(tmp_path):
    """Quoted names resolved beside the file, then under src/ (as the tests include them);
    spaces in '# include'; angle names never files of src/; an unknown quoted name kept."""
    files = {
        "src/core/jobs.c": '#include "jobs.h"\n# include <microhttpd.h>\n  #include "../store/db.h"\n',
        "src/core/jobs.h": '#ifndef X\n#include "store/db.h"\n#include "generated.h"\n#endif\n',
        "src/store/db.h": "#include <jansson.h>\n/* #include \"not/this.h\" */\n",
        "src/common/notes.txt": '#include "jobs.h"\n',
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    incs = layering.read_includes(str(tmp_path))
    assert incs == {
        "src/core/jobs.c": [(1, "jobs.h", "src/core/jobs.h"), (2, "microhttpd.h", None),
                            (3, "../store/db.h", "src/store/db.h")],
        "src/core/jobs.h": [(2, "store/db.h", "src/store/db.h"), (3, "generated.h", None)],
        "src/store/db.h": [(1, "jansson.h", None)],
    }


@pytest.mark.skipif(not (CC and shutil.which("nm")), reason="needs a C compiler and nm")
def test_test_only_function_from_compiled_objects(tmp_path):
    """Objects compiled here, as meson names them: a test's object (not src/) calls a function
    that no object of src/ uses: the script fails naming it; once a file of src/ calls it,
    it passes. A copy of a src/ file compiled into a test is not a test's caller."""
    build = tmp_path / "build"
    def compile_to(src_path, text, obj):
        (tmp_path / src_path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / src_path).write_text(text)
        (build / obj).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([CC, "-c", "-o", str(build / obj), str(tmp_path / src_path)], check=True)
    compile_to("src/common/calc.c", "int calc_used(void) { return 1; }\nint calc_tested(void) { return 2; }\n",
               "libjcommon.a.p/src_common_calc.c.o")
    compile_to("src/core/user.c", "int calc_used(void);\nint user(void) { return calc_used(); }\n",
               "joblet.p/src_core_user.c.o")
    compile_to("tests/unit/test_calc.c", "int calc_tested(void);\nint calc_used(void);\n"
               "int main(void) { return calc_tested() + calc_used(); }\n", "tests/unit/test_calc.p/test_calc.c.o")
    # src/core/user.c compiled into a test: its uses are src/'s, not a test's
    compile_to("src/core/user.c", "int calc_used(void);\nint user(void) { return calc_used(); }\n",
               "tests/unit/test_calc.p/.._.._src_core_user.c.o")
    (build / "meson-info").mkdir()
    (build / "meson-info" / "meson-info.json").write_text(json.dumps({"directories": {"source": str(tmp_path)}}))
    assert layering.find_test_objects(str(build), str(tmp_path)) == [str(build / "tests/unit/test_calc.p/test_calc.c.o")]

    def run():
        import contextlib
        import io
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = layering.main([str(build)])
        return rc, buf.getvalue()
    rc, out = run()
    assert rc == 1, out
    assert ("test-only function: calc_tested (src/common/calc.c) is called by no file of src/, only by "
            "tests/unit/test_calc.p/test_calc.c.o") in out
    assert "calc_used" not in out.split("test-only function:")[1]
    compile_to("src/core/user.c", "int calc_used(void);\nint calc_tested(void);\n"
               "int user(void) { return calc_used() + calc_tested(); }\n", "joblet.p/src_core_user.c.o")
    rc, out = run()
    assert rc == 0, out


# -- planted in a copy of the real tree ----------------------------------------------------

REAL_BUILT = os.path.isdir(os.path.join(BUILD, "libjcommon.a.p"))


@pytest.fixture
def tree(tmp_path):
    """A copy of this checkout's src/ to plant violations in; the real build's objects."""
    shutil.copytree(os.path.join(layering.source_root(BUILD), "src"), tmp_path / "src")
    return tmp_path


def plant(tree, path, after, line):
    """Puts `line` after the first line of `path` that starts with `after`."""
    p = tree / path
    lines = p.read_text().splitlines(keepends=True)
    at = next(i for i, text in enumerate(lines) if text.startswith(after))
    lines.insert(at + 1, line + "\n")
    p.write_text("".join(lines))
    return at + 2


def run_on(tree):
    res = subprocess.run([sys.executable, SCRIPT, "--source", str(tree), BUILD], capture_output=True, text=True)
    return res.returncode, res.stdout + res.stderr


@pytest.mark.skipif(not REAL_BUILT, reason=f"{BUILD} is not built")
def test_planted_copy_unchanged_passes(tree):
    rc, out = run_on(tree)
    assert rc == 0, out
    assert "; includes: " in out and ", no cycles, none upward" in out


@pytest.mark.skipif(not REAL_BUILT, reason=f"{BUILD} is not built")
def test_planted_include_cycle_fails(tree):
    # core/jobs.h includes core/job.h: job.h including jobs.h closes a circle (the include
    # guards let it compile; the check does not)
    line = plant(tree, "src/core/job.h", '#include "loop.h"', '#include "jobs.h"')
    rc, out = run_on(tree)
    assert rc == 1, out
    assert "include cycle: 2 files include each other: src/core/job.h, src/core/jobs.h" in out
    assert f"src/core/job.h:{line} includes src/core/jobs.h" in out


@pytest.mark.skipif(not REAL_BUILT, reason=f"{BUILD} is not built")
def test_planted_store_including_core_fails(tree):
    line = plant(tree, "src/store/db.h", '#include "../common/err.h"', '#include "../core/job.h"')
    rc, out = run_on(tree)
    assert rc == 1, out
    assert (f"include violation: src/store/db.h:{line} includes src/core/job.h "
            "(upward include: store is below core)") in out
    assert "include cycle" not in out


@pytest.mark.skipif(not REAL_BUILT, reason=f"{BUILD} is not built")
def test_planted_microhttpd_in_core_fails(tree):
    line = plant(tree, "src/core/jobs.c", '#include "jobs.h"', "#include <microhttpd.h>")
    rc, out = run_on(tree)
    assert rc == 1, out
    assert f"http outside the API: src/core/jobs.c:{line} includes microhttpd.h (only src/api/ may)" in out
    assert out.count("http outside the API:") == 1


@pytest.mark.skipif(not REAL_BUILT, reason=f"{BUILD} is not built")
def test_real_build_has_no_test_only_function(capsys):
    """The real build: no function of src/ is called only by tests (issue 27 item 7 removed
    the last ones)."""
    rc = layering.main([BUILD])
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("test-only function: ")], out
    assert rc == 0, out
