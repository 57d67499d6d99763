"""Environment settings, read once at import. The only module that reads os.environ."""

import os

DEBUG = os.environ.get('PBC_DEBUG', '') not in ('', '0')
CACHE_DIR = os.environ.get('PBC_CACHE_DIR') or os.path.join(
    os.path.expanduser('~'), '.cache', 'pbc')
# Bumped whenever rendering or the kernel ABI changes meaning for the same IR text.
CACHE_VERSION = 2          # 2: small code model, PIC, linked by JITLink
# Inline every symbolic call target into the kernel and optimize it with LLVM's O2 (see
# backend/llvm_render.py and llvm_jit.py).
INLINE_CALLS = os.environ.get('PBC_INLINE_CALLS', '') not in ('', '0')
# The CUDA driver library pbc.cuda loads (pbc/backend/cuda_driver.py): the system's
# libcuda.so.1 unless this names another.
LIBCUDA = os.environ.get('PBC_LIBCUDA') or 'libcuda.so.1'
