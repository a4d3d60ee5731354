#!/usr/bin/python3
"""Turns ember runs into a report: plots and a table comparing them.

Usage:
  tools/report/report.py [LABEL=]RUN... --out DIR [--eval [LABEL=]FILE]...
                  [--bench FILE]... [--format png|svg] [--title TEXT] [--overwrite]

RUN is a graph directory that `ember train` wrote GRAPH/metrics.jsonl into,
or such a metrics file itself (the lines of `ember train --json` read the
same). LABEL names the run in legends and the table; by default it is the
directory's name. --eval adds the output of `ember eval --json` to the run
called LABEL, or without a label to the runs in order (the first unlabelled
--eval to the first run, ...); an eval whose label names no run becomes a run
of its own. --bench adds the JSON that tools/bench/{import,train,batching}.sh
write with --json-out FILE.

DIR receives, for runs, evals and benches that have the data:
  loss.EXT          training loss per epoch, one line per run
  valid_mrr.EXT     filtered validation MRR per epoch with its 95 % band
  throughput.EXT    edges/s per epoch
  batch_spread.EXT  batch-time cv (and batch non-zeros cv where non-zero)
                    and the trainers' idle share per epoch
  overview.EXT      the four above in one figure
  eval.EXT          filtered MRR, Hits@1, Hits@10 of each run's evals, ±95 %
  eval_relations.EXT  filtered MRR per relation (evals with --by-relation)
  bench-NAME.EXT    each bench file's figures as bars, one panel a figure
  peak_memory.EXT   peak RSS of every bench run that measured it
  index.md          the table of runs side by side, and the images
  report.json       manifest: for each image its file, pixel size and, per
                    panel, the series actually drawn (label, kind, points)

Images have fixed pixel sizes (figure inches x 100 dpi, no tight cropping):
800x480 for one-panel figures, 1000x480 for two panels, 1200x800 for the
overview; bench figures hold one panel per figure in rows of at most four,
each panel 300 px wide and 400 px high; eval_relations is 480 px high and
60 px wide per relation and eval, rounded up to whole 100s, 800 at least.

DIR must not exist, be empty, or hold a report this script wrote (its
report.json); a report is replaced only with --overwrite, and a directory of
anything else is refused, as every ember command treats its outputs.

Exit status: 0 on success, 1 on bad input (a message names the file and
line) or a refused DIR, 2 on bad usage. Needs python3-matplotlib (tools/install-deps.sh).
"""

import argparse
import json
import math
import os
import sys

DPI = 100
ONE_PANEL = (8.0, 4.8)
TWO_PANELS = (10.0, 4.8)
OVERVIEW = (12.0, 8.0)
BENCH_PANEL = (3.0, 4.0)
BENCH_COLUMNS = 4


class InputError(Exception):
    """Bad input: the message names the file (and line) at fault."""


def import_pyplot():
    try:
        import matplotlib
    except ImportError:
        sys.exit("report.py: needs matplotlib (apt-get install python3-matplotlib, "
                 "or tools/install-deps.sh); python is " + sys.executable)
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "ember-report"  # stable SVG ids
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as <text>, not glyph paths
    import matplotlib.pyplot as plt
    return plt


# ---------------------------------------------------------------- inputs


def split_label(arg):
    """'LABEL=PATH' -> (LABEL, PATH); a bare PATH (or one that exists as
    written, '=' and all) -> (None, PATH)."""
    if "=" in arg and not os.path.exists(arg):
        label, path = arg.split("=", 1)
        if label and "/" not in label:
            return label, path
    return None, arg


def read_metrics(path):
    """Epoch records of a metrics.jsonl (or `ember train --json`) file.

    A graph trained again from scratch appends epochs that start over at 1;
    only the last such segment is kept, and `restarts` counts the others."""
    records = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    raise InputError("%s:%d: not JSON: %s" % (path, n, e))
                if not isinstance(r, dict) or "epoch" not in r:
                    raise InputError("%s:%d: an epoch record needs an \"epoch\" key" % (path, n))
                records.append(r)
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror))
    if not records:
        raise InputError("%s: no epochs (train the graph first)" % path)
    restarts = 0
    start = 0
    for i in range(1, len(records)):
        if records[i]["epoch"] <= records[i - 1]["epoch"]:
            start = i
            restarts += 1
    return records[start:], restarts


def read_settings(graph_dir):
    """The model and trainer settings the graph's checkpoint records in its
    MANIFEST.json (docs/storage-format.md), as 'key value' text; '' when the
    file or the keys are absent."""
    try:
        with open(os.path.join(graph_dir, "MANIFEST.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return ""
    state = manifest.get("training", {}).get("state", {})
    model, trainer = state.get("model", {}), state.get("trainer", {})
    parts = []
    for key in ("comparator", "operator", "loss", "dim", "featurized"):
        if key in model and model[key] not in ("none", "off"):
            parts.append("%s %s" % (key, model[key]))
    if "lr" in trainer:
        parts.append("lr %.3g" % trainer["lr"])
    if "bucket_order" in trainer:
        parts.append("order %s" % trainer["bucket_order"])
    if "num_partitions" in manifest:
        parts.append("%d partitions" % manifest["num_partitions"])
    return ", ".join(parts)


def read_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror))
    except ValueError as e:
        raise InputError("%s: not a JSON %s: %s" % (path, what, e))


def load_runs(args):
    runs = []
    for arg in args.runs:
        label, path = split_label(arg)
        graph_dir = path if os.path.isdir(path) else None
        metrics = os.path.join(path, "metrics.jsonl") if graph_dir else path
        if graph_dir and not os.path.exists(metrics):
            raise InputError("%s: not found (train the graph first)" % metrics)
        epochs, restarts = read_metrics(metrics)
        if label is None:
            base = os.path.basename(os.path.normpath(graph_dir or os.path.dirname(path) or "."))
            label = base if graph_dir else os.path.splitext(os.path.basename(path))[0]
        runs.append({"label": label, "source": metrics, "epochs": epochs,
                     "restarts": restarts,
                     "settings": read_settings(graph_dir) if graph_dir else "",
                     "evals": []})
    unique_labels(runs)
    by_label = {r["label"]: r for r in runs}
    next_unlabelled = 0
    for arg in args.eval:
        label, path = split_label(arg)
        j = read_json(path, "eval result")
        if not isinstance(j, dict) or "filtered" not in j:
            raise InputError("%s: not `ember eval --json` output (no \"filtered\")" % path)
        j["_file"] = path
        if label is None and next_unlabelled < len(runs):
            runs[next_unlabelled]["evals"].append(j)
            next_unlabelled += 1
            continue
        label = label or os.path.splitext(os.path.basename(path))[0]
        if label not in by_label:
            by_label[label] = {"label": label, "source": path, "epochs": [], "restarts": 0,
                               "settings": "", "evals": []}
            runs.append(by_label[label])
        by_label[label]["evals"].append(j)
    benches = []
    for path in args.bench:
        j = read_json(path, "bench result")
        if not isinstance(j, dict) or not isinstance(j.get("runs"), list):
            raise InputError("%s: not a tools/bench JSON file (no \"runs\" list)" % path)
        for i, r in enumerate(j["runs"]):
            if not isinstance(r, dict) or "label" not in r:
                raise InputError("%s: runs[%d] has no \"label\"" % (path, i))
        j["_name"] = os.path.splitext(os.path.basename(path))[0]
        benches.append(j)
    return runs, benches


def unique_labels(runs):
    seen = {}
    for r in runs:
        n = seen.get(r["label"], 0)
        seen[r["label"]] = n + 1
        if n:
            r["label"] = "%s#%d" % (r["label"], n + 1)


# ----------------------------------------------------------------- plots


def color(i):
    return "C%d" % (i % 10)


def series(r, key):
    """(epochs, values) of the run's records that carry a number at key."""
    xs, ys = [], []
    for e in r["epochs"]:
        v = e.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            xs.append(e["epoch"])
            ys.append(v)
    return xs, ys


def epoch_axis(ax, title, ylabel):
    from matplotlib.ticker import MaxNLocator
    ax.set_title(title)
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)


def note(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")


def draw_lines(ax, runs, key, scale=1.0, suffix="", skip_zero=False, **style):
    """One line per run whose records carry `key` (values times `scale`,
    labelled with the run's label and `suffix`; with skip_zero, not when all
    are 0). Returns how many lines it drew."""
    drawn = 0
    for i, r in enumerate(runs):
        xs, ys = series(r, key)
        if not xs or (skip_zero and not any(ys)):
            continue
        ax.plot(xs, [scale * y for y in ys], color=color(i), label=r["label"] + suffix,
                **{"marker": "o", **style})
        drawn += 1
    return drawn


def draw_loss(ax, runs):
    epoch_axis(ax, "training loss", "loss")
    return draw_lines(ax, runs, "loss")


def draw_valid(ax, runs):
    epoch_axis(ax, "validation MRR (filtered) ± 95 %", "MRR")
    drawn = draw_lines(ax, runs, "valid_mrr")
    for i, r in enumerate(runs):
        xs, ys = series(r, "valid_mrr")
        cx, ci = series(r, "valid_mrr_ci95")
        if xs and cx == xs:
            ax.fill_between(xs, [y - c for y, c in zip(ys, ci)], [y + c for y, c in zip(ys, ci)],
                            color=color(i), alpha=0.2, linewidth=0, label=r["label"] + " 95 %")
    return drawn


def draw_throughput(ax, runs):
    from matplotlib.ticker import EngFormatter
    epoch_axis(ax, "throughput", "edges/s")
    ax.yaxis.set_major_formatter(EngFormatter())
    drawn = draw_lines(ax, runs, "edges_per_second")
    ax.set_ylim(bottom=0)
    return drawn


def draw_cv(ax, runs):
    epoch_axis(ax, "batch-time spread (coefficient of variation)", "cv")
    drawn = draw_lines(ax, runs, "batch_seconds_cv", suffix=" time")
    # Featurized runs also record the spread of feature non-zeros per batch.
    draw_lines(ax, runs, "batch_nnz_cv", suffix=" non-zeros", skip_zero=True, marker="s",
               linestyle="--")
    ax.set_ylim(bottom=0)
    return drawn


def draw_idle(ax, runs):
    epoch_axis(ax, "trainers' idle share", "idle %")
    drawn = draw_lines(ax, runs, "idle_share", scale=100.0)
    ax.set_ylim(bottom=0)
    return drawn


def finish(ax, drawn, empty_text):
    if drawn:
        ax.legend(fontsize="small")
    else:
        note(ax, empty_text)


NO_VALID = "no validation MRR\n(ember train --eval-valid)"


class Report:
    def __init__(self, plt, out_dir, fmt):
        self.plt = plt
        self.out_dir = out_dir
        self.fmt = fmt
        self.plots = []

    def save(self, fig, name, title):
        """Writes fig as NAME.FMT and records what each panel drew."""
        file = "%s.%s" % (name, self.fmt)
        fig.savefig(os.path.join(self.out_dir, file), dpi=DPI,
                    metadata={"Software": None} if self.fmt == "png" else {"Date": None})
        width, height = fig.canvas.get_width_height()  # pixels, as rendered
        self.plots.append({"file": file, "title": title, "width": width, "height": height,
                           "panels": [describe_axes(ax) for ax in fig.axes]})
        self.plt.close(fig)

    def figure(self, size, rows=1, cols=1):
        fig, axes = self.plt.subplots(rows, cols, figsize=size, dpi=DPI, squeeze=False)
        return fig, [ax for row in axes for ax in row]


def describe_axes(ax):
    """The series an Axes actually holds: lines, bands (fill_between) and
    bar groups, each with its label and number of points."""
    from matplotlib.collections import PolyCollection
    out = []
    for line in ax.get_lines():
        if not line.get_label().startswith("_"):
            out.append({"label": line.get_label(), "kind": "line",
                        "points": len(line.get_xdata())})
    for c in ax.collections:
        if isinstance(c, PolyCollection) and not c.get_label().startswith("_"):
            # A band's polygon runs along its upper and lower edges; its
            # points are the distinct x positions it covers.
            xs = {float(x) for p in c.get_paths() for x in p.vertices[:, 0]}
            out.append({"label": c.get_label(), "kind": "band", "points": len(xs)})
    for c in ax.containers:
        if hasattr(c, "patches"):
            out.append({"label": c.get_label(), "kind": "bar", "points": len(c.patches)})
    return {"title": ax.get_title(), "series": out}


def plot_runs(rep, runs):
    trained = [r for r in runs if r["epochs"]]
    if not trained:
        return
    for name, title, draw in (("loss", "training loss", draw_loss),
                              ("valid_mrr", "validation MRR", draw_valid),
                              ("throughput", "edges/s", draw_throughput)):
        fig, (ax,) = rep.figure(ONE_PANEL)
        if draw(ax, runs) == 0:  # no figure for data that no run has
            rep.plt.close(fig)
            continue
        ax.legend(fontsize="small")
        fig.tight_layout()
        rep.save(fig, name, title)

    fig, (cv_ax, idle_ax) = rep.figure(TWO_PANELS, 1, 2)
    drawn_cv, drawn_idle = draw_cv(cv_ax, runs), draw_idle(idle_ax, runs)
    finish(cv_ax, drawn_cv, "no batch times")
    finish(idle_ax, drawn_idle, "no idle share")
    fig.tight_layout()
    rep.save(fig, "batch_spread", "batch-time spread and idle share")

    fig, axes = rep.figure(OVERVIEW, 2, 2)
    for ax, draw, empty in zip(axes, (draw_loss, draw_valid, draw_throughput, draw_cv),
                               ("no loss", NO_VALID, "no throughput", "no batch times")):
        finish(ax, draw(ax, runs), empty)
    fig.tight_layout()
    rep.save(fig, "overview", "overview")


EVAL_METRICS = (("mrr", "MRR"), ("hits@1", "Hits@1"), ("hits@10", "Hits@10"))


def eval_name(run, j):
    """'label' or 'label valid' when the eval is not of the test split."""
    split = j.get("split", "test")
    return run["label"] if split == "test" else "%s %s" % (run["label"], split)


def plot_evals(rep, runs):
    entries = [(i, r, j) for i, r in enumerate(runs) for j in r["evals"]]
    if not entries:
        return
    fig, (ax,) = rep.figure(ONE_PANEL)
    width = 0.8 / len(entries)
    for k, (i, r, j) in enumerate(entries):
        f = j["filtered"]
        xs = [m + (k - (len(entries) - 1) / 2) * width for m in range(len(EVAL_METRICS))]
        ys = [f.get(key, 0) for key, _ in EVAL_METRICS]
        err = [f.get(key + "_ci95", 0) for key, _ in EVAL_METRICS]
        ax.bar(xs, ys, width, yerr=err, capsize=3, color=color(i), label=eval_name(r, j),
               alpha=1.0 if j.get("split", "test") == "test" else 0.6)
    ax.set_xticks(range(len(EVAL_METRICS)), [name for _, name in EVAL_METRICS])
    ax.set_title("evaluation (filtered) ± 95 %")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    rep.save(fig, "eval", "evaluation")

    with_relations = [(i, r, j) for i, r, j in entries if j.get("relations")]
    if not with_relations:
        return
    names = []
    for _, _, j in with_relations:
        for rel in j["relations"]:
            if rel["relation"] not in names:
                names.append(rel["relation"])
    # Whole inches: a fractional width could render a pixel narrower.
    fig, (ax,) = rep.figure((max(8, math.ceil(0.6 * len(names) * len(with_relations))), 4.8))
    width = 0.8 / len(with_relations)
    for k, (i, r, j) in enumerate(with_relations):
        by_name = {rel["relation"]: rel for rel in j["relations"]}
        xs = [m + (k - (len(with_relations) - 1) / 2) * width for m in range(len(names))]
        ys = [by_name.get(n, {}).get("mrr", 0) for n in names]
        err = [by_name.get(n, {}).get("mrr_ci95", 0) for n in names]
        ax.bar(xs, ys, width, yerr=err, capsize=2, color=color(i), label=eval_name(r, j))
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_title("filtered MRR per relation ± 95 %")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    rep.save(fig, "eval_relations", "MRR per relation")


def numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def bench_metrics(bench):
    """The numeric keys of a bench's runs, in first-seen order."""
    keys = []
    for r in bench["runs"]:
        for k, v in r.items():
            if numeric(v) and k not in keys:
                keys.append(k)
    return keys


def plot_benches(rep, benches):
    peak = []
    for b in benches:
        keys = bench_metrics(b)
        for r in b["runs"]:
            if numeric(r.get("peak_rss_mib")):
                peak.append(("%s: %s" % (b["_name"], r["label"]), r["peak_rss_mib"]))
        if not keys:
            continue
        cols = min(BENCH_COLUMNS, len(keys))
        rows = -(-len(keys) // cols)
        fig, axes = rep.figure((BENCH_PANEL[0] * cols, BENCH_PANEL[1] * rows), rows, cols)
        for ax in axes[len(keys):]:
            fig.delaxes(ax)
        labels = [r["label"] for r in b["runs"]]
        for ax, key in zip(axes, keys):
            ys = [r.get(key) if numeric(r.get(key)) else 0 for r in b["runs"]]
            ax.bar(range(len(ys)), ys, color=[color(i) for i in range(len(ys))], label=key)
            ax.set_xticks(range(len(ys)), labels, rotation=30, ha="right", fontsize="small")
            ax.set_title(key.replace("_", " "), fontsize="medium")
            ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle("tools/bench: %s (%s)" % (b.get("bench", "?"), b["_name"]))
        fig.tight_layout()
        rep.save(fig, "bench-" + b["_name"], "bench " + b["_name"])
    if peak:
        fig, (ax,) = rep.figure(ONE_PANEL)
        ax.barh(range(len(peak)), [v for _, v in peak], color="C0", label="peak RSS")
        ax.set_yticks(range(len(peak)), [n for n, _ in peak], fontsize="small")
        ax.invert_yaxis()
        ax.set_xlabel("MiB")
        ax.set_title("peak memory (RSS)")
        ax.grid(True, axis="x", alpha=0.3)
        fig.tight_layout()
        rep.save(fig, "peak_memory", "peak memory")


# ----------------------------------------------------------------- table


def fmt(v, digits=4):
    if v is None:
        return ""
    if isinstance(v, float):
        if abs(v) >= 1e5:
            return "%.3g M" % (v / 1e6) if abs(v) >= 1e6 else "%.1f k" % (v / 1e3)
        return "%.*f" % (digits, v)
    return str(v)


def fmt_sig(v):
    """A bench figure: four significant digits, k and M for large ones."""
    if isinstance(v, int) or not numeric(v):
        return str(v)
    if abs(v) >= 1e6:
        return "%.3g M" % (v / 1e6)
    if abs(v) >= 1e4:
        return "%.1f k" % (v / 1e3)
    return "%.4g" % v


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def run_rows(r):
    """(row name, cell) pairs of one run; '' where it lacks the data."""
    ep = r["epochs"]
    last = ep[-1] if ep else {}
    _, mrr = series(r, "valid_mrr")
    _, ci = series(r, "valid_mrr_ci95")
    rows = [("settings", r["settings"]),
            ("epochs", str(last.get("epoch", "")) + (" (%d restarts)" % r["restarts"]
                                                     if r["restarts"] else "")),
            ("final loss", fmt(last.get("loss"))),
            ("valid MRR, last epoch", "%s ± %s" % (fmt(mrr[-1]), fmt(ci[-1]))
             if mrr and len(ci) == len(mrr) else fmt(mrr[-1] if mrr else None)),
            ("valid MRR, best epoch", fmt(max(mrr)) if mrr else ""),
            ("edges/s, mean of epochs", fmt(mean(series(r, "edges_per_second")[1]))),
            ("train seconds", fmt(sum(series(r, "seconds")[1]), 2) if ep else ""),
            ("batch time cv, mean", fmt(mean(series(r, "batch_seconds_cv")[1]), 3)),
            ("idle share, mean", "%.2f %%" % (100 * mean(series(r, "idle_share")[1]))
             if series(r, "idle_share")[1] else ""),
            ("partition loads", str(sum(series(r, "partition_loads")[1])) if ep else "")]
    for j in r["evals"]:
        f = j["filtered"]
        split = j.get("split", "test")
        rows.append(("%s MRR (filtered)" % split,
                     "%s ± %s" % (fmt(f.get("mrr")), fmt(f.get("mrr_ci95")))))
        rows.append(("%s Hits@10 (filtered)" % split,
                     "%s ± %s" % (fmt(f.get("hits@10")), fmt(f.get("hits@10_ci95")))))
        if "raw" in j:
            rows.append(("%s MRR (raw)" % split, fmt(j["raw"].get("mrr"))))
    return rows


def md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def write_index(out_dir, title, runs, benches, plots):
    lines = ["# " + title, ""]
    if runs:
        names = []
        cells = []
        for r in runs:
            rows = dict(run_rows(r))
            cells.append(rows)
            for name, _ in run_rows(r):
                if name not in names:
                    names.append(name)
        names = [n for n in names if any(c.get(n) for c in cells)]
        lines.append("| | " + " | ".join(md_cell(r["label"]) for r in runs) + " |")
        lines.append("| --- |" + " --- |" * len(runs))
        for n in names:
            lines.append("| %s | %s |" % (n, " | ".join(md_cell(c.get(n, "")) for c in cells)))
        lines.append("")
        protocols = []
        for r in runs:
            p = next((e["valid_protocol"] for e in reversed(r["epochs"])
                      if "valid_protocol" in e), None)
            if p:
                protocols.append("- %s, validation: %s" % (r["label"], p))
            for j in r["evals"]:
                protocols.append("- %s, %s (%s): %s" % (r["label"], j.get("split", "test"),
                                                        j["_file"], j.get("protocol", "?")))
        if protocols:
            lines += ["Protocols (compare MRRs only under the same one):", ""] + protocols + [""]
        sources = ["- %s: %s" % (r["label"], r["source"]) for r in runs]
        lines += ["Sources:", ""] + sources + [""]
    for b in benches:
        keys = bench_metrics(b)
        lines += ["## tools/bench: %s (%s)" % (b.get("bench", "?"), b["_name"]), ""]
        config = b.get("config", {})
        if config:
            lines += [", ".join("%s %s" % (k.replace("_", " "), fmt_sig(v))
                                for k, v in config.items()), ""]
        lines.append("| run | " + " | ".join(k.replace("_", " ") for k in keys) + " |")
        lines.append("| --- |" + " --- |" * len(keys))
        for r in b["runs"]:
            lines.append("| %s | %s |" % (md_cell(r["label"]), " | ".join(
                fmt_sig(r.get(k)) if numeric(r.get(k)) else "" for k in keys)))
        lines.append("")
        summary = b.get("summary", {})
        if summary:
            lines += ["- %s: %s" % (k.replace("_", " "), fmt_sig(v))
                      for k, v in summary.items()] + [""]
    if plots:
        lines += ["## Plots", ""]
        for p in plots:
            lines += ["![%s](%s)" % (p["title"], p["file"]), ""]
    with open(os.path.join(out_dir, "index.md"), "w") as f:
        f.write("\n".join(lines))


def check_out_dir(out, overwrite):
    """None if the report may be written into `out`, else why not."""
    if not os.path.lexists(out):
        return None
    if os.path.islink(out) or not os.path.isdir(out):
        return "%s is not a directory" % out
    names = sorted(os.listdir(out))
    if not names:
        return None
    if "report.json" not in names:
        shown = ", ".join(names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
        return ("%s is not a report directory (no report.json; it holds %s): "
                "choose an empty or new --out" % (out, shown))
    if not overwrite:
        return "%s already holds a report (pass --overwrite to replace it)" % out
    return None


def main(argv):
    parser = argparse.ArgumentParser(
        prog="tools/report/report.py", description=__doc__.split("\n")[0],
        epilog="See the top of tools/report/report.py for the files written.")
    parser.add_argument("runs", nargs="*", metavar="[LABEL=]RUN",
                        help="a graph directory with metrics.jsonl, or a metrics file")
    parser.add_argument("--out", required=True, metavar="DIR", help="the report's directory")
    parser.add_argument("--eval", action="append", default=[], metavar="[LABEL=]FILE",
                        help="`ember eval --json` output of run LABEL (repeatable)")
    parser.add_argument("--bench", action="append", default=[], metavar="FILE",
                        help="tools/bench/*.sh --json-out output (repeatable)")
    parser.add_argument("--format", choices=("png", "svg"), default="png")
    parser.add_argument("--title", default="ember report")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the report already in DIR")
    args = parser.parse_args(argv)
    if not args.runs and not args.eval and not args.bench:
        parser.error("nothing to report: give runs, --eval or --bench files")
    refused = check_out_dir(args.out, args.overwrite)
    if refused:
        print("report.py: %s" % refused, file=sys.stderr)
        return 1
    try:
        runs, benches = load_runs(args)
    except InputError as e:
        print("report.py: %s" % e, file=sys.stderr)
        return 1
    plt = import_pyplot()
    os.makedirs(args.out, exist_ok=True)
    rep = Report(plt, args.out, args.format)
    plot_runs(rep, runs)
    plot_evals(rep, runs)
    plot_benches(rep, benches)
    write_index(args.out, args.title, runs, benches, rep.plots)
    manifest = {"format": args.format, "dpi": DPI,
                "runs": [{"label": r["label"], "source": r["source"],
                          "epochs": len(r["epochs"]), "evals": len(r["evals"])} for r in runs],
                "benches": [b["_name"] for b in benches],
                "plots": rep.plots}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("report.py: %d runs, %d benches, %d plots -> %s" % (
        len(runs), len(benches), len(rep.plots), os.path.join(args.out, "index.md")),
        file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
