#!/usr/bin/env python3
"""Summarise ofi_eager_ab.sh's OUT: per size, A and B (median over rounds of
each round's median / mean / p99, half round trip in us), B/A per round
(median [min-max]) and the protocol B used; fi_pingpong tagged and UCX tcp
tag_lat (its 50th percentile), median over rounds [min-max]."""
import glob, os, re, statistics as st, sys

out = sys.argv[1]
rounds = sorted({int(re.match(r'r(\d+)_', os.path.basename(p)).group(1))
                 for p in glob.glob(os.path.join(out, 'r*_pp.txt'))})

def pp(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if not f or not f[0].isdigit() or len(f) < 9:
            continue
        proto = 'eager' if int(f[3]) + int(f[4]) > 0 else 'rndv'
        rows[int(f[0])] = (float(f[1]), float(f[7]), float(f[8]), proto)
    return rows

def fi(path):
    rows, size = {}, None
    for line in open(path):
        m = re.match(r'# fi_pingpong .* -S (\d+)', line)
        if m:
            size = int(m.group(1)); continue
        f = line.split()
        if size is not None and len(f) == 8 and f[1] == '2k':
            rows[size] = float(f[6])
    return rows

def ucx(path):
    rows, size = {}, None
    for line in open(path):
        m = re.match(r'== ucx_perftest .* -s (\d+)', line)
        if m:
            size = int(m.group(1)); continue
        if line.startswith('Final:') and size is not None:
            rows[size] = float(line.split()[2])
    return rows

def mmm(v):
    return f'{st.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]' if v else '-'

A = {r: pp(os.path.join(out, f'r{r}_A_pp.txt')) for r in rounds}
B = {r: pp(os.path.join(out, f'r{r}_B_pp.txt')) for r in rounds}
F = {r: fi(os.path.join(out, f'r{r}_fi.txt')) for r in rounds}
U = {r: ucx(p) for r in rounds if os.path.exists(p := os.path.join(out, f'r{r}_ucx.txt'))}
sizes = sorted(set().union(*[set(x) for x in B.values()]))
print(f'rounds: {len(rounds)}; half round trip, us')
print('| bytes | A median / mean / p99 | B median / mean / p99 | B/A median per round | B protocol | fi_pingpong tagged | UCX tcp tag_lat |')
print('|---:|---|---|---|---|---|---|')
for s in sizes:
    def cols(d):
        v = [d[r][s] for r in rounds if s in d[r]]
        return ' / '.join(f'{st.median([x[i] for x in v]):.1f}' for i in range(3)) if v else '-'
    ratio = [B[r][s][0] / A[r][s][0] for r in rounds if s in A[r] and s in B[r]]
    protos = sorted({B[r][s][3] for r in rounds if s in B[r]})
    fv = [F[r][s] for r in rounds if s in F[r]]
    uv = [U[r][s] for r in U if s in U[r]]
    print(f'| {s} | {cols(A)} | {cols(B)} | {mmm(ratio) if ratio else "-"} | {",".join(protos)} | {mmm(fv)} | {mmm(uv)} |')
