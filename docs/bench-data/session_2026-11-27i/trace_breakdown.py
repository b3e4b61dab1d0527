import json,sys,bisect,statistics
def load(r):
    txt=open(f'/tmp/tr.{r}.json').read()
    try: return json.loads(txt)
    except: return json.loads(txt.rstrip().rstrip(',')+']}')
d0=load(0); d1=load(1)
ev0=[e for e in d0['traceEvents'] if e.get('ph')!='M']
ev1=[e for e in d1['traceEvents'] if e.get('ph')!='M']
req=[e for e in ev0 if e['name']=='request']
ops=[]; b=None
for e in req:
    if e['ph']=='b': b=e
    elif b is not None: ops.append((b['ts'],e['ts'],b['args'].get('atomic',0))); b=None
tp=sorted((e['ts'],e['ts']+e['dur']) for e in ev1 if e['name']=='progress' and e['args'].get('work',0)>0)
starts=[t for t,_ in tp]
rows=[]
for s,e,atomic in ops[-4000:]:   # the last phase: fetch-add
    i=bisect.bisect_left(starts,s)
    if i<len(tp) and tp[i][1]<=e:
        ps,pe=tp[i]; rows.append((e-s, ps-s, pe-ps, e-pe))
def med(k): return statistics.median(r[k] for r in rows)
print(sys.argv[1],'ops',len(rows),'RT %.1f  to-target-pass %.1f  target-pass %.1f  back+origin %.1f'%(med(0),med(1),med(2),med(3)))
