"""Work spread over forked processes.

llvmlite serializes every call into LLVM with one lock, so within one process LLVM compiles
one module at a time. A batch of many kernels (the targets of an evaluated call) compiles
in parallel only in processes of its own: `run` forks them, each computes its share and
returns the results through a temporary file, and this process computes the rest
meanwhile. Forking shares everything the work needs (the target machine, the IR text) and
costs milliseconds, where starting an interpreter and LLVM would cost a hundred.

A forked child has only the thread that forked it. It must not wait for a lock that
another thread held at the fork: the caller passes the one lock its work takes (`hold`)
and `run` holds it across the forks, so that each child starts owning it; the child does
nothing else but the work, pickling and writing a file, then leaves with os._exit (no
atexit handlers, no buffered output flushed twice). An item that a child did not deliver
(it raised, or the child died) is computed here again, which raises the real error.
"""

import contextlib
import os
import pickle
import signal
import sys
import tempfile
import warnings


def available():
    """Whether `run` may fork (Linux: elsewhere forking without exec is unsafe)."""
    return sys.platform.startswith('linux') and hasattr(os, 'fork')


def balanced(weights, k):
    """The item indices of k shares of about equal weight: the heaviest item first, each to
    the lightest share so far (within 4/3 of the best split)."""
    shares, loads = [[] for _ in range(k)], [0.0] * k
    for i in sorted(range(len(weights)), key=lambda i: -weights[i]):
        s = loads.index(min(loads))
        shares[s].append(i)
        loads[s] += weights[i]
    return [sorted(share) for share in shares]


def run(fn, items, weights, processes, hold=None):
    """[fn(item) for item in items], the items spread over `processes` processes by their
    `weights`: this one and forked children. fn's results must pickle."""
    k = min(processes, len(items))
    if k <= 1 or not available():
        return [fn(item) for item in items]
    shares = balanced(weights, k)
    results = [None] * len(items)
    children, local = [], list(shares[0])
    try:
        with hold if hold is not None else contextlib.nullcontext(), warnings.catch_warnings():
            # (Python 3.12 warns about forking a process with threads; the module docstring
            # says why these children are safe)
            warnings.simplefilter('ignore', DeprecationWarning)
            for share in shares[1:]:
                out = None
                try:
                    out = tempfile.TemporaryFile()
                    pid = os.fork()
                except OSError:            # (no file, memory or process left: do it here)
                    if out is not None:
                        out.close()
                    local += share
                    continue
                if pid == 0:
                    _child(fn, items, share, out)
                children.append((pid, share, out))
        for i in sorted(local):
            results[i] = fn(items[i])
    finally:
        delivered = [(share, _collect(pid, out)) for pid, share, out in children]
    for share, got in delivered:
        for i in share:
            results[i] = got[i] if i in got else fn(items[i])
    return results


def _child(fn, items, share, out):
    """A child's life: the results of its share (up to the first that fails) into `out`."""
    code = 1
    try:
        got = {}
        try:
            for i in share:
                got[i] = fn(items[i])
        except BaseException:
            pass                       # (the parent computes the item again, and raises)
        pickle.dump(got, out)
        out.flush()
        code = 0
    finally:
        os._exit(code)


def _collect(pid, out):
    """{item index: result} that child `pid` delivered ({} if it died), once it has ended."""
    try:
        try:
            _, status = os.waitpid(pid, 0)
            if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
                return {}
        except ChildProcessError:          # (reaped already, SIGCHLD being ignored: the
            pass                           # file holds a whole pickle or less)
        except BaseException:              # (interrupted: the child must not outlive us)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            raise
        out.seek(0)
        try:
            return pickle.load(out)
        except Exception:
            return {}
    finally:
        out.close()
