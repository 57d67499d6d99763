# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""pbc's trace runtime: the variable graph, its optimizations at node creation, the
Python-visible operator path, memory and the multi-core kernel trampoline.

This module imports nothing from pbc. It is split into include files by concern:
  _rt_graph.pxi   node arena, reference counting, value numbering, side-effect queue
  _rt_device.pxi  device memory (CUDA): where a buffer lives, moves and copies
  _rt_fold.pxi    constant folding and algebraic simplification (bit-exact with kernels)
  _rt_ops.pxi     typed op construction: promotion, size checks, gather/scatter
  _rt_array.pxi   ArrayBase, the Cython operator path of every JIT array class
  _rt_vector.pxi  static vectors' components and their componentwise operators
  _rt_memory.pxi  gathers and scatters, copy-on-write, Debug-mode bounds checks
  _rt_loop.pxi    symbolic loops: scopes of recorded loop bodies, the side-effect mask stack
  _rt_call.pxi    symbolic calls: dispatch targets recorded in scopes of their own
  _rt_launch.pxi  eval support: groups, their keys, outputs, the kernel trampoline
  _rt_horizontal.pxi  reductions, prefix sums and compress on the same thread pool
  _rt_dlpack.pxi  DLPack capsules of device memory, made and taken
  ad/tape.pxi     the AD graph beside the trace: nodes, scopes, traversal order
  _rt_template.pxi  library functions' traces recorded once and replayed
  _pool.h         the thread pool (C)
  _partition.h    the vector passes of partition (C, AVX-512)
"""

from cpython.object cimport PyObject, PyTypeObject
from libc.stdint cimport (int32_t, uint8_t, uint16_t, uint32_t, int64_t, uint64_t,
                          uintptr_t)

include "_rt_graph.pxi"
include "_rt_device.pxi"
include "_rt_fold.pxi"
include "_rt_ops.pxi"
include "_rt_array.pxi"
include "_rt_vector.pxi"
include "ad/tape.pxi"
include "_rt_template.pxi"
include "_rt_memory.pxi"
include "_rt_loop.pxi"
include "_rt_call.pxi"
include "_rt_launch.pxi"
include "_rt_horizontal.pxi"
include "_rt_dlpack.pxi"
