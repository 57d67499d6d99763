"""pbc/backend/cuda_driver.py's ctypes binding, called against a stand-in libcuda built
from tests/data/fake_libcuda.c: what crosses into C (pointers written back, JIT options and
their values, a launch's grid and parameters) is what cuda.h says."""

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

from pbc.backend import cuda_driver

SOURCE = os.path.join(os.path.dirname(__file__), 'data', 'fake_libcuda.c')


@pytest.fixture(scope='module')
def fake_lib(tmp_path_factory):
    cc = shutil.which('cc') or shutil.which('gcc')
    if cc is None:
        pytest.skip('no C compiler to build the stand-in libcuda')
    path = str(tmp_path_factory.mktemp('libcuda') / 'libcuda.so.1')
    subprocess.run([cc, '-shared', '-fPIC', '-O1', SOURCE, '-o', path], check=True)
    return path


def test_the_driver_calls_pass_what_cuda_h_says(fake_lib):
    drv = cuda_driver.Driver(fake_lib)
    lib = ctypes.CDLL(fake_lib)
    assert drv.version() == 13000 and drv.device_count() == 1
    dev = drv.device(0)
    assert drv.device_name(dev) == 'Fake GPU' and drv.compute_capability(dev) == (9, 0)
    assert drv.attribute(dev, cuda_driver.ATTRIBUTE_MULTIPROCESSOR_COUNT) == 132
    ctx = drv.retain_primary_context(dev)
    drv.push_context(ctx)
    stream = drv.create_stream()
    data = np.arange(16, dtype=np.uint32)
    a, b = drv.mem_alloc(64), drv.mem_alloc(64)
    drv.memcpy_htod(a, data.ctypes.data, 64, stream)
    drv.memcpy_dtod(b, a, 64, stream)
    back = np.zeros(16, dtype=np.uint32)
    drv.memcpy_dtoh(back.ctypes.data, b, 64, stream)
    drv.synchronize(stream)
    assert back.tolist() == data.tolist()
    module = drv.load_module('.version 8.0\n// kernel text')
    lib.fake_last_ptx.restype = ctypes.c_char_p
    assert lib.fake_last_ptx() == b'.version 8.0\n// kernel text'
    assert lib.fake_last_opt_level() == 4
    function = drv.get_function(module, 'kernel')
    drv.launch(function, 7, 256, stream, (a, 2**40 + 3))
    launch = (ctypes.c_uint64 * 10).in_dll(lib, 'fake_last_launch')
    assert list(launch) == [7, 1, 1, 256, 1, 1, 0, stream, a, 2**40 + 3]
    drv.unload_module(module)
    drv.mem_free(a)
    drv.mem_free(b)
    drv.destroy_stream(stream)
    assert drv.pop_context() == ctx
    drv.release_primary_context(dev)
    assert lib.fake_depth() == 0 and lib.fake_retained() == 0


def test_driver_errors_name_the_call_and_the_failure(fake_lib):
    drv = cuda_driver.Driver(fake_lib)
    with pytest.raises(cuda_driver.CUDAError, match=r'cuMemAlloc_v2 failed: '
                                                    r'CUDA_ERROR_INVALID_CONTEXT \(201\)'):
        drv.mem_alloc(64)                             # (no current context)
    ctx = drv.retain_primary_context(drv.device(0))
    drv.push_context(ctx)
    with pytest.raises(cuda_driver.OutOfMemory, match='CUDA_ERROR_OUT_OF_MEMORY'):
        drv.mem_alloc(1 << 41)
    with pytest.raises(cuda_driver.CUDAError, match=r'(?s)CUDA_ERROR_INVALID_PTX \(218\)'
                                                    r'.*line 3; REJECT'):
        drv.load_module('REJECT')
    with pytest.raises(cuda_driver.CUDAError, match='CUresult 101'):
        drv.device(3)                                 # (an error without a name)
    drv.pop_context()
    with pytest.raises(OSError):
        cuda_driver.Driver('/nonexistent/libcuda.so.1')
