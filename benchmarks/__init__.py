"""pbc benchmarks: `python -m benchmarks NAME` runs benchmarks/NAME.py's main().

Shared helpers: one labelled figure per line, and running a measurement in a fresh
process with an empty kernel cache (first-call figures)."""

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


def row(label, value, unit=''):
    print(f'  {label:<60} {value:>12} {unit}'.rstrip())


def run_child(module, *args, env=None):
    """Runs `python -m benchmarks.MODULE child ARGS` with an empty kernel cache (and the
    environment variables `env`) and returns the JSON object it prints last ({'error':
    message} if it fails). HOME is the empty folder too: Dr.Jit keeps its kernel cache in
    ~/.drjit."""
    cache = tempfile.mkdtemp(prefix='pbc-bench-')
    env = dict(os.environ, **(env or {}), PBC_CACHE_DIR=cache, HOME=cache,
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get('PYTHONPATH')])))
    try:
        res = subprocess.run([sys.executable, '-m', f'benchmarks.{module}', 'child', *args],
                             cwd=ROOT, env=env, capture_output=True, text=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if res.returncode != 0:
        lines = (res.stderr.strip() or res.stdout.strip() or '?').splitlines()
        return {'error': lines[-1]}
    return json.loads(res.stdout.strip().splitlines()[-1])
