#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/agile-bench/report.py - agile-bench's CSV as a report a person reads.

  report.py CSV OUTDIR

writes OUTDIR/report.md (one section per benchmark: its rows with medians,
spread and bandwidth, its verdicts, its notes, its plot) and OUTDIR/<bench>.png
through gnuplot (Debian's gnuplot-nox): benchmarks whose rows carry bytes
(allreduce) as bandwidth against size, one line per contender; the others
as the median of each row with its p10-p90 spread.  Without gnuplot the
report says so and has no plots.  Exit status 0, or 1 when the CSV cannot
be read or has no rows.
"""

import csv
import os
import re
import shutil
import subprocess
import sys


def fnum(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def size_label(b):
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k and b % k == 0:
            return "%d %s" % (b // k, unit)
    return "%d B" % b


def series_of(variant):
    """A row's contender: its variant without the size token (4K, 1M ...)."""
    parts = [p for p in variant.split("-") if not re.fullmatch(r"\d+[KMG]?", p)]
    return "-".join(parts) or variant


def read(path):
    rows, verdicts, notes, order = [], [], [], []
    with open(path, newline="") as f:
        for rec in csv.DictReader(f):
            kind, bench = rec.get("kind", ""), rec.get("bench", "")
            if kind == "note":
                notes.append(rec.get("variant", ""))
                continue
            if bench and bench not in order:
                order.append(bench)
            if kind in ("time", "na"):
                rows.append(rec)
            elif kind in ("speedup", "slowdown"):
                verdicts.append(rec)
    return rows, verdicts, notes, order


def esc(s):
    return s.replace("|", "\\|")


def gnuplot(script, data):
    """Runs @script with inline data blocks @data (name -> lines)."""
    text = "".join("$%s << EOD\n%s\nEOD\n" % (name, "\n".join(lines))
                   for name, lines in data.items()) + script
    res = subprocess.run(["gnuplot"], input=text, text=True,
                         capture_output=True, timeout=60)
    if res.returncode:
        raise RuntimeError(res.stderr.strip() or "gnuplot failed")


def plot_bandwidth(bench, rows, png):
    series = {}
    for r in rows:
        b, bw = fnum(r["bytes"]), fnum(r["bandwidth_Bps"])
        if r["kind"] == "time" and b and bw:
            series.setdefault(series_of(r["variant"]), []).append((b, bw))
    if not series:
        return False
    data, plots = {}, []
    for i, (name, pts) in enumerate(sorted(series.items())):
        data["s%d" % i] = ["%g %g" % (b, bw / 1e9) for b, bw in sorted(pts)]
        plots.append("$s%d using 1:2 with linespoints title '%s'" %
                     (i, name.replace("'", "")))
    gnuplot("set terminal pngcairo size 1000,600 noenhanced\n"
            "set output '%s'\nset title '%s: bandwidth against size'\n"
            "set logscale x 2\nset xlabel 'bytes'\nset ylabel 'GB/s'\n"
            "set key outside right\nset grid\nplot %s\n" %
            (png, bench, ", ".join(plots)), data)
    return True


def plot_medians(bench, rows, png):
    pts = [(r["variant"], fnum(r["median_ms"]), fnum(r["p10_ms"]),
            fnum(r["p90_ms"])) for r in rows if r["kind"] == "time"]
    pts = [p for p in pts if p[1] is not None]
    if not pts:
        return False
    lines = ['%d "%s" %g %g %g' % (i, v.replace('"', ""), m,
                                   lo if lo is not None else m,
                                   hi if hi is not None else m)
             for i, (v, m, lo, hi) in enumerate(pts)]
    gnuplot("set terminal pngcairo size 1000,%d noenhanced\n"
            "set output '%s'\nset title '%s: median, p10-p90'\n"
            "set xlabel 'ms'\nset ytics nomirror\nset grid x\n"
            "set offsets 0,0,0.5,0.5\nset xrange [0:*]\nunset key\n"
            "plot $d using 3:1:4:5:ytic(2) with xerrorbars pt 7\n" %
            (max(300, 40 * len(pts) + 120), png, bench), {"d": lines})
    return True


def main(argv):
    if len(argv) != 3:
        print("usage: report.py CSV OUTDIR", file=sys.stderr)
        return 2
    try:
        rows, verdicts, notes, order = read(argv[1])
    except OSError as e:
        print("report: %s: %s" % (argv[1], e.strerror), file=sys.stderr)
        return 1
    if not rows:
        print("report: %s: no rows" % argv[1], file=sys.stderr)
        return 1
    out = argv[2]
    os.makedirs(out, exist_ok=True)
    have_plot = shutil.which("gnuplot") is not None
    md = ["# agile-bench report", "",
          "From `%s`: each row a median of its repetitions with the "
          "p10-p90 spread and the minimum; each verdict the ratio of two "
          "medians measured in the same run." % os.path.basename(argv[1]),
          ""]
    if not have_plot:
        md += ["No plots: gnuplot is not installed (Debian: gnuplot-nox).", ""]
    used = set()
    for bench in order:
        mine = [r for r in rows if r["bench"] == bench]
        md += ["## %s" % bench, ""]
        if mine:
            md += ["| variant | threads | reps | median ms | p10-p90 ms "
                   "| min ms | GB/s |", "|---|---|---|---|---|---|---|"]
            for r in mine:
                if r["kind"] == "na":
                    md.append("| %s | %s | | n/a: %s | | | |" %
                              (esc(r["variant"]), r["threads"],
                               esc(r["verdict"])))
                    continue
                bw = fnum(r["bandwidth_Bps"])
                md.append("| %s | %s | %s | %.4g | %.4g-%.4g | %.4g | %s |" %
                          (esc(r["variant"]), r["threads"], r["reps"],
                           fnum(r["median_ms"]), fnum(r["p10_ms"]) or 0,
                           fnum(r["p90_ms"]) or 0, fnum(r["min_ms"]),
                           "%.2f" % (bw / 1e9) if bw else ""))
            md.append("")
        mine_v = [v for v in verdicts if v["bench"] == bench]
        if mine_v:
            md += ["| ratio | value | target | verdict |", "|---|---|---|---|"]
            for v in mine_v:
                what = "faster than" if v["kind"] == "speedup" else \
                       "time over"
                ratio = fnum(v["ratio"])
                md.append("| %s %s %s | %s | %s | %s |" %
                          (esc(v["variant"]), what, esc(v["baseline"]),
                           "%.2fx" % ratio if ratio else "-",
                           esc(v["target"]), esc(v["verdict"])))
            md.append("")
        for i, n in enumerate(notes):
            if n.startswith(bench + ":"):
                md.append("- %s" % n[len(bench) + 1:].strip())
                used.add(i)
        if any(n.startswith(bench + ":") for n in notes):
            md.append("")
        if have_plot and mine:
            png = os.path.join(out, "%s.png" % bench)
            try:
                drawn = (any(fnum(r["bytes"]) for r in mine) and
                         plot_bandwidth(bench, mine, png)) or \
                        plot_medians(bench, mine, png)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                md += ["(no plot: %s)" % e, ""]
                drawn = False
            if drawn:
                md += ["![%s](%s.png)" % (bench, bench), ""]
    rest = [n for i, n in enumerate(notes) if i not in used]
    if rest:
        md += ["## Notes", ""] + ["- %s" % n for n in rest] + [""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md))
    print("report: %s" % os.path.join(out, "report.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
