"""docs/BENCHMARKS.md's charts, drawn by scripts/benchmarks/bench from its own results (issue 27):
from a fixed small results file, each chart holds the figures it is drawn from, only the charts
whose figures are there are drawn, the same results draw the same bytes, `bench --charts` does
it from the command line, and without matplotlib the bench says so and draws nothing (the run
itself needs none of it)."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from support import REPO, scaled

pytestmark = pytest.mark.no_c_binary

BENCHMARKS = REPO / "scripts" / "benchmarks"
BENCH = BENCHMARKS / "bench"
sys.path.insert(0, str(BENCHMARKS))
import bench_charts  # noqa: E402  (scripts/benchmarks is no package)

needs_matplotlib = pytest.mark.skipif(
    bench_charts.missing() is not None,
    reason="python3-matplotlib is missing (scripts/setup/install-deps test installs it)")
SVG = "{http://www.w3.org/2000/svg}"


def row(label, unit, mine, ref, higher_is_better=True):
    return {"label": label, "unit": unit, "musicd": mine, "reference": ref, "ratio": mine / ref,
            "target": None, "higher_is_better": higher_is_better, "verdict": "-", "note": ""}


def slow_run(delay_us, listeners, figures):
    return {kind: {"delay_us": delay_us, "listeners": listeners, "p50_ms": p99 / 4,
                   "p99_ms": p99, "answered": 700, "mbps": mbps}
            for kind, (p99, mbps) in figures.items()}


# A bench's results as it writes them (format 1), with a row or a run of each chart's workloads
# and figures no chart draws (d).
RESULTS = {
    "format": 1, "date": "2026-12-05 12:00 UTC", "commit": "abc1234", "status": 0,
    "rows": [
        row("a1 full 4 MB, httperf", "req/s", 201.5, 230.0),
        row("b random 64 KiB ranges", "req/s", 31000.0, 37000.0),
        row("c2 warm starts vs nginx-static", "req/s", 45000.0, 47000.0),
        row("d syscalls per cached range request", "calls", 5.1, 4.1, False),
        row("ttfb p50, 1000 listeners", "us", 220.0, 138.0, False),
        row("ttfb p99, 1000 listeners", "us", 852.0, 581.0, False),
        row("ttfb p50, idle", "us", 149.0, 157.0, False),
        row("ttfb p99, idle", "us", 347.0, 261.0, False),
        row("e RSS per listener", "KiB", 4.3, 9.6, False),
        row("crowd PSS per listener", "KiB", 4.4, 9.6, False),
    ],
    "figures": {
        "slow": [slow_run(10000, 24, {"musicd": (12.5, 490), "nginx": (3166, 44),
                                      "nginx-aio": (7.3, 477)})],
        "slow_hung": {"musicd": 20, "nginx-aio": 20, "nginx-aio-nofc": 0},
        "slow_hung_fetches": 20},
}


def texts(svg_path):
    """Every piece of text an SVG chart shows."""
    root = ET.parse(svg_path).getroot()
    assert root.tag == f"{SVG}svg", svg_path
    return [t.text or "" for t in root.iter(f"{SVG}text")]


@needs_matplotlib
def test_each_chart_holds_the_figures_it_is_drawn_from(tmp_path):
    written = bench_charts.draw(RESULTS, str(tmp_path))
    assert sorted(os.path.basename(p) for p in written) == [
        "memory.svg", "slow-storage.svg", "throughput.svg", "ttfb.svg"]

    throughput = " ".join(texts(tmp_path / "throughput.svg"))
    assert "Throughput against nginx" in throughput
    assert "musicd abc1234, 2026-12-05 12:00 UTC" in throughput
    assert f"{201.5 / 230.0:.2f}  (202 req/s vs 230 req/s)" in throughput
    assert f"{31000 / 37000:.2f}  (31,000 req/s vs 37,000 req/s)" in throughput
    assert "random 64 KiB ranges" in throughput
    assert "syscalls" not in throughput and "5.1" not in throughput  # d is no throughput

    ttfb = texts(tmp_path / "ttfb.svg")
    for figure in ("149", "157", "347", "261", "220", "138", "852", "581"):
        assert figure in ttfb, figure
    assert "1000 listeners" in " ".join(ttfb)

    memory = texts(tmp_path / "memory.svg")
    assert {"4.3", "9.6", "4.4"} <= set(memory), memory

    slow = " ".join(texts(tmp_path / "slow-storage.svg"))
    for figure in ("12.5", "3,166", "7.3", "490", "44", "477", "10 ms a read,",
                   "nginx aio threads without open_file_cache: 0 of 20", "musicd: 20 of 20"):
        assert figure in slow, figure


@needs_matplotlib
def test_only_the_charts_whose_figures_are_there_are_drawn(tmp_path):
    only_d = dict(RESULTS, rows=RESULTS["rows"][3:4], figures={})
    assert bench_charts.draw(only_d, str(tmp_path / "none")) == []
    only_ttfb = dict(RESULTS, rows=RESULTS["rows"][4:8], figures={})
    assert [os.path.basename(p) for p in bench_charts.draw(only_ttfb, str(tmp_path))] == \
        ["ttfb.svg"]


@needs_matplotlib
def test_the_same_results_draw_the_same_bytes(tmp_path):
    first = {os.path.basename(p): open(p, "rb").read()
             for p in bench_charts.draw(RESULTS, str(tmp_path / "1"))}
    second = {os.path.basename(p): open(p, "rb").read()
              for p in bench_charts.draw(RESULTS, str(tmp_path / "2"))}
    assert first == second
    assert all(b"<dc:date>" not in svg for svg in first.values())


@needs_matplotlib
def test_bench_charts_draws_from_a_results_file(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RESULTS))
    run = subprocess.run([str(BENCH), "--charts", str(results), str(tmp_path / "charts")],
                         capture_output=True, text=True, timeout=scaled(120))
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(tmp_path / "charts")) == [
        "memory.svg", "slow-storage.svg", "throughput.svg", "ttfb.svg"]
    assert "chart: " in run.stderr


def test_bench_charts_refuses_what_is_not_a_bench_s_results(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"rows": []}))
    run = subprocess.run([str(BENCH), "--charts", str(other), str(tmp_path / "charts")],
                         capture_output=True, text=True, timeout=scaled(60))
    assert run.returncode == 2, run
    assert "not results of scripts/benchmarks/bench" in run.stderr
    assert not (tmp_path / "charts").exists()


def test_without_matplotlib_the_bench_says_so_and_draws_nothing(tmp_path):
    """A matplotlib that cannot be imported (a module of that name that fails first on the
    path) stands for a machine without python3-matplotlib."""
    shadow = tmp_path / "shadow" / "matplotlib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    results = tmp_path / "results.json"
    results.write_text(json.dumps(RESULTS))
    run = subprocess.run([str(BENCH), "--charts", str(results), str(tmp_path / "charts")],
                         capture_output=True, text=True, timeout=scaled(60),
                         env=dict(os.environ, PYTHONPATH=str(shadow.parent)))
    assert run.returncode == 2, run
    assert "charts not drawn: python3-matplotlib is missing" in run.stderr
    assert not (tmp_path / "charts").exists()
