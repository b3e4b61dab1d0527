#!/usr/bin/env python3
"""Summary of ofi_eager32_ab.sh: per size, A and B medians over rounds
(median / mean / p99 of tsu-bench's columns), the median of the per-round
B/A ratios with their range, and the peers (fi_pingpong at rxm's default
and raised eager limit, UCX tcp tag_lat p50).
  ofi_eager32_summary.py OUT"""
import glob, os, re, statistics as st, sys

out = sys.argv[1]
rounds = sorted({int(re.match(r'r(\d+)_', os.path.basename(f)).group(1))
                 for f in glob.glob(os.path.join(out, 'r*_A_ppm.txt'))})

def table(path, ncols):
    rows = {}
    for line in open(path):
        p = line.split()
        if len(p) == ncols and p[0].isdigit():
            rows[int(p[0])] = p
    return rows

def med(xs):
    return st.median(xs) if xs else float('nan')

def pingpong(kind):
    print(f"\n{kind}: half round trip (us); A = old library, B = new; median over {len(rounds)} rounds "
          "of the per-run median / mean / p99; B/A = median of per-round ratios of medians [min-max]; "
          "protocol of B")
    print("| bytes | A median / mean / p99 | B median / mean / p99 | B/A [range] | B protocol |")
    print("|---:|---|---|---|---|")
    data = {}
    for r in rounds:
        for v in 'AB':
            for size, p in table(os.path.join(out, f'r{r}_{v}_{kind}.txt'), 9).items():
                data.setdefault(size, {}).setdefault(v, []).append(p)
    for size in sorted(data):
        a, b = data[size].get('A', []), data[size].get('B', [])
        fmt = lambda rows: ' / '.join(f"{med([float(x[i]) for x in rows]):.1f}" for i in (1, 7, 8))
        ratios = [float(y[1]) / float(x[1]) for x, y in zip(a, b)]
        proto = 'eager' if int(b[0][3]) > 0 else 'rndv'
        print(f"| {size} | {fmt(a)} | {fmt(b)} | {med(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}] | {proto} |")

def stream():
    print(f"\nstream (MB/s, window 64, thread progress): median over rounds; B/A per round")
    print("| bytes | A | B | B/A [range] | B protocol |")
    print("|---:|---|---|---|---|")
    data = {}
    for r in rounds:
        for v in 'AB':
            for size, p in table(os.path.join(out, f'r{r}_{v}_st.txt'), 7).items():
                data.setdefault(size, {}).setdefault(v, []).append(p)
    for size in sorted(data):
        a, b = data[size]['A'], data[size]['B']
        ratios = [float(y[2]) / float(x[2]) for x, y in zip(a, b)]
        proto = 'eager' if int(b[0][3]) > 0 else 'rndv'
        print(f"| {size} | {med([float(x[2]) for x in a]):.0f} | {med([float(x[2]) for x in b]):.0f} "
              f"| {med(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}] | {proto} |")

def peers():
    fi, ucx = {}, {}
    for r in rounds:
        key = None
        for line in open(os.path.join(out, f'r{r}_fi.txt')):
            m = re.match(r'# eager_limit=(\S+) .* -S (\d+)', line)
            if m:
                key = (m.group(1), int(m.group(2)))
                continue
            p = line.split()
            if key and len(p) == 8 and p[0][-1] == 'k':
                fi.setdefault(key, []).append(float(p[6]))
        path = os.path.join(out, f'r{r}_ucx.txt')
        if os.path.exists(path):
            size = None
            for line in open(path):
                m = re.match(r'== .* -s (\d+)', line)
                if m:
                    size = int(m.group(1))
                elif line.startswith('Final:') and size:
                    ucx.setdefault(size, []).append(float(line.split()[2]))
    print("\npeers, half round trip (us), median over rounds [min-max]")
    print("| bytes | fi_pingpong tagged, rxm default | fi_pingpong, FI_OFI_RXM_EAGER_LIMIT=32824 | UCX tcp tag_lat p50 |")
    print("|---:|---|---|---|")
    for size in sorted({k[1] for k in fi} | set(ucx)):
        cell = lambda xs: f"{med(xs):.1f} [{min(xs):.1f}-{max(xs):.1f}]" if xs else '-'
        print(f"| {size} | {cell(fi.get(('default', size), []))} | {cell(fi.get(('32824', size), []))} "
              f"| {cell(ucx.get(size, []))} |")

print("loads:", ' | '.join(l.split('load ')[1].strip() for l in open(os.path.join(out, 'load.txt'))))
pingpong('ppm')
pingpong('ppt')
stream()
peers()
