"""pbc: a just-in-time compiler for differentiable rendering and other embarrassingly
parallel numeric work. See README.md and docs/."""

from . import (
                       _runtime,
                       detail,
                       llvm,  # noqa: F401  (registers the CPU backend's array types)
                       opt,  # noqa: F401  (pbc.opt.SGD, pbc.opt.Adam)
)
from .ad import *  # noqa: F403  (the AD functions: pbc/ad/__init__.py's __all__)
from .checks import (
                       allclose,
                       assert_allclose,
                       assert_false,
                       assert_true,
)
from .control import hint, if_stmt, loop_stats, while_loop
from .debug import graphviz, whos
from .device_print import format, print  # noqa: A001
from .dispatch import Object, dispatch, switch
from .evaluate import (
                       eval,
                       flush_kernel_cache,
                       flush_malloc_cache,
                       has_backend,
                       kernel_history,
                       kernel_history_clear,
                       schedule,
                       sync_thread,
)
from .flags import JitFlag, flag, scoped_set_flag, set_flag
from .frontend import kernel, syntax
from .legacy_loop import Loop
from .local import Local, alloc_local
from .math import *  # noqa: F403  (sin, cos, exp, log, power, ...)
from .math import power
from .printing import array_repr
from .ravel import ravel, unravel
from .reductions import all, any, count, max, mean, min, none, prod, sum
from .reductions import reduce_op as reduce
from .routines import (
                       ReduceMode,
                       ReduceOp,
                       abs,
                       arange,
                       ceil,
                       clip,
                       compress,
                       copysign,
                       cross,
                       cumsum,
                       dot,
                       e,
                       empty,
                       empty_like,
                       floor,
                       fma,
                       fmax,
                       fmin,
                       four_pi,
                       full,
                       gather,
                       identity,
                       inf,
                       inv_four_pi,
                       inv_log_two,
                       inv_pi,
                       inv_sqrt_four_pi,
                       inv_sqrt_pi,
                       inv_sqrt_two,
                       inv_sqrt_two_pi,
                       inv_two_pi,
                       isfinite,
                       isinf,
                       isnan,
                       lerp,
                       linspace,
                       log_two,
                       lzcnt,
                       make_opaque,
                       maximum,
                       meshgrid,
                       minimum,
                       mul_hi,
                       mulsign,
                       nan,
                       norm,
                       normalize,
                       ones,
                       ones_like,
                       opaque,
                       pi,
                       popcnt,
                       prefix_sum,
                       rcp,
                       reinterpret_array,
                       round,
                       rsqrt,
                       scatter,
                       scatter_add,
                       scatter_reduce,
                       select,
                       sign,
                       sqrt,
                       sqrt_four_pi,
                       sqrt_pi,
                       sqrt_two,
                       sqrt_two_pi,
                       square,
                       squared_norm,
                       subgroup_any,
                       trunc,
                       two_pi,
                       tzcnt,
                       width,
                       zeros,
                       zeros_like,
)
from .tensor_index import slice_index
from .tensor_shape import moveaxis, reshape, swapaxes, transpose
from .traits import (
                       Dynamic,
                       JitBackend,
                       VarType,
                       array_t,
                       backend_v,
                       bool_array_t,
                       depth_v,
                       detached_t,
                       diff_array_t,
                       expr_t,
                       float16_array_t,
                       float32_array_t,
                       float64_array_t,
                       float_array_t,
                       int8_array_t,
                       int32_array_t,
                       int64_array_t,
                       int_array_t,
                       is_arithmetic_v,
                       is_array_v,
                       is_complex_v,
                       is_cuda_v,
                       is_diff_v,
                       is_dynamic_v,
                       is_float_v,
                       is_half_v,
                       is_integral_v,
                       is_jit_v,
                       is_llvm_v,
                       is_mask_v,
                       is_matrix_v,
                       is_quaternion_v,
                       is_signed_v,
                       is_special_v,
                       is_static_array_v,
                       is_struct_v,
                       is_tensor_v,
                       is_unsigned_v,
                       is_vector_v,
                       itemsize_v,
                       leaf_t,
                       mask_t,
                       matrix_t,
                       reinterpret_array_t,
                       replace_shape_t,
                       replace_type_t,
                       scalar_t,
                       shape,
                       size_v,
                       tensor_t,
                       type_v,
                       uint8_array_t,
                       uint32_array_t,
                       uint64_array_t,
                       uint_array_t,
                       value_t,
)
from .vector import det, inverse, trace

VarState = _runtime.VarState
thread_count = _runtime.thread_count
set_thread_count = _runtime.set_thread_count
_runtime.set_hooks(array_repr, power)

__version__ = '0.1.0'
