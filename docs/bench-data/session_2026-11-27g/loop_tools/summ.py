import re,statistics,collections,sys
d=collections.defaultdict(list); loads=[]
for l in open(sys.argv[1]):
    if l.startswith('load'): loads.append(float(l.split()[1])); continue
    m=re.match(r'(\w+): .*median ([\d.]+) us min ([\d.]+) max ([\d.]+)',l)
    if m: d[m[1]].append(float(m[2]))
print('load %.1f-%.1f'%(min(loads),max(loads)) if loads else '')
for k,v in d.items(): print('%-6s median-of-medians %.3f  min %.3f  max %.3f  n=%d'%(k,statistics.median(v),min(v),max(v),len(v)))
