"""pbc benchmarks: `python -m benchmarks NAME` runs benchmarks/NAME.py's main().

Shared helpers: one labelled figure per line, and running a measurement in a fresh
process with an empty kernel cache (first-call figures), alternating between the systems
compared."""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model():
    """The CPU's model name (/proc/cpuinfo), for the header of every benchmark."""
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return 'unknown CPU'


def median_time(fn, repeat=5, warmup=1):
    """Median wall time of fn() in seconds, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def llvm_setup(m, Float):
    """The process's one-time LLVM setup, on a small kernel of module m (pbc, or Dr.Jit),
    so that first-call figures leave it out: measured after it, as every benchmark does."""
    m.eval(m.arange(Float, 10) * 0.5)


def row(label, value, unit=''):
    print(f'  {label:<60} {value:>12} {unit}'.rstrip())


def run_child(module, *args, env=None, timeout=None):
    """Runs `python -m benchmarks.MODULE child ARGS` with an empty kernel cache (and the
    environment variables `env`) and returns the JSON object it prints last ({'error':
    message} if it fails, or runs past `timeout` seconds). HOME is the empty folder too:
    Dr.Jit keeps its kernel cache in ~/.drjit, the CUDA driver its compiled PTX in ~/.nv.
    The child inherits PYTHONPATH (tests/standin_site's stand-in GPU travels that way), its
    folders made absolute as the child runs in ROOT, and the user's site-packages, which
    would move with HOME."""
    import site
    cache = tempfile.mkdtemp(prefix='pbc-bench-')
    path = [os.path.abspath(p) for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
    env = dict(os.environ, **(env or {}), PBC_CACHE_DIR=cache, HOME=cache,
               PYTHONPATH=os.pathsep.join([ROOT, *path]))
    env.setdefault('PYTHONUSERBASE', site.getuserbase())
    try:
        res = subprocess.run([sys.executable, '-m', f'benchmarks.{module}', 'child', *args],
                             cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return {'error': f'timed out after {timeout} s'}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if res.returncode != 0:
        lines = (res.stderr.strip() or res.stdout.strip() or '?').splitlines()
        return {'error': lines[-1]}
    # (the last line that is a JSON object: a library may print after it, at exit)
    for line in reversed(res.stdout.strip().splitlines()):
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if isinstance(result, dict):
            return result
    return {'error': f'no figures in the output: {res.stdout.strip()[-200:]!r}'}


ROUNDS = int(os.environ.get('PBC_BENCH_ROUNDS', '3'))


def best_of_rounds(children, rounds=ROUNDS, timeout=None):
    """{name: figures} for children {name: (module, args, env)}: each runs `rounds` times
    (run_child), in turn with the others, so that the slow spells of a shared host fall
    on all of them alike; every other round runs them in reverse order, as a process may
    inherit state from its predecessor (on a virtual machine, how much free memory the
    host still backs: a fresh huge page costs 0.2 ms, or 4-5 ms). Each time (a float)
    is the best of its rounds, anything else comes from the first round. A child that
    fails gives {'error': message}; `timeout`: seconds a child may take (run_child)."""
    best = {}
    for n in range(rounds):
        order = list(children.items())
        for name, (module, args, env) in (order if n % 2 == 0 else order[::-1]):
            if 'error' in best.get(name, {}):
                continue
            r = run_child(module, *args, env=env, timeout=timeout)
            if name not in best or 'error' in r:
                best[name] = r
                continue
            for key, value in r.items():
                if isinstance(value, float) and isinstance(best[name].get(key), float):
                    best[name][key] = min(best[name][key], value)
    return best
