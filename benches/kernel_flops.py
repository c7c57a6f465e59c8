#!/usr/bin/env python3
"""Floating-point operations per molecule pair of the generated TIP3P pair kernel, counted from
the instructions callgrind saw execute (BENCHMARKS.md, "The generated pair kernel").

    cargo build --release -p zs-bench --bin water_pair_cost
    for r in 0 20; do valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file=/tmp/cg.$r \
        target/release/water_pair_cost 100 $r; done
    python3 benches/kernel_flops.py target/release/water_pair_cost \
        /tmp/cg.0 /tmp/cg.20 100 4950

(the 20-repetition run evaluates the gradient 100 times; N = 100 has 4 950 pairs). The
difference of the two runs, per pair, is attributed to instructions by address (objdump), and
the double-precision arithmetic is counted by lanes: `*pd` = 2 flops, `*sd` = 1."""
import collections
import re
import subprocess
import sys
binary = sys.argv[1]
def exec_counts(path):
    counts = collections.Counter(); ob = None; fnname=None; addr = 0; skip_next=False; first_fn_addr={}
    obs = {}; fns = {}
    for line in open(path):
        line=line.rstrip('\n')
        if line.startswith('ob='):
            m = re.match(r'ob=\((\d+)\)(?: (.*))?', line); 
            if m.group(2): obs[m.group(1)] = m.group(2)
            ob = obs[m.group(1)]; continue
        if line.startswith('fn='):
            m = re.match(r'fn=\((\d+)\)(?: (.*))?', line)
            if m.group(2): fns[m.group(1)] = m.group(2)
            fnname = fns[m.group(1)]; continue
        if line.startswith(('cob=','cfn=','cfi=','cfl=')):
            m = re.match(r'c(ob|fn)=\((\d+)\)(?: (.*))?', line)
            if m and m.group(3):
                (obs if m.group(1)=='ob' else fns)[m.group(2)] = m.group(3)
            continue
        if line.startswith('calls='):
            skip_next = True
            parts=line.split()[1:]
            # target position of call, not our address
            continue
        if not line or not (line[0] in '+-*0' ):
            continue
        parts = line.split()
        a = parts[0]
        if a.startswith('0x'): addr = int(a,16)
        elif a.startswith('+'): addr += int(a[1:])
        elif a.startswith('-'): addr -= int(a[1:])
        elif a == '*': pass
        else: continue
        if skip_next:
            skip_next = False; continue
        if ob and ob.endswith(binary.split('/')[-1]):
            counts[addr] += int(parts[2]) if len(parts) > 2 else 0
            if fnname and fnname not in first_fn_addr: first_fn_addr[fnname]=addr
    return counts, first_fn_addr
c0, _ = exec_counts(sys.argv[2]); c1, fa = exec_counts(sys.argv[3])
evals = float(sys.argv[4]); pairs = float(sys.argv[5])
# objdump
dis = subprocess.run(['objdump','-d','--no-show-raw-insn',binary],capture_output=True,text=True).stdout
insn = {}
for l in dis.splitlines():
    m = re.match(r'\s*([0-9a-f]+):\s+(\S+)\s*(.*)', l)
    if m: insn[int(m.group(1),16)] = (m.group(2), m.group(3))
# load base: valgrind maps PIE at 0x108000 typically; find offset where counted addrs land on insn starts
best=None
for base in [0, 0x108000, 0x400000, 0x4000000]:
    hit = sum(1 for a in c1 if (a-base) in insn)
    if best is None or hit>best[1]: best=(base,hit)
base = best[0]
cls = collections.Counter(); total = 0
for a in set(c1)|set(c0):
    n = c1[a]-c0[a]
    if n <= 0: continue
    total += n
    mn, ops = insn.get(a-base, ('?',''))
    cls[mn] += n
per = lambda n: n/(evals*pairs)
print(f"base {base:#x}, instructions per pair {per(total):.1f}")
for mn, n in sorted(cls.items(), key=lambda x: -x[1]):
    if per(n) >= 0.5:
        print(f"{mn:12s} {per(n):8.2f}")

ARITH = {"add": "add/sub", "sub": "add/sub", "mul": "mul", "div": "div", "sqrt": "sqrt"}
flops = collections.Counter()
for mn, n in cls.items():
    m = re.fullmatch(r"v?(add|sub|mul|div|sqrt)(pd|sd)", mn)
    if m:
        flops[ARITH[m.group(1)]] += per(n) * (2 if m.group(2) == "pd" else 1)
print("double-precision flops per pair: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(flops.items()))
      + f"; total {sum(flops.values()):.0f}")
