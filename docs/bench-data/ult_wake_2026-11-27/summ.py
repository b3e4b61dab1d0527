import sys,re,statistics as st
rows={}
for l in open(sys.argv[1]):
    m=re.match(r'rep=(\d+) mode=(\w+) lib=(\w+) T=(\d+) R=(\d+) (.*)',l)
    if not m: continue
    kv=dict(x.split('=') for x in m.group(6).split())
    rows.setdefault((m.group(2),m.group(4),m.group(3)),[]).append({k:float(v) for k,v in kv.items()})
for k in sorted(rows):
    r=rows[k]
    f=lambda n: st.median(x[n] for x in r)
    print(f"mode={k[0]:6} T={k[1]:>2} lib={k[2]}: runs={len(r)} median-of-runs: median_us={f('median_us'):.2f} mean_us={f('mean_us'):.2f} p99_us={f('p99_us'):.2f} cpu_us_per_rt={f('cpu_us_per_rt'):.3f} wall_ms={f('wall_ms'):.1f}")
