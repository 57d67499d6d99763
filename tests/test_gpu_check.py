"""scripts/gpu-check, the GPU check of docs/cuda.md, run here against the stand-in driver
with small sizes (--stand-in --quick): every stage runs and reports, so the script that a
GPU machine runs once in a while cannot rot in between."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_gpu_check_runs_every_stage_on_the_stand_in(tmp_path):
    out = tmp_path / 'out'
    env = dict(os.environ, PBC_CACHE_DIR=str(tmp_path / 'cache'))
    env.pop('OUT', None)
    res = subprocess.run([sys.executable, os.path.join(ROOT, 'scripts', 'gpu-check'),
                          '--stand-in', '--quick', '--out', str(out), '--budget', '240'],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    report = json.loads((out / 'gpu-check.json').read_text())
    stages = report['stages']
    assert list(stages) == ['probe', 'install', 'runtime', 'smoke', 'cuda', 'suite',
                            'samples', 'bench']
    assert {name: s['status'] for name, s in stages.items()} == dict.fromkeys(stages, 'ok'), \
        res.stdout[-3000:]
    assert res.returncode == 0
    assert stages['suite']['passed'] > 0 and not stages['suite'].get('failed')
    images = stages['samples']['images']
    assert set(images) == {'ambient_occlusion', 'cornell_ao', 'cornell_path',
                           'inverse_rendering'}
    for name, figures in images.items():
        # (the stand-in's "GPU" runs the LLVM backend's code: the same pixels)
        assert figures['relative_rmse'] < 1e-6, name
        assert (out / f'{name}.png').stat().st_size > 0
    bench = stages['bench']['figures']['figures']
    assert bench and all(f['pbc.cuda'].get('ok') for f in bench.values())
    log = (out / 'gpu-check.log').read_text()
    assert '==== summary' in log and (out / 'suite.xml').exists()
