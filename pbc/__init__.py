"""pbc: a just-in-time compiler for differentiable rendering and other embarrassingly
parallel numeric work. See README.md and docs/."""

from . import (
                       _runtime,
                       llvm,  # noqa: F401  (registers the CPU backend's array types)
)
from .control import Loop, hint, if_stmt, loop_stats, while_loop
from .debug import graphviz, whos
from .device_print import format, print  # noqa: A001
from .dispatch import Object, dispatch, switch
from .evaluate import (
                       eval,
                       flush_kernel_cache,
                       kernel_history,
                       kernel_history_clear,
                       schedule,
                       sync_thread,
)
from .flags import JitFlag, flag, scoped_set_flag, set_flag
from .frontend import kernel, syntax
from .math import *  # noqa: F403  (sin, cos, exp, log, power, ...)
from .math import power
from .printing import array_repr
from .routines import (
                       ReduceOp,
                       abs,
                       all,
                       any,
                       arange,
                       ceil,
                       clip,
                       compress,
                       copysign,
                       count,
                       cross,
                       cumsum,
                       dot,
                       empty,
                       floor,
                       fma,
                       full,
                       gather,
                       inf,
                       isfinite,
                       isinf,
                       isnan,
                       lerp,
                       linspace,
                       lzcnt,
                       make_opaque,
                       max,
                       maximum,
                       mean,
                       meshgrid,
                       min,
                       minimum,
                       mul_hi,
                       mulsign,
                       nan,
                       none,
                       norm,
                       normalize,
                       ones,
                       opaque,
                       pi,
                       popcnt,
                       prefix_sum,
                       prod,
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
                       square,
                       squared_norm,
                       sum,
                       trunc,
                       tzcnt,
                       width,
                       zeros,
)
from .vector import transpose

thread_count = _runtime.thread_count
flush_malloc_cache = _runtime.flush_malloc_cache
set_thread_count = _runtime.set_thread_count
_runtime.set_hooks(array_repr, power)

__version__ = '0.1.0'
