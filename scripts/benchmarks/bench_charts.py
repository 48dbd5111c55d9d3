"""The charts of docs/BENCHMARKS.md, drawn from the results scripts/benchmarks/bench writes (its
JSON file): what people compare, musicd against nginx.

  throughput.svg     each throughput workload (a1, a2, b, c2, g1): musicd's rate over nginx's
  ttfb.svg           time to first byte of cached track starts, idle and under slow listeners
  memory.svg         resident memory per listener: e's slow listeners, the crowd's 50,000
  slow-storage.svg   slow storage: the cached probe's p99 and the cold MB/s, musicd, nginx and
                     nginx with aio threads, at each read delay and listener count; the hung track

Each chart is drawn only when the results hold its figures (a run of some sections draws some
charts). Drawing needs matplotlib (Debian's python3-matplotlib); everything else here is the
standard library, so the bench imports this module whether matplotlib is there or not
(missing() says). The SVGs carry no date and fixed ids: the same results draw the same bytes.
"""

import json
import math
import os

MUSICD_COLOR, NGINX_COLOR, AIO_COLOR = "#1f77b4", "#9e9e9e", "#ff7f0e"

# Row label prefixes (the bench's summary rows) of each chart, in order, with the name shown.
THROUGHPUT = [("a1 ", "whole 4 MB track,\nhttperf (users' command)"),
              ("a2 ", "whole 4 MB track,\nwrk 32 connections"),
              ("b ", "random 64 KiB ranges"),
              ("c2 ", "track starts (bytes=0-1),\ncached"),
              ("g1 full 4 MB, GridFS warm spool", "GridFS track,\nwarm spool"),
              ("g1 full 4 MB, GridFS vs nginx", "GridFS track,\nno spool (MB/s)")]
# (None: the row's own label, "ttfb " cut: its listener count is the run's)
TTFB = [("ttfb p50, idle", "p50, idle"), ("ttfb p99, idle", "p99, idle"),
        ("ttfb p50, ", None), ("ttfb p99, ", None)]
MEMORY = [("e RSS per listener", "e: slow listeners\n(RSS)"),
          ("crowd PSS per listener", "crowd: listeners\nall at once (PSS)"),
          ("crowd RSS per listener", "crowd: listeners\nall at once (RSS)")]
# The servers of the slow section, as its results name them.
SLOW_SERVERS = {"musicd": "musicd", "nginx": "nginx (sendfile)", "nginx-aio": "nginx aio threads",
                "nginx-aio-nofc": "nginx aio threads without open_file_cache"}


def missing():
    """Why charts cannot be drawn here (None when they can)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "python3-matplotlib is missing (scripts/setup/install-deps test installs it)"
    return None


def load(path):
    with open(path) as f:
        results = json.load(f)
    if results.get("format") != 1 or "rows" not in results:
        raise ValueError(f"{path}: not results of scripts/benchmarks/bench (format 1)")
    return results


def find_row(results, prefix):
    """The first summary row whose label starts with prefix, or None."""
    for row in results["rows"]:
        if row["label"].startswith(prefix):
            return row
    return None


def provenance(results, chart):
    """The line under a chart's title: which musicd, when (results may give a chart its own:
    "provenance": {"ttfb.svg": "..."})."""
    own = results.get("provenance", {}).get(chart)
    return own or f"musicd {results.get('commit', '?')}, {results.get('date', '?')}"


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.hashsalt": "musicd-bench", "svg.fonttype": "none",
                         "font.size": 9, "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _save(plt, fig, outdir, name):
    path = os.path.join(outdir, name)
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return path


def _title(ax, title, results, chart, pad=18):
    ax.set_title(title, loc="left", fontsize=11, fontweight="bold", pad=pad)
    ax.text(0, 1.01, provenance(results, chart), transform=ax.transAxes, fontsize=7.5,
            color="#555555", va="bottom")


def _figure(value):
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def _number(value, unit):
    return f"{_figure(value)} {unit}"


def throughput(plt, results, outdir):
    bars = [(name, find_row(results, prefix)) for prefix, name in THROUGHPUT]
    bars = [(name, row) for name, row in bars if row]
    if not bars:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 0.62 * len(bars) + 1.3))
    names = [name for name, _ in bars][::-1]
    ratios = [row["ratio"] for _, row in bars][::-1]
    rows = [row for _, row in bars][::-1]
    ax.barh(names, ratios, color=MUSICD_COLOR, height=0.6)
    ax.axvline(1.0, color=NGINX_COLOR, linewidth=2)
    ax.text(1.0, 0.005, " nginx = 1", color="#555555", fontsize=8, ha="left", va="bottom",
            transform=ax.get_xaxis_transform())
    for y, (ratio, row) in enumerate(zip(ratios, rows)):
        ax.text(ratio + 0.02, y, f"{ratio:.2f}  ({_number(row['musicd'], row['unit'])} vs "
                f"{_number(row['reference'], row['unit'])})", va="center", fontsize=8)
    ax.set_xlim(0, max(1.2, max(ratios) * 1.6))
    ax.set_xlabel("musicd's throughput over nginx's, serving the same file (higher is better)")
    _title(ax, "Throughput against nginx", results, "throughput.svg")
    return _save(plt, fig, outdir, "throughput.svg")


def _log_axis(axis, values):
    """A log scale read as plain numbers, its bars from the power of ten under the smallest."""
    from matplotlib.ticker import FuncFormatter
    axis.set_yscale("log")
    low = min((v for v in values if v > 0), default=1)
    axis.set_ylim(bottom=10 ** math.floor(math.log10(low)))
    axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))


def _paired(plt, results, outdir, spec, name, title, xlabel, unit_label, log=False):
    """musicd's figure beside the reference's for each row of spec that the results hold."""
    pairs = [(label, find_row(results, prefix)) for prefix, label in spec]
    pairs = [(label or row["label"].split(" ", 1)[1].replace(", ", ",\n", 1), row)
             for label, row in pairs if row]
    if not pairs:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    x = range(len(pairs))
    width = 0.38
    mine = [row["musicd"] for _, row in pairs]
    ref = [row["reference"] for _, row in pairs]
    ax.bar([i - width / 2 for i in x], mine, width, color=MUSICD_COLOR, label="musicd")
    ax.bar([i + width / 2 for i in x], ref, width, color=NGINX_COLOR, label="nginx")
    for i, (m, r) in enumerate(zip(mine, ref)):
        ax.text(i - width / 2, m, _figure(m), ha="center", va="bottom", fontsize=7.5)
        ax.text(i + width / 2, r, _figure(r), ha="center", va="bottom", fontsize=7.5)
    ax.set_xticks(list(x))
    ax.set_xticklabels([label for label, _ in pairs], fontsize=8)
    ax.set_ylabel(unit_label)
    if log:
        _log_axis(ax, mine + ref)
    ax.set_xlabel(xlabel)
    ax.legend(frameon=False, fontsize=8)
    _title(ax, title, results, name)
    return _save(plt, fig, outdir, name)


def ttfb(plt, results, outdir):
    return _paired(plt, results, outdir, TTFB, "ttfb.svg", "Time to first byte under load",
                   "cached track starts (Range: bytes=0-1, a new connection each; lower is "
                   "better)", "microseconds (log scale)", log=True)


def memory(plt, results, outdir):
    return _paired(plt, results, outdir, MEMORY, "memory.svg", "Memory per listener",
                   "resident memory over the idle server, per connection (lower is better)",
                   "KiB")


def slow_storage(plt, results, outdir):
    runs = results.get("figures", {}).get("slow") or []
    if not runs:
        return None
    kinds = [(kind, SLOW_SERVERS[kind], color) for kind, color in
             (("musicd", MUSICD_COLOR), ("nginx", NGINX_COLOR), ("nginx-aio", AIO_COLOR))]
    labels = []
    for run in runs:
        any_run = next(iter(run.values()))
        labels.append(f"{any_run['delay_us'] / 1000:g} ms a read,\n{any_run['listeners']} "
                      f"listeners")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 6.2), sharex=True)
    width = 0.26
    for k, (kind, name, color) in enumerate(kinds):
        xs = [i + (k - 1) * width for i in range(len(runs))]
        p99 = [run[kind]["p99_ms"] if kind in run else 0 for run in runs]
        mbps = [run[kind]["mbps"] if kind in run else 0 for run in runs]
        top.bar(xs, p99, width, color=color, label=name)
        bottom.bar(xs, mbps, width, color=color, label=name)
        for x, v in zip(xs, p99):
            top.text(x, v, _figure(v), ha="center", va="bottom", fontsize=7)
        for x, v in zip(xs, mbps):
            bottom.text(x, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=7)
    _log_axis(top, [run[kind]["p99_ms"] for run in runs for kind in run])
    top.set_ylabel("cached probe p99, ms\n(log scale; lower is better)")
    bottom.set_ylabel("cold tracks, MB/s\n(higher is better)")
    bottom.set_xticks(list(range(len(runs))))
    bottom.set_xticklabels(labels, fontsize=8)
    top.legend(frameon=False, fontsize=8, ncol=3, loc="lower left", bbox_to_anchor=(0, 1.08))
    hung = results.get("figures", {}).get("slow_hung")
    if hung:
        fetches = results.get("figures", {}).get("slow_hung_fetches", 20)
        bottom.set_xlabel("a hung track (4 listeners on it), a cached track's fetches answered "
                          "within 2 s:\n" + "\n".join(
                              f"{SLOW_SERVERS.get(k, k)}: {v} of {fetches}"
                              for k, v in hung.items()), labelpad=10)
    _title(top, "Slow storage: a cached track while cold ones are read", results,
           "slow-storage.svg", pad=34)
    return _save(plt, fig, outdir, "slow-storage.svg")


CHARTS = (throughput, ttfb, memory, slow_storage)


def draw(results, outdir):
    """Draws every chart the results hold into outdir; returns the files written."""
    plt = _pyplot()
    os.makedirs(outdir, exist_ok=True)
    return [path for chart in CHARTS if (path := chart(plt, results, outdir))]
