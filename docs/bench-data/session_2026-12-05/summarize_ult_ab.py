import re,sys,statistics as st
cur=None; d={}
for line in open(sys.argv[1]):
    m=re.match(r'### round (\d+): (\S+) library',line)
    if m: cur=m.group(2); continue
    if line.startswith('| ') and not line.startswith('| operation') and cur:
        cells=[c.strip() for c in line.strip().strip('|').split('|')]
        row=cells[0]
        for col,c in zip(['ult','fiber','pthread','raw'],cells[1:]):
            m=re.match(r'([\d.]+) \(mean ([\d.]+), p99 ([\d.]+)',c)
            if m: d.setdefault((row,col,cur),[]).append(tuple(map(float,m.groups())))
    m=re.search(r'bare jump loop, no call around the jump: ([\d.]+)',line)
    if m and cur: d.setdefault(('bare jump loop','raw',cur),[]).append((float(m.group(1)),0,0))
for (row,col,v),xs in sorted(d.items()):
    if 'remote' in row: continue
    med=[x[0] for x in xs]
    print(f"{row[:60]:60s} {col:7s} {v:9s} median-of-medians {st.median(med):7.1f}  runs {' '.join(f'{x:.1f}' for x in med)}  mean~{st.median([x[1] for x in xs]):.1f} p99~{st.median([x[2] for x in xs]):.1f}")
