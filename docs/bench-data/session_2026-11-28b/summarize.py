#!/usr/bin/env python3
"""Summarizes stream_ab.sh output: per arm and op, the median, mean and range
of the runs (us), and in how many runs it beat Open MPI's median; with
--by-state, separately for runs with both round trips near (< 200 ns) and
runs with either far."""
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))
by_state = '--by-state' in sys.argv
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 3:
        continue
    arm = f[1]
    if by_state:
        i = f.index('rt')
        far = max(float(f[i + 1]), float(f[i + 2])) > 200
        arm += ' far' if far else ' near'

    for kv in f:
        if '=' in kv and not kv.startswith('stream='):
            op, v = kv.split('=')
            runs[arm][op].append(float(v))
ops = ['allreduce', 'broadcast', 'allgather', 'reduce', 'gather', 'alltoall']
mpi = collections.defaultdict(list)  # Open MPI over all its runs
for arm in runs:
    if arm.startswith('openmpi'):
        for op, v in runs[arm].items():
            mpi[op] += v
print('| arm | ' + ' | '.join(ops) + ' |')
print('|---|' + '---|' * len(ops))
for arm in sorted(runs):
    cells = []
    for op in ops:
        v = runs[arm].get(op, [])
        if not v:
            cells.append('-'); continue
        s = f'{statistics.median(v):.0f} ({statistics.mean(v):.0f}; {min(v):.0f}-{max(v):.0f})'
        if not arm.startswith('openmpi') and mpi.get(op):
            m = statistics.median(mpi[op])
            s += f' {sum(x < m for x in v)}/{len(v)}'
        cells.append(s)
    n = max(len(v) for v in runs[arm].values())
    print(f'| {arm} ({n} runs) | ' + ' | '.join(cells) + ' |')
