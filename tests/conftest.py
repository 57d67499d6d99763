"""Session-wide test support: the backend the suite runs on (PBC_TEST_BACKEND, see
tests/suite_backend.py; with `cuda` and no GPU here, through the stand-in driver), a record
of every Kernel the LLVM backend compiles (so that tests/test_zz_ptx_all_kernels.py can
check that the PTX renderer handles all of them), a batched ptxas runner, a way to
compile at a chosen vector width, `fake_gpu`: the stand-in driver for one test, and `mode`:
a test run with the loops and conditionals left to the flags symbolic, then evaluated."""

import contextlib
import functools
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import cuda_standin
import pytest
import suite_backend

import pbc
from pbc.backend import cuda_jit

VECTOR_WIDTHS = (4, 8, 16, 32)          # up to pbc._runtime.MAX_LANES (buffer padding)


def pytest_configure(config):
    config.addinivalue_line('markers', 'llvm_only: about the LLVM backend\'s own code (its IR, '
                            'threads, vector widths, disk cache): skipped on another backend')
    config.addinivalue_line('markers', 'cuda_only: about the CUDA backend\'s own code')
    if suite_backend.NAME == 'cuda':
        try:
            cuda_jit.load_driver()
            config.pbc_standin = None
        except cuda_jit.CUDAUnavailable:
            config.pbc_standin = cuda_standin.Installed()       # (for the whole session)


def pytest_report_header(config):
    standin = getattr(config, 'pbc_standin', None) is not None
    return f'backend under test: {suite_backend.module.__name__}' + (
        ', through the stand-in driver (tests/cuda_standin.py: no GPU here)' if standin else '')


def pytest_collection_modifyitems(config, items):
    other = {'llvm': 'cuda_only', 'cuda': 'llvm_only'}[suite_backend.NAME]
    skip = pytest.mark.skip(reason=f'not run on {suite_backend.module.__name__} '
                                   f'(marked {other})')
    for item in items:
        if other in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fake_gpu(monkeypatch):
    """The stand-in driver (tests/cuda_standin.py) in place of the real one, for one test:
    pbc.cuda runs here, on any machine, its kernels computed by the LLVM backend. Checks
    afterwards that the test left nothing on the "device"."""
    standin = cuda_standin.Installed(monkeypatch.setattr)
    driver = standin.driver
    yield driver
    assert driver.depth == 0              # every push was popped
    made = standin.close()
    if made is not None:
        assert made.memory.cached == made.memory.live == made.modules == {}
        assert driver.blocks == {} and driver.queue == [] and driver.modules == {}
        assert driver.depth == 0 and driver.retained == 0


@contextlib.contextmanager
def vector_width(width):
    """Compiles every LLVM kernel with `width` lanes per vector inside the block, whatever
    the backend's heuristics (LLVMBackend.lanes) would choose: each width renders different
    IR (mask integers, cttz widths, register halves), and the heuristics pick few of them
    for the small programs of the tests."""
    from pbc.backend import llvm_jit
    be = llvm_jit.backend()
    be.flush_memory_cache()
    be.lanes = lambda kernel: width
    try:
        yield
    finally:
        del be.lanes
        be.flush_memory_cache()


@pytest.fixture(autouse=True, scope='session')
def recorded_kernels():
    """{kernel content: Kernel} of every kernel the LLVM backend compiles this session."""
    from pbc.backend import llvm_jit
    kernels = {}
    original = llvm_jit.LLVMBackend.compile

    @functools.wraps(original)
    def compile(self, kernel, *args, **kwargs):
        kernels.setdefault((tuple(kernel.instrs), tuple(kernel.params)), kernel)
        return original(self, kernel, *args, **kwargs)

    llvm_jit.LLVMBackend.compile = compile
    try:
        yield kernels
    finally:
        llvm_jit.LLVMBackend.compile = original


# GPUs the rendered PTX is assembled for: the oldest it targets and a current one.
ARCHS = ('sm_70', 'sm_90')


def _run_ptxas(exe, text, arch, flags=()):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, 'kernels.ptx')
        with open(src, 'w') as f:
            f.write(text)
        return subprocess.run([exe, f'-arch={arch}', *flags, src, '-o',
                               os.path.join(d, 'k.cubin')], capture_output=True, text=True)


def gpu_archs(exe):
    """ARCHS as this ptxas knows them: CUDA 13 dropped Volta, so sm_70 PTX is then assembled
    for the oldest GPU it still knows (the PTX's own .target keeps newer instructions out)."""
    from pbc.backend import ptx_render
    empty = f'{ptx_render.HEADER}.visible .entry k() {{ ret; }}\n'
    out = []
    for arch in ARCHS:
        known = [a for a in (arch, 'sm_72', 'sm_75', 'sm_80') if a >= arch and
                 _run_ptxas(exe, empty, a).returncode == 0]
        if not known:
            pytest.fail(f'ptxas knows none of the GPUs from {arch} on')
        out.append(known[0])
    return sorted(set(out))


def _assemble(exe, text, flags, arch):
    """ptxas's error text for one module, or None if it assembles."""
    res = _run_ptxas(exe, text, arch, flags)
    if res.returncode == 0:
        return None
    lines = text.split('\n')
    report = res.stderr.strip().split('\n')[:12]
    for msg in report[:4]:           # "kernels.ptx, line 123; error : ..." -> that line
        if ', line ' in msg:
            no = int(msg.split(', line ')[1].split(';')[0])
            entry = next((x for x in reversed(lines[:no]) if '.entry' in x), '?')
            report.append(f'  line {no} in {entry.split("(")[0]}: {lines[no - 1].strip()}')
    return f'ptxas -arch={arch}:\n' + '\n'.join(report)


@pytest.fixture(scope='session')
def ptxas():
    """assemble(named_kernels, quick=False): renders (name, Kernel) pairs as PTX modules of
    about `batch` instructions each and assembles them with ptxas for each of `gpu_archs`
    in parallel (quick: -O0, which still parses, checks and compiles everything); fails
    with ptxas's message. Skips (visibly) where the CUDA toolkit is not installed."""
    from pbc.backend import ptx_render
    exe = shutil.which('ptxas')
    archs = gpu_archs(exe) if exe else ()

    def assemble(named_kernels, quick=False, batch=5000):
        groups, size = [[]], 0
        for name, kernel in named_kernels:
            if size > batch:
                groups.append([])
                size = 0
            groups[-1].append((name, kernel))
            size += len(kernel.instrs)
        texts = [ptx_render.render_module(g) for g in groups if g]
        if exe is None:
            pytest.skip('ptxas (CUDA toolkit) is not installed: PTX rendered, not assembled')
        flags = ['-O0'] if quick else []
        jobs = [(t, a) for t in texts for a in archs]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            errors = [e for e in pool.map(lambda job: _assemble(exe, job[0], flags, job[1]),
                                          jobs) if e]
        if errors:
            pytest.fail('ptxas rejected generated PTX:\n' + '\n\n'.join(errors[:3]))
        return texts

    return assemble


@pytest.fixture
def ptx_functions_checked():
    """check(text): in every .func of a PTX module, each value register is written (by an
    instruction or a parameter load) before anything reads it. A caller's value that a
    function was not passed would be an uninitialized read, which ptxas accepts."""
    def check(text):
        for func in re.findall(r'\n\.func .*?\n}', text, re.S):
            written = set()
            for line in func.splitlines():
                code = line.strip()
                if not code or code.startswith(('.', '{', '}', '$', '//')) or code.endswith(':'):
                    continue
                code = re.sub(r'^@!?%\w+\s+', '', code)             # a guard predicate
                op, _, rest = code.partition(' ')
                regs = re.findall(r'%(?:rd|r|p)\d+\b', rest)
                stores = op.startswith(('st.', 'red.', 'bra', 'call', 'ret'))
                reads = regs if stores else regs[1:]
                missing = [x for x in reads if x not in written]
                assert not missing, f'{missing} read before written in:\n{func}'
                if regs and not stores:
                    written.add(regs[0])
                    if op.startswith('setp') and '|' in rest:
                        written.add(regs[1])
    return check


@pytest.fixture(params=('symbolic', 'evaluated'))
def mode(request):
    """The test runs twice: loops and conditionals (left to the flags) symbolic, then
    evaluated."""
    sym = request.param == 'symbolic'
    with pbc.scoped_set_flag(pbc.JitFlag.SymbolicLoops, sym), \
            pbc.scoped_set_flag(pbc.JitFlag.SymbolicConditionals, sym):
        yield request.param
