"""Debugging aids: whos() lists live variables and memory; graphviz() draws a trace."""

import struct

from . import _runtime


def _literal_text(tname, bits):
    if tname == 'float32':
        return '%g' % struct.unpack('<f', struct.pack('<I', bits & 0xFFFFFFFF))[0]
    if tname == 'float64':
        return '%g' % struct.unpack('<d', struct.pack('<Q', bits))[0]
    return str(bits)


def whos(print_table=True):
    """Prints the variables that Python holds (id, type, size, refs, state, bytes) and returns
    {'variables': live variable count, 'memory': bytes in use, 'peak_memory': bytes,
    'cached_memory': freed bytes kept for reuse (see pbc.flush_malloc_cache),
    'device_memory', 'device_cached_memory': the same on the CUDA device}. Buffers of
    2 MiB and more count in whole huge pages, as they take."""
    from .evaluate import _backends
    mem, peak, count, cached = _runtime.memory_usage()
    pools = [be.memory for be in _backends.values() if be.memory is not None]
    device = sum(p.live_bytes for p in pools), sum(p.cached_bytes for p in pools)
    if print_table:
        rows = ['  ID        Type       Size       Refs  State']
        for i in _runtime.live_variables():
            op, tname, size, deps, lit, extra, addr, ref_ext, ref_int = _runtime.var_info(i)
            if ref_ext:
                if op == 'data':
                    state = {'host': 'evaluated', 'device': 'evaluated (device)'}[
                        _runtime.variable_location(i)]
                else:
                    state = 'literal ' + _literal_text(tname, lit) if op == 'literal' else op
                rows.append(f'  {i:<9} {tname:<10} {size:<10} {ref_ext:<5} {state}')
        rows.append(f'  -- {count} variables, {mem / 2**20:.2f} MiB in use, '
                    f'{peak / 2**20:.2f} MiB peak, {cached / 2**20:.2f} MiB cached --')
        if pools:
            rows.append(f'  -- device: {device[0] / 2**20:.2f} MiB in use, '
                        f'{device[1] / 2**20:.2f} MiB cached --')
        print('\n'.join(rows))
    return {'variables': count, 'memory': mem, 'peak_memory': peak, 'cached_memory': cached,
            'device_memory': device[0], 'device_cached_memory': device[1]}


def graphviz(*arrays):
    """The trace graph behind the given arrays as Graphviz dot text."""
    from .tree import leaves
    lines = ['digraph pbc {', '  rankdir=BT;', '  node [shape=box, fontname=monospace];']
    seen, stack = set(), [leaf.index for leaf in leaves(arrays) if leaf.index]
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        op, tname, size, deps, lit, extra, addr, ref_ext, ref_int = _runtime.var_info(i)
        label = f'#{i} {op}' + (f' {_literal_text(tname, lit)}' if op == 'literal' else '')
        color = {'literal': 'palegreen', 'data': 'lightblue'}.get(op, 'white')
        lines.append(f'  n{i} [label="{label}\\n{tname}[{size}]", style=filled, '
                     f'fillcolor={color}];')
        for k, d in enumerate(deps):
            lines.append(f'  n{d} -> n{i} [label="{k}"];')
            stack.append(d)
    lines.append('}')
    return '\n'.join(lines)
