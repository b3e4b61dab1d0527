#!/usr/bin/env python3
"""Tables from ofi_wait_none.sh's output: 8 B RMA latency by mode against the
raw pingpong (per-round ratios), tagged pingpong and AM round trip against
fi_pingpong and UCX, medians over rounds.   ofi_wait_none_summary.py OUT"""
import glob, json, re, statistics as st, sys
out = sys.argv[1]
rows = [json.loads(l) for l in open(f"{out}/results.jsonl")]
rounds = sorted({r["round"] for r in rows if "who" in r})
lat = {(r["round"], r["who"], r["op"]): r for r in rows if "who" in r}
med = st.median
def fmt(x): return f"{x:.1f}"
print("8 B RMA latency, us: median of round medians (mean, p99: medians); ratio to raw per round: median [min-max]")
print("| mode | op | median | mean | p99 | / raw |")
print("|---|---|--:|--:|--:|--:|")
for who in ["raw", "tsu_manual_fd", "tsu_manual_none", "tsu_thread_fd", "tsu_thread_none"]:
    for op in ["put", "get", "fetch_add"]:
        xs = [lat[(r, who, op)] for r in rounds if (r, who, op) in lat]
        if not xs: continue
        ratio = ""
        if who != "raw":
            q = [lat[(r, who, op)]["median_us"] / lat[(r, "raw", op)]["median_us"]
                 for r in rounds if (r, who, op) in lat and (r, "raw", op) in lat]
            ratio = f"{med(q):.2f} [{min(q):.2f}-{max(q):.2f}]"
        print(f"| {who} | {op} | {fmt(med([x['median_us'] for x in xs]))} | "
              f"{fmt(med([x['mean_us'] for x in xs]))} | {fmt(med([x['p99_us'] for x in xs]))} | {ratio} |")
print()
print("Tagged 8 B pingpong (half round trip, us: median / mean / p99) and AM round trip (us), medians over rounds")
print("| mode | tagged median | mean | p99 | AM round trip |")
print("|---|--:|--:|--:|--:|")
for mode in ["manual_fd", "manual_none", "thread_fd", "thread_none"]:
    pp, am = [], []
    for f in sorted(glob.glob(f"{out}/r*_{mode}_pingpong.txt")):
        for line in open(f):
            p = line.split()
            if len(p) >= 9 and p[0] == "8": pp.append((float(p[1]), float(p[7]), float(p[8])))
    for f in sorted(glob.glob(f"{out}/r*_{mode}_am.txt")):
        m = re.search(r"round trip \(short request \+ reply\): ([\d.]+)", open(f).read())
        if m: am.append(float(m.group(1)))
    if pp:
        print(f"| {mode} | {fmt(med([x[0] for x in pp]))} | {fmt(med([x[1] for x in pp]))} | "
              f"{fmt(med([x[2] for x in pp]))} | {fmt(med(am)) if am else '-'} |")
print()
fi = {"tagged": [], "msg": []}
for f in sorted(glob.glob(f"{out}/r*_fi.txt")):
    mode = None
    for line in open(f):
        if line.startswith("# fi_pingpong"): mode = re.search(r"-m (\w+)", line).group(1)
        p = line.split()
        if mode and len(p) >= 7 and p[0] == "8": fi[mode].append(float(p[6]))
print("fi_pingpong 8 B, usec/xfer (half round trip), median over rounds: " +
      ", ".join(f"{k} {fmt(med(v))}" for k, v in fi.items() if v))
ucx = {}
for f in sorted(glob.glob(f"{out}/r*_ucx.txt")):
    t = None
    for line in open(f):
        m = re.match(r"== ucx_perftest -t (\S+)", line)
        if m: t = m.group(1)
        if line.startswith("Final:") and t: ucx.setdefault(t, []).append(float(line.split()[2]))
print("UCX tcp 8 B, typical latency us (ucx_perftest's figure; half a round trip for put_lat/am_lat/tag_lat), "
      "median over rounds: " + ", ".join(f"{k} {fmt(med(v))}" for k, v in ucx.items()))
loads = [r["load"] for r in rows if "load" in r]
print(f"load at round starts: {', '.join(loads)}")
