#!/usr/bin/env python3
"""Summarizes ofi_bulk_ab.sh's output directory: per size, the median over
rounds (min-max) of each side's tagged pingpong half round trip (us) and
streaming bandwidth (MB/s), and per round the bulk/no-bulk ratio."""
import glob, os, re, statistics, sys

d = sys.argv[1]
rounds = sorted({int(re.match(r'r(\d+)_', os.path.basename(f)).group(1)) for f in glob.glob(f'{d}/r*_*')})

def table(path, col):
    out = {}
    try:
        for line in open(path):
            p = line.split()
            if len(p) > col and p[0].isdigit():
                out[int(p[0])] = float(p[col])
    except FileNotFoundError:
        pass
    return out

def fi(path):
    lat, bw, size = {}, {}, None
    try:
        for line in open(path):
            m = re.search(r'-S (\d+)', line)
            if line.startswith('#') and m:
                size = int(m.group(1))
                continue
            p = line.split()
            if size and len(p) >= 8 and p[0] != 'bytes':
                bw[size], lat[size] = float(p[5]), float(p[6])
    except FileNotFoundError:
        pass
    return lat, bw

def ucx(path):
    lat, bw, cur = {}, {}, None
    try:
        for line in open(path):
            m = re.match(r'== ucx_perftest -t (\w+) -s (\d+)', line)
            if m:
                cur = (m.group(1), int(m.group(2)))
                continue
            if line.startswith('Final:') and cur:
                p = line.split()
                if cur[0] == 'tag_lat':
                    lat[cur[1]] = float(p[2])  # 50th percentile, half round trip
                else:
                    bw[cur[1]] = float(p[6])   # overall bandwidth
    except FileNotFoundError:
        pass
    return lat, bw

def cell(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return '-'
    return f'{statistics.median(vals):.0f} ({min(vals):.0f}-{max(vals):.0f})'

sides = {'bulk': 'ofi_bulk1', 'nobulk': 'ofi_bulk0', 'udp': 'udp'}
for kind, col, unit in (('pingpong', 1, 'half round trip, us'), ('stream', 2, 'MB/s')):
    data = {s: [table(f'{d}/r{r}_{p}_{kind}.txt', col) for r in rounds] for s, p in sides.items()}
    fis = [fi(f'{d}/r{r}_fi_pingpong.txt') for r in rounds]
    ucxs = [ucx(f'{d}/r{r}_ucx.txt') for r in rounds]
    sizes = sorted(set().union(*[set(t) for t in data['bulk']]))
    print(f'\n{kind} ({unit}), median of {len(rounds)} rounds (min-max)')
    print('| bytes | ofi, bulk payloads | ofi, CTS/DATA | bulk/old per round, median | udp | fi_pingpong tagged | UCX tcp tag_' + ('lat' if kind == 'pingpong' else 'bw') + ' |')
    print('|---|---|---|---|---|---|---|')
    for s in sizes:
        ratios = [b[s] / o[s] for b, o in zip(data['bulk'], data['nobulk']) if s in b and s in o and o[s]]
        fl = [(f[0] if kind == 'pingpong' else f[1]).get(s) for f in fis]
        ul = [(u[0] if kind == 'pingpong' else u[1]).get(s) for u in ucxs]
        print(f'| {s} | {cell([t.get(s) for t in data["bulk"]])} | {cell([t.get(s) for t in data["nobulk"]])} | '
              f'{statistics.median(ratios):.2f} | {cell([t.get(s) for t in data["udp"]])} | {cell(fl)} | {cell(ul)} |'
              if ratios else f'| {s} | - |')
