import json, sys, glob, collections, statistics
out = sys.argv[1]; ops = sys.argv[2:] or ['split_qkv_paged', 'attention.flash.paged', 'linear', 'linear_residual']
rounds = sorted({int(p.split('/r')[-1].split('-')[0]) for p in glob.glob(out + '/r*-base.json')})
ratios = []
rows = []
for r in rounds:
    res = {}
    for t in ('base', 'new'):
        d = json.load(open(f'{out}/r{r}-{t}.json'))['results'][0]
        tr = json.load(open(f'{out}/r{r}-{t}-trace.json'))
        ev = tr['traceEvents'] if isinstance(tr, dict) else tr
        s = collections.defaultdict(float)
        for e in ev:
            if e.get('ph') == 'X' and e.get('tid') == 1: s[e['name']] += e['dur'] / 1e3
        res[t] = (d['output_tokens_per_s_median'], d['tpot_ms_median'], {k: s[k] for k in ops})
    ratios.append(res['new'][0] / res['base'][0])
    rows.append((r, res))
print('| round | BASE tokens/s | NEW tokens/s | NEW / BASE | BASE TPOT ms | NEW TPOT ms | ' + ' | '.join(f'{o} ms BASE / NEW' for o in ops) + ' |')
print('| ---: ' * (6 + len(ops)) + '|')
for r, res in rows:
    b, n = res['base'], res['new']
    print(f'| {r} | {b[0]:.1f} | {n[0]:.1f} | {n[0]/b[0]:.3f} | {b[1]:.1f} | {n[1]:.1f} | ' + ' | '.join(f'{b[2][o]:.0f} / {n[2][o]:.0f}' for o in ops) + ' |')
print(f'\nNEW / BASE output tokens/s: median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) over {len(ratios)} rounds')
