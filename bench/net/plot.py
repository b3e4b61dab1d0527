#!/usr/bin/python3
"""Plots tsu-bench-net results: bandwidth vs size (tsunagi udp, raw UDP,
UCX tcp) and the sender's congestion window / retransmissions over time.
   plot.py RESULTS_DIR [LOSS_RESULTS_DIR] OUT_PREFIX"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

def load(d):
    return [json.loads(l) for l in open(d + "/results.jsonl") if l.startswith("{")]

dirs = sys.argv[1:-1]
out = sys.argv[-1]
fig, ax = plt.subplots(figsize=(7, 4))
for d, label in zip(dirs, ["tsunagi udp", "tsunagi udp, 5% loss (nft)"]):
    r = load(d)
    bw = [x for x in r if x["bench"] == "tsu_put_bw"]
    ax.plot([x["bytes"] for x in bw], [x["MBps"] for x in bw], marker="o", label=label)
    raw = [x for x in r if x["bench"] == "raw_udp_throughput"]
    if raw and d == dirs[0]:
        ax.axhline(raw[0]["MBps"], color="gray", ls="--", label="raw UDP throughput (1472 B)")
ax.set_xscale("log", base=2)
ax.set_xlabel("put size (bytes)")
ax.set_ylabel("MB/s")
ax.set_title("put bandwidth across two namespaces on veth")
ax.legend()
fig.tight_layout()
fig.savefig(out + "_bandwidth.png", dpi=110)

fig, ax = plt.subplots(figsize=(7, 4))
ax2 = ax.twinx()
for d, style in zip(dirs, ["-", ":"]):
    rows = [l.split() for l in open(d + "/trace.0") if l[0].isdigit()]
    t = [float(r[0]) / 1e6 for r in rows]
    ax.plot(t, [float(r[3]) for r in rows], style, color="C0", label="cwnd " + d.split("/")[-1])
    ax2.plot(t, [int(r[8]) for r in rows], style, color="C3", label="retransmits " + d.split("/")[-1])
ax.set_xlabel("time (s)")
ax.set_ylabel("congestion window (datagrams)", color="C0")
ax2.set_ylabel("retransmissions (cumulative)", color="C3")
ax.set_title("rank 0 -> rank 1: congestion window and retransmissions")
fig.legend(loc="upper left", fontsize=8)
fig.tight_layout()
fig.savefig(out + "_cwnd.png", dpi=110)
