#!/usr/bin/env python3
"""Summarizes stream_ab.sh output: per arm and op, the median, mean and range
of the runs (us), and in how many runs it beat Open MPI's median."""
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 3:
        continue
    arm = f[1]
    for kv in f:
        if '=' in kv and not kv.startswith('stream='):
            op, v = kv.split('=')
            runs[arm][op].append(float(v))
ops = ['allreduce', 'broadcast', 'allgather', 'reduce', 'gather', 'alltoall']
mpi = runs.get('openmpi', {})
print('| arm | ' + ' | '.join(ops) + ' |')
print('|---|' + '---|' * len(ops))
for arm in sorted(runs):
    cells = []
    for op in ops:
        v = runs[arm].get(op, [])
        if not v:
            cells.append('-'); continue
        s = f'{statistics.median(v):.0f} ({statistics.mean(v):.0f}; {min(v):.0f}-{max(v):.0f})'
        if arm != 'openmpi' and mpi.get(op):
            m = statistics.median(mpi[op])
            s += f' {sum(x < m for x in v)}/{len(v)}'
        cells.append(s)
    print(f'| {arm} | ' + ' | '.join(cells) + ' |')
