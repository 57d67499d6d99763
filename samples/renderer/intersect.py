"""Ray tracing inside pbc's kernels: the BVH of bvh.py traversed by a `while` loop that
@pbc.syntax records into the kernel (one loop per lane, no stack: see bvh.py), with the
watertight ray-triangle test of Woop, Benthin and Wald ("Watertight ray/triangle
intersection", JCGT 2013): no ray passes between two triangles that share an edge.

    accel = Accel(scene.triangles)
    hit = accel.ray_intersect(o, d)               # nearest hit: distance, triangle id, ...
    p = accel.position(hit)                       # ... and the point, from its barycentrics
    blocked = accel.ray_test(o, d, t_max)         # any hit closer than t_max (shadow rays)
"""

from typing import NamedTuple

import numpy as np

import pbc

from . import bvh as _bvh
from . import jit

NO_HIT = 0xFFFFFFFF              # the triangle id of a ray that hits nothing
INF = float('inf')
# Far box distances are widened by 1 + 2 gamma(4) (gamma(n) = n eps / (1 - n eps), eps =
# 2^-24), which covers the relative rounding of the slab test (Ize, "Robust BVH ray
# traversal", JCGT 2013), and the boxes by a grid step (_pack_nodes), which covers its
# absolute rounding: no ray misses a box that contains its hit.
ROBUST = 1 + 2 * (4 * 2.0 ** -24) / (1 - 4 * 2.0 ** -24)
GRID = 1 << 16                   # grid coordinates per axis of the boxes' planes
TINY = 1e-30                     # direction components closer to zero are taken as this
LEAF_SHIFT = 29                  # a leaf's link: its first triangle | its count << 29
LEAF_ONE = 1 << LEAF_SHIFT
NEXT_TRIANGLE = 1 - LEAF_ONE + (1 << 32)     # added to a leaf's link: its next triangle
BLOCKED = 0xFFFFFFFF             # where a shadow ray's traversal ends at a hit


def _min(a, b):
    """The smaller of a and b, which are not NaN: one instruction (x86 `minps`), where
    pbc.minimum's NaN rules cost several."""
    return pbc.select(a < b, a, b)


def _max(a, b):
    return pbc.select(a > b, a, b)


def _pick(v, is0, is1):
    """v.x, v.y or v.z per lane, as the masks is0 (x), is1 (y) say (else z)."""
    return pbc.select(is0, v.x, pbc.select(is1, v.y, v.z))


class Hit(NamedTuple):
    """The nearest hits of rays: distance t, triangle id (NO_HIT: none), the barycentric
    weights b1, b2 of its second and third corners (the first's: 1 - b1 - b2), and its
    position in the accelerator's leaf order (NO_HIT: none)."""
    t: 'jit.Float'
    prim: 'jit.UInt32'
    b1: 'jit.Float'
    b2: 'jit.Float'
    slot: 'jit.UInt32'

    @property
    def valid(self) -> 'jit.Bool':
        return self.prim != NO_HIT


class Accel:
    """The BVH of triangles (T, 3, 3), in pbc arrays that the traversal kernels read."""

    def __init__(self, triangles):
        trees = _bvh.build_octants(triangles)
        tree = trees[0]
        t = np.asarray(triangles, dtype=np.float32)[tree.order]
        # (node ids of the 8 copies, below 2^29, must fit a link; a leaf's count, 3 bits)
        self.nodes = len(tree)
        self.stride = 1 << self.nodes.bit_length()        # (> nodes, see _pack_nodes)
        if 8 * self.stride > 1 << 29 or tree.count.max() >= 8:
            raise ValueError(f'Accel: {len(t)} triangles make {self.nodes} nodes, too many for '
                             'node ids below 2^29 in 8 copies (or a leaf holds 8 or more)')
        self.base, self.scale, self.node_data = _pack_nodes(trees, self.stride)
        # A triangle: its corners, each in 16 bytes (x, y, z and an unused word).
        self.tri_data = jit.Float(np.pad(t, ((0, 0), (0, 0), (0, 1))).ravel())
        self.prim = jit.UInt32(tree.order.astype(np.uint32))      # leaf order -> triangle id
        pbc.eval(self.node_data, self.tri_data, self.prim)

    def _corners(self, k, active=True):
        """The corners of the triangles at leaf positions k, as three Array3f."""
        return tuple(jit.Array3f(*pbc.gather(jit.Array4f, self.tri_data, 3 * k + j, active)[:3])
                     for j in range(3))

    def ray_intersect(self, o, d, t_max=INF, active=True, mode=None):
        """The nearest hits (a Hit) of the rays (o, d) at distances in [0, t_max); where
        there is none, or the lane is not `active`, t = t_max (INF by default) and prim =
        NO_HIT. Both sides of a triangle are hit. d need not be of unit length (t counts in
        units of |d|)."""
        t, k, b1, b2 = self._nearest(o, d, jit.Float(t_max), jit.Bool(active), mode)
        found = k != NO_HIT
        return Hit(t, pbc.select(found, pbc.gather(jit.UInt32, self.prim, k, found), NO_HIT),
                   b1, b2, k)

    def ray_test(self, o, d, t_max=INF, active=True, mode=None):
        """Whether the rays (o, d) hit anything at a distance in [0, t_max) (False where the
        lane is not `active`): a traversal that stops at the first hit it finds. (A ray that
        starts on a surface, as one spawned from a corner may start on the wall beside it,
        is blocked by it.)"""
        return self._any(o, d, jit.Float(t_max), jit.Bool(active), mode)

    def position(self, hit):
        """The points of the hits, interpolated from the corners of their triangles, on
        which they lie up to rounding: o + t d can land a little behind the surface (and
        a shadow ray from there escapes through the wall behind it)."""
        v0, v1, v2 = self._corners(hit.slot, hit.valid)
        return v0 * (1 - hit.b1 - hit.b2) + v1 * hit.b1 + v2 * hit.b2

    # Both traversals follow the links of one of the hierarchy's copies without a stack:
    # at a node whose box the ray enters, on to the next node (the first child, or a leaf's
    # miss link), else to the node's miss link. The copy of octant k starts at node
    # k x stride, and the node id whose offset in it is `nodes` is its end: the loops need
    # no per-lane end. A lane that is not active starts at the end.

    @pbc.syntax
    def _any(self, o, d, t_max, active, mode):
        """Whether some triangle is hit at a distance in [0, t_max) (ray_test)."""
        ray = _Ray.of(o, d, self.base, self.scale)
        # A shadow ray, which stops at any hit and gains nothing from an order, reads
        # octant 0's copy (low planes first) and orders each axis's two planes itself: a
        # working set 8 times smaller for the caches (ambient occlusion 0.87-0.97 -> 0.76-0.84
        # s, Zen 3). A hit ends it at BLOCKED, past the end of every copy.
        node = pbc.select(active, jit.UInt32(0), self.nodes)
        while pbc.hint(self._before_end(node), mode=mode, label='bvh'):
            box, link = self._enters(ray, node, t_max, ordered=False)
            k = link & (LEAF_ONE - 1)
            stop = k + pbc.select(box, link >> LEAF_SHIFT, 0)    # (interior nodes: k, none)
            node = pbc.select(box | (link >= LEAF_ONE), node + 1, link)
            while pbc.hint(k < stop, mode=mode, label='leaf'):
                hit = self._test(ray, k, t_max)[0]
                node = pbc.select(hit, BLOCKED, node)
                k = pbc.select(hit, stop, k + 1)
        return node == BLOCKED

    @pbc.syntax
    def _nearest(self, o, d, t_max, active, mode):
        """(t of the nearest hit, its position in leaf order or NO_HIT, and its barycentric
        weights b1, b2) of hits at distances in [0, t_max) (ray_intersect)."""
        ray = _Ray.of(o, d, self.base, self.scale)
        # This ray's copy of the hierarchy: its octant's (the signs of inv_d, as the slab
        # test sees them), whose planes come near ones first.
        inv_d = ray.inv_d
        node = self.stride * (jit.UInt32(inv_d.x < 0) | (jit.UInt32(inv_d.y < 0) << 1)
                              | (jit.UInt32(inv_d.z < 0) << 2)) + pbc.select(active, 0, self.nodes)
        best = jit.UInt32(NO_HIT)
        leaf = jit.UInt32(0)         # a leaf put off: its next triangle | triangles left << 29
        while pbc.hint(self._before_end(node) | (leaf >= LEAF_ONE), mode=mode, label='bvh'):
            searching = self._before_end(node)
            box, link = self._enters(ray, node, t_max, ordered=True)
            is_leaf = link >= LEAF_ONE
            # A leaf that the ray enters is put off, and the search goes on, until every lane
            # of the vector has one to test or has none left to find: then they test their
            # leaves together (Aila and Laine's speculative traversal): 3.4 -> 1.8 leaf
            # iterations per 16 ambient occlusion rays, path tracing 4.3-4.6 -> 4.0-4.4 s
            # (Zen 3). A lane that meets a second leaf waits. (Shadow rays, whose leaves end
            # their search at the first hit, gain nothing from it.)
            enter = is_leaf & box & searching
            wait = enter & (leaf >= LEAF_ONE)
            leaf = pbc.select(enter & ~wait, link, leaf)
            node = pbc.select(searching & ~wait, pbc.select(box | is_leaf, node + 1, link), node)
            ready = ~pbc.subgroup_any(self._before_end(node) & (leaf < LEAF_ONE))
            while pbc.hint(ready & (leaf >= LEAF_ONE), mode=mode, label='leaf'):
                k = leaf & (LEAF_ONE - 1)
                hit, tt, det = self._test(ray, k, t_max)
                best = pbc.select(hit, k, best)
                t_max = pbc.select(hit, tt / det, t_max)
                leaf += NEXT_TRIANGLE
        # The barycentric weights of the hit, by its test again: two values fewer for the
        # loop to carry and merge at each step (and a test per ray more).
        found = best != NO_HIT
        _, v, w, det, _ = ray.frame.test(*(c - o for c in self._corners(best, found)))
        det = pbc.select(found, det, 1.0)
        return t_max, best, v / det, w / det

    def _before_end(self, node):
        """Whether node ids are nodes of their copy, not its end (nor BLOCKED)."""
        return (node & (self.stride - 1)) < self.nodes

    def _enters(self, ray, node, t_max, ordered):
        """(whether the ray enters the box of `node` at a distance below t_max, the node's
        link). `ordered`: the node's copy lists the ray's near planes first; else each
        axis's planes are ordered here."""
        near_xy, near_z_far_x, far_yz, link = pbc.gather(jit.Array4u, self.node_data, node)
        step, start = ray.step, ray.start
        tn = jit.Array3f(_plane(near_xy & 0xFFFF, step.x, start.x),
                         _plane(near_xy >> 16, step.y, start.y),
                         _plane(near_z_far_x & 0xFFFF, step.z, start.z))
        tf = jit.Array3f(_plane(near_z_far_x >> 16, step.x, start.x),
                         _plane(far_yz & 0xFFFF, step.y, start.y),
                         _plane(far_yz >> 16, step.z, start.z))
        if not ordered:
            tn, tf = jit.Array3f(*map(_min, tn, tf)), jit.Array3f(*map(_max, tn, tf))
        # The box's span of the ray, clipped to [0, t_max] (one compare, where testing
        # near <= far, far >= 0 and near < t_max took three and their masks' merging: ambient
        # occlusion 1.21 -> 1.04 s of CPU time, Zen 3; a box that only touches t_max is
        # entered for nothing, as no hit there counts). (No NaN: inv_d is finite, and so are
        # the grid and the origins.)
        near = _max(_max(_max(tn.x, tn.y), tn.z), 0.0)
        far = _min(_min(_min(tf.x, tf.y), tf.z) * ROBUST, t_max)
        return near <= far, link

    def _test(self, ray, k, t_max):
        """(whether the ray hits the triangle at leaf position k at a distance in [0, t_max),
        and that distance as tt / det)."""
        u, v, w, det, tt = ray.frame.test(*(c - ray.o for c in self._corners(k)))
        # t = tt / det in [0, t_max), without dividing (det's sign flips both sides; where
        # det is 0, a point on all three edges, no tt_s is below t_max det_s = 0, or NaN)
        tt_s, det_s = pbc.mulsign(tt, det), pbc.abs(det)
        return _inside(u, v, w) & (tt_s >= 0) & (tt_s < t_max * det_s), tt, det


class _Ray(NamedTuple):
    """A ray as the traversal reads it: its origin, its watertight test's frame, and the
    slab distances of grid plane q along each axis, (base + q scale - o) / d, as the FMA
    q step + start (the grid's margin covers its rounding: see _pack_nodes)."""
    o: 'jit.Array3f'
    frame: '_Shear'
    inv_d: 'jit.Array3f'
    step: 'jit.Array3f'
    start: 'jit.Array3f'

    @staticmethod
    def of(o, d, base, scale):
        safe = jit.Array3f(*(pbc.select(pbc.abs(c) < TINY, pbc.copysign(TINY, c), c)
                             for c in (d.x, d.y, d.z)))
        inv_d = 1.0 / safe
        return _Ray(o, _Shear.of(d), inv_d, jit.Array3f(*scale) * inv_d,
                    (jit.Array3f(*base) - o) * inv_d)


class _Shear(NamedTuple):
    """The watertight test's frame of rays (Woop, Benthin and Wald): the largest direction
    component becomes z, and x, y keep the winding (swapped where that component is
    negative), then x and y are sheared by sx, sy so that the ray runs along z. As rows of
    a matrix (mx, my, mz) applied to points relative to the ray's origin: mz picks the
    component that becomes z, mx is the one-hot row of x less sx mz, my likewise. Products
    in place of per-lane component selects: the selects' masks, defined outside the loops,
    cost several shuffles at each use on processors without AVX-512. (With the one-hot
    rows, p.x - sx p.z is what it was, or its fused form: a vertex's coordinates are the
    same for every triangle that shares it, which is what keeps the test watertight.)"""
    mx: 'jit.Array3f'
    my: 'jit.Array3f'
    mz: 'jit.Array3f'
    sz: 'jit.Float'

    @staticmethod
    def of(d):
        ad = pbc.abs(d)
        z0 = (ad.x >= ad.y) & (ad.x >= ad.z)
        z1 = ~z0 & (ad.y >= ad.z)
        x0, x1 = ~z0 & ~z1, z0                 # x = z + 1 (mod 3)
        y0, y1 = z1, ~z0 & ~z1                 # y = z + 2 (mod 3)
        dz = _pick(d, z0, z1)
        swap = dz < 0
        x0, y0 = pbc.select(swap, y0, x0), pbc.select(swap, x0, y0)
        x1, y1 = pbc.select(swap, y1, x1), pbc.select(swap, x1, y1)
        sx, sy = _pick(d, x0, x1) / dz, _pick(d, y0, y1) / dz
        mz = _one_hot(z0, z1)
        return _Shear(_one_hot(x0, x1) - sx * mz, _one_hot(y0, y1) - sy * mz, mz, 1.0 / dz)

    def test(self, a, b, c):
        """The edge functions u, v, w of the triangle whose corners relative to the ray's
        origin are a, b, c, their sum det and the scaled distance tt (t = tt / det)."""
        (ax, ay, az), (bx, by, bz), (cx, cy, cz) = (
            tuple(pbc.fma(p.x, m.x, pbc.fma(p.y, m.y, p.z * m.z))
                  for m in (self.mx, self.my, self.mz)) for p in (a, b, c))
        u = cx * by - cy * bx
        v = ax * cy - ay * cx
        w = bx * ay - by * ax
        return u, v, w, u + v + w, (u * az + v * bz + w * cz) * self.sz


def _one_hot(is0, is1):
    """(1, 0, 0), (0, 1, 0) or (0, 0, 1) per lane, as the masks say (see _pick)."""
    return jit.Array3f(pbc.select(is0, 1.0, 0.0), pbc.select(~is0 & is1, 1.0, 0.0),
                       pbc.select(is0 | is1, 0.0, 1.0))


def _inside(u, v, w):
    """Whether the point is inside (or on) the triangle: its edge functions share a sign
    (-0 counting as either). Two compares where one per sign and function took six, and
    their masks' merging more (no NaN: the edge functions of finite corners are finite)."""
    return (_min(_min(u, v), w) >= 0) | (_max(_max(u, v), w) <= 0)


def _plane(q, step, start):
    """The distance along a ray to the plane of 16-bit grid coordinate q (a UInt32 below
    2^16: its conversion as an Int32 is one instruction, an unsigned one several)."""
    return pbc.fma(jit.Float(jit.Int32(q)), step, start)


def _pack_nodes(trees, stride):
    """(base, scale, words) of the hierarchy's 8 octant copies (bvh.build_octants) for the
    traversal: per axis, a grid base + q scale (q = 0 ... 2^16 - 1, float32) over the root's
    box, and per node four 32-bit words (a UInt32 array, 16 bytes per node): the 16-bit grid
    coordinates of the box's planes that rays of its copy's octant enter by (near x, y, z:
    the low ones where the direction is positive), then of those they leave by (far x, y,
    z), then a link: for a leaf, its first triangle | its triangle count << 29; for an
    interior node, its miss link. Node ids count across the copies: octant k's from
    k x stride (a power of two above the node count, so that a copy's end is the id whose
    offset in it is the node count; the rest of each stride is never read).

    Each box is rounded outwards to the grid and widened by a further grid step (2^-16 of
    the scene's extent), a margin far larger than the rounding of the slab distances' FMA
    in the kernel, which a ray starting on a box face could otherwise miss."""
    root_lo, root_hi = trees[0].lo[0].astype(np.float64), trees[0].hi[0].astype(np.float64)
    extent = root_hi - root_lo
    extent = np.maximum(extent, max(extent.max(), 1.0) * 2.0 ** -20)     # (flat scenes)
    scale = (extent / (GRID - 4)).astype(np.float32)
    base = (root_lo - 2 * scale.astype(np.float64)).astype(np.float32)
    s, b = scale.astype(np.float64), base.astype(np.float64)
    n = len(trees[0])
    words = np.zeros((len(trees), stride, 4), np.uint32)
    for octant, tree in enumerate(trees):
        lo = np.clip(np.floor((tree.lo - b) / s) - 1, 0, GRID - 1).astype(np.uint32)
        hi = np.clip(np.ceil((tree.hi - b) / s) + 1, 0, GRID - 1).astype(np.uint32)
        negative = np.array([octant >> axis & 1 for axis in range(3)], bool)
        near, far = np.where(negative, hi, lo), np.where(negative, lo, hi)
        link = np.where(tree.count > 0, tree.first | (tree.count << np.uint32(29)),
                        tree.miss + np.uint32(octant * stride))
        words[octant, :n] = np.stack([near[:, 0] | near[:, 1] << 16,
                                      near[:, 2] | far[:, 0] << 16,
                                      far[:, 1] | far[:, 2] << 16, link], axis=1)
    return tuple(base.tolist()), tuple(scale.tolist()), jit.UInt32(words.ravel())


def brute_force(triangles, o, d, t_max=np.inf, chunk=256):
    """The reference for tests: nearest hits (t or INF, triangle id or NO_HIT) of rays o, d
    ((R, 3) NumPy; t_max a number or one per ray) against every triangle, by the same
    watertight test in float64, `chunk` rays at a time."""
    tri = np.asarray(triangles, np.float32).astype(np.float64)
    o, d = np.asarray(o, np.float64), np.asarray(d, np.float64)
    t_max = np.broadcast_to(np.asarray(t_max, np.float64), (len(o),))
    t_out = np.full(len(o), np.inf)
    prim_out = np.full(len(o), NO_HIT, np.uint32)
    for s in range(0, len(o), chunk):
        t, prim = _brute_force(tri, o[s:s + chunk], d[s:s + chunk], t_max[s:s + chunk])
        t_out[s:s + chunk], prim_out[s:s + chunk] = t, prim
    return t_out, prim_out


def _brute_force(tri, o, d, t_max):
    r = np.arange(len(d))
    kz = np.argmax(np.abs(d), axis=1)
    kx, ky = (kz + 1) % 3, (kz + 2) % 3
    swap = d[r, kz] < 0
    kx, ky = np.where(swap, ky, kx), np.where(swap, kx, ky)
    dz = d[r, kz]
    sx, sy, sz = d[r, kx] / dz, d[r, ky] / dz, 1 / dz
    rel = tri[None, :, :, :] - o[:, None, None, :]             # (R, T, 3 corners, 3)

    def pick(k):
        return np.take_along_axis(rel, k[:, None, None, None], axis=3)[..., 0]

    pz = pick(kz)
    px = pick(kx) - sx[:, None, None] * pz
    py = pick(ky) - sy[:, None, None] * pz
    (ax, bx, cx), (ay, by, cy) = np.moveaxis(px, 2, 0), np.moveaxis(py, 2, 0)
    u, v, w = cx * by - cy * bx, ax * cy - ay * cx, bx * ay - by * ax
    inside = ((u >= 0) & (v >= 0) & (w >= 0)) | ((u <= 0) & (v <= 0) & (w <= 0))
    det = u + v + w
    with np.errstate(divide='ignore', invalid='ignore'):
        t = (u * pz[..., 0] + v * pz[..., 1] + w * pz[..., 2]) * sz[:, None] / det
    t = np.where(inside & (det != 0) & (t >= 0) & (t < t_max[:, None]), t, np.inf)
    prim = np.argmin(t, axis=1)
    t_hit = t[r, prim]
    return t_hit, np.where(np.isfinite(t_hit), prim, NO_HIT)
