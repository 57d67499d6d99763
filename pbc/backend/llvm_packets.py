"""Gathers of neighbouring elements, rendered as one 16-byte load per lane (LLVM backend).

Kernels often gather several consecutive elements per lane: the components of a vector
(`pbc.gather(Array4f, source, i)` reads source[4 i + k]), the fields of a record stored
side by side. An x86 gather costs about as much per element whatever the element's size,
and without AVX-512 it is slow: each element is a load of its own, and the gather's mask
must be widened for it. Where a lane's elements lie within 16 bytes, one load of those 16
bytes per lane and a transposition of the rows loaded into columns (x86's unpack
shuffles, eight per eight lanes of four 32-bit elements) read them all. In a loop of
dependent steps that each read a record of four 32-bit words per lane: 1.6-2.7 -> 1.2-1.7
ns per lane and step (2 threads, AMD EPYC Zen 3); the sample renderer's ambient occlusion,
whose BVH traversal reads a node's four words per step: 1.01-1.05 -> 0.85-0.97 s.

`packets(kernel)` finds the gathers that read one buffer under one mask at index i + k,
where i is a 32-bit index times 2^s (a literal) and k < 2^s (0 for i itself): i is then
at most 2^32 - 2^s, so no i + k wraps around and they read consecutive elements. Of those
in one basic block, it groups the ones whose k lie within 16 bytes; `render_packet` loads
a group where its first gather was. Reads stay exact: a lane loads its packet only where
the mask holds and the packet's first index is in bounds (buffers are padded by at least
64 bytes, see _rt_graph.pxi, so the rest of the packet can be read), and each gather's
lanes whose index is out of bounds read 0. Where the buffer holds whole records (its size a
multiple of an aligned block that holds the packet: Packet.block), a packet that starts in
bounds is in bounds whole, and a branch on that, the same for every vector of a launch,
spares the gathers their own tests (ambient occlusion, whose traversal reads nodes and
triangle corners as records: 1.34 -> 1.27 s of CPU time, Zen 3).
"""

from typing import NamedTuple

PACKET_BYTES = 16
ELEMENT_BYTES = {'int32': 4, 'uint32': 4, 'float32': 4, 'int64': 8, 'uint64': 8, 'float64': 8}
# Ops that the renderer writes without starting another basic block or function (besides
# its template ops): a packet is loaded where its first gather was, which must be in the
# block of all of them, and before no scatter (which starts a region of its own).
STRAIGHT = frozenset(('literal', 'counter', 'load', 'load1', 'ptr', 'lane_ptr', 'store',
                      'cast', 'bitcast', 'gather'))


class Packet(NamedTuple):
    base: int           # register of the index i of the gathers (each reads i + k)
    first: int          # k of the packet's first element
    count: int          # elements per packet (PACKET_BYTES of them)
    members: tuple      # ((gather register, its k), ...)
    # A power of two g that divides i and whose aligned blocks of g elements hold all the
    # members together (0: none): where it divides the buffer's size too, a packet that
    # starts in bounds lies in bounds whole, and its gathers need no bounds test of their own.
    block: int


class PacketCode(NamedTuple):
    decls: list         # the module's declarations it needs
    lines: list         # its IR lines
    block: str          # the basic block it ends in (it branches)


def packets(kernel, templates):
    """{register of the first gather of each packet: Packet, and of its others: None}.
    templates: the ops that the renderer writes as template lines (no blocks)."""
    instrs = kernel.instrs
    groups = {}
    region = 0
    for reg, ins in enumerate(instrs):
        if ins.op not in STRAIGHT and ins.op not in templates:
            region += 1
            continue
        if ins.op != 'gather' or ins.type not in ELEMENT_BYTES or \
                instrs[ins.args[0]].op != 'ptr':
            continue
        ptr, index, mask = ins.args
        base, k = index, 0
        add = instrs[index]
        if add.op == 'add':
            for a, b in (add.args, add.args[::-1]):
                if instrs[b].op == 'literal':
                    base, k = a, instrs[b].literal
                    break
        stride = _stride(instrs, base)
        if k < stride:
            groups.setdefault((region, ptr, mask, base, ins.type, stride), []).append((k, reg))
    found = {}
    for (_, _, _, base, type_, stride), members in groups.items():
        count = PACKET_BYTES // ELEMENT_BYTES[type_]
        members.sort()
        while members:
            first = members[0][0]
            chunk = [m for m in members if m[0] < first + count]
            members = members[len(chunk):]
            if len(chunk) < 2:
                continue
            regs = sorted(reg for _, reg in chunk)
            found[regs[0]] = Packet(base, first, count, tuple((reg, k) for k, reg in chunk),
                                    _block(first, chunk[-1][0], stride))
            found.update(dict.fromkeys(regs[1:]))
    return found


def _stride(instrs, reg):
    """2^s where instruction `reg` is a 32-bit index times 2^s (a mul or shl by a literal),
    else 0. Such an index is at most 2^32 - 2^s, so adding k < 2^s to it does not wrap
    around: the gathers at i + k then read consecutive elements."""
    ins = instrs[reg]
    if ins.op == 'shl' and instrs[ins.args[1]].op == 'literal':
        return 1 << instrs[ins.args[1]].literal if instrs[ins.args[1]].literal < 32 else 0
    if ins.op == 'mul':
        for b in ins.args:
            value = instrs[b].literal if instrs[b].op == 'literal' else 0
            if value and value & (value - 1) == 0:
                return value
    return 0


def _block(first, last, stride):
    """Packet.block of members first .. last of an index that is a multiple of stride."""
    g = 1
    while g <= stride:
        if first // g == last // g:
            return g
        g *= 2
    return 0


def render_packet(r, p, base, mask, slot, T, W):
    """The PacketCode that defines the gathers of Packet p (registers %r<reg>): `base` and
    `mask` name their index i and mask, `slot` the parameter slot of their buffer (its
    size: %sz<slot>, or %p<slot + 1>.t as a scalar), T is their element type, W the lanes,
    r a prefix for temporaries and labels. (Indices are computed here from i: a gather's
    own may be defined after the first.)"""
    n = p.count
    V32, VT, M = f'<{W} x i32>', f'<{W} x {T}>', f'<{W} x i1>'
    # Per lane, how many of the elements from i on are in bounds, up to the packet's end:
    # min(size - i, first + n), saturating (0 on masked lanes). The element at i + k is
    # read where that exceeds k.
    sat, umin = f'usub.sat.v{W}i32', f'umin.v{W}i32'
    decls = [f'declare {V32} @llvm.{sat}({V32}, {V32})',
             f'declare {V32} @llvm.{umin}({V32}, {V32})']
    lines = [f'  {r}.left = call {V32} @llvm.{sat}({V32} %sz{slot}, {V32} {base})',
             f'  {r}.few = call {V32} @llvm.{umin}({V32} {r}.left, '
             f'{V32} splat (i32 {p.first + n}))',
             f'  {r}.n = select {M} {mask}, {V32} {r}.few, {V32} zeroinitializer',
             # Lanes whose packet starts in bounds (the others load the packet at index 0).
             f'  {r}.ok = icmp ugt {V32} {r}.n, splat (i32 {p.first})']
    start = base
    if p.first:
        lines.append(f'  {r}.i = add {V32} {base}, splat (i32 {p.first})')
        start = f'{r}.i'
    lines.append(f'  {r}.s = select {M} {r}.ok, {V32} {start}, {V32} zeroinitializer')
    # (Each lane's address from a 32-bit element offset: x86 scales it in the load, where
    # 64-bit vector addresses would cost a widening, a shift and an add per 4 lanes.)
    P = f'<{n} x {T}>'
    for j in range(W):
        lines += [f'  {r}.e{j} = extractelement {V32} {r}.s, i32 {j}',
                  f'  {r}.z{j} = zext i32 {r}.e{j} to i64',
                  f'  {r}.a{j} = getelementptr {T}, ptr %p{slot}, i64 {r}.z{j}',
                  f'  {r}.l{j} = load {P}, ptr {r}.a{j}, align {PACKET_BYTES // n}']
    columns = [[] for _ in range(n)]
    for b in range(0, W, 2 * n):
        for k, column in enumerate(_transpose(lines, f'{r}.{b}', [f'{r}.l{b + j}'
                                                                  for j in range(2 * n)], T)):
            columns[k].append(column)
    columns = {reg: _concatenate(lines, f'{r}.k{k}', columns[k - p.first], T, 2 * n)
               for reg, k in p.members}

    def tested(suffix):
        """Each member (as %r<reg><suffix>): its column where its element is in bounds."""
        return [line for reg, k in p.members for line in (
            f'  %r{reg}.m = icmp ugt {V32} {r}.n, splat (i32 {k})',
            f'  %r{reg}{suffix} = select {M} %r{reg}.m, {VT} {columns[reg]}, '
            f'{VT} zeroinitializer')]

    if not p.block:
        return PacketCode(decls, lines + tested(''), None)
    # Where the buffer's size is a multiple of the block (a uniform branch), the lanes that
    # start in bounds read every member: one test for all of them.
    label = r.lstrip('%')
    lines += [f'  {r}.sa = and i32 %p{slot + 1}.t, {p.block - 1}',
              f'  {r}.al = icmp eq i32 {r}.sa, 0',
              f'  br i1 {r}.al, label %{label}.whole, label %{label}.part',
              f'{label}.whole:']
    lines += [f'  %r{reg}.w = select {M} {r}.ok, {VT} {columns[reg]}, {VT} zeroinitializer'
              for reg, _ in p.members]
    lines += [f'  br label %{label}.join', f'{label}.part:', *tested('.p'),
              f'  br label %{label}.join', f'{label}.join:']
    lines += [f'  %r{reg} = phi {VT} [ %r{reg}.w, %{label}.whole ], [ %r{reg}.p, %{label}.part ]'
              for reg, _ in p.members]
    return PacketCode(decls, lines, f'{label}.join')


def _shuffle(lines, name, x, y, T, order, width):
    lines.append(f'  {name} = shufflevector <{width} x {T}> {x}, <{width} x {T}> {y}, '
                 f'<{len(order)} x i32> <{", ".join(f"i32 {i}" for i in order)}>')
    return name


def _transpose(lines, r, packets, T):
    """The columns (one vector of 2n lanes per element) of 2n packets of n elements: rows j
    and j + n side by side in one 32-byte vector, then each 16-byte half transposed by the
    shuffles of x86's unpack instructions."""
    n = len(packets) // 2
    rows = [_shuffle(lines, f'{r}.row{j}', packets[j], packets[j + n], T, range(2 * n), n)
            for j in range(n)]
    R = 2 * n
    if n == 2:                                         # (unpcklpd / unpckhpd)
        return [_shuffle(lines, f'{r}.c0', *rows, T, (0, 4, 2, 6), R),
                _shuffle(lines, f'{r}.c1', *rows, T, (1, 5, 3, 7), R)]
    lo, hi = (0, 8, 1, 9, 4, 12, 5, 13), (2, 10, 3, 11, 6, 14, 7, 15)     # (unpckl/hps)
    t = [_shuffle(lines, f'{r}.t{2 * i + h}', rows[2 * i], rows[2 * i + 1], T, order, R)
         for i in (0, 1) for h, order in enumerate((lo, hi))]
    lo, hi = (0, 1, 8, 9, 4, 5, 12, 13), (2, 3, 10, 11, 6, 7, 14, 15)     # (unpckl/hpd)
    return [_shuffle(lines, f'{r}.c{2 * i + h}', t[i], t[i + 2], T, order, R)
            for i in (0, 1) for h, order in enumerate((lo, hi))]


def _concatenate(lines, r, parts, T, width):
    """One vector of the vectors `parts` (a power of two of them, each of `width`
    elements), in order."""
    level = 0
    while len(parts) > 1:
        parts = [_shuffle(lines, f'{r}.j{level}.{i}', parts[i], parts[i + 1], T,
                          range(2 * width), width) for i in range(0, len(parts), 2)]
        width *= 2
        level += 1
    return parts[0]
