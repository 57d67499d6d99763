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
    'cached_memory': freed bytes kept for reuse (see pbc.flush_malloc_cache)}. Buffers of
    2 MiB and more count in whole huge pages, as they take."""
    mem, peak, count, cached = _runtime.memory_usage()
    if print_table:
        rows = ['  ID        Type       Size       Refs  State']
        for i in _runtime.live_variables():
            op, tname, size, deps, lit, extra, addr, ref_ext, ref_int = _runtime.var_info(i)
            if ref_ext:
                state = 'evaluated' if op == 'data' else (
                    'literal ' + _literal_text(tname, lit) if op == 'literal' else op)
                rows.append(f'  {i:<9} {tname:<10} {size:<10} {ref_ext:<5} {state}')
        rows.append(f'  -- {count} variables, {mem / 2**20:.2f} MiB in use, '
                    f'{peak / 2**20:.2f} MiB peak, {cached / 2**20:.2f} MiB cached --')
        print('\n'.join(rows))
    return {'variables': count, 'memory': mem, 'peak_memory': peak, 'cached_memory': cached}


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
