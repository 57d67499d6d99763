"""Every kernel the LLVM backend compiled during this test session also renders as PTX that
ptxas accepts. Named to run last; the record comes from conftest.recorded_kernels."""

import pytest

from pbc.backend import ptx_render

MAX_ASSEMBLED = 20000     # instructions


def test_all_recorded_kernels_assemble_as_ptx(recorded_kernels, ptxas, ptx_functions_checked):
    kernels = list(recorded_kernels.values())
    if not kernels:
        pytest.skip('no kernels were compiled in this session (run with the whole suite)')
    # The giant kernels of stress tests (deep traces: 10^5 ops of kinds that small kernels
    # cover too) are rendered, but assembling them would take most of this test's time.
    giant = [k for k in kernels if len(k.instrs) > MAX_ASSEMBLED]
    for k in giant:
        assert ptx_render.render(k).count('.entry') == 1
    small = sorted((k for k in kernels if len(k.instrs) <= MAX_ASSEMBLED),
                   key=lambda k: len(k.instrs))
    texts = ptxas(((f'k{i}', k) for i, k in enumerate(small)), quick=True)
    assert sum(t.count('.entry') for t in texts) == len(small)
    for k in small:
        if k.calls:
            ptx_functions_checked(ptx_render.render(k))
