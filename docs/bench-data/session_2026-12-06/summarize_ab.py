import re,sys,statistics as st,collections
rows=collections.defaultdict(list)
for line in open(sys.argv[1]):
    m=re.match(r'(\S+) r=(\d+) \| ([^|]+) \| ([\d.]+) \(mean ([\d.]+), p99 ([\d.]+); cpu ([\d.]+)\)',line)
    if not m: continue
    lab,r,row,med,mean,p99,cpu=m.groups()
    row=row.strip().replace('switch, ','').replace(' (every return predicted)','')[:38]
    rows[(row,lab)].append((float(med),float(mean),float(p99),float(cpu)))
labs=[]
for (row,lab) in rows:
    if lab not in labs: labs.append(lab)
for row in dict.fromkeys(r for r,_ in rows):
    print(row)
    for lab in labs:
        v=rows.get((row,lab))
        if not v: continue
        meds=[x[0] for x in v]
        print(f"  {lab:12s} median-of-runs {st.median(meds):6.1f} [runs {min(meds):.1f}-{max(meds):.1f}]  mean {st.median([x[1] for x in v]):6.1f}  p99 {st.median([x[2] for x in v]):6.1f}  cpu {st.median([x[3] for x in v]):6.1f}")
