"""A bounding volume hierarchy over triangles, built on the host with NumPy by the surface
area heuristic over binned centroids, and laid out for traversal without a stack.

Nodes are stored in depth-first order: an interior node's first child comes right after it,
and the node after a whole subtree is where traversal continues once that subtree is done
or skipped, its *miss link* (Smits, "Efficiency issues for ray tracing", 1998). A ray then
needs no stack: at node i it goes to i + 1 if it hits an interior node's box, and to
miss[i] otherwise (or after testing a leaf's triangles); miss[root] is the node count, the
end. The price is an order of children fixed in advance rather than chosen per ray:
build_octants lays the hierarchy out once per octant of ray directions, each with the child
that such rays meet first first. The lanes of a SIMD vector, which each follow their own
path, gain more from the small loop state.
"""

from dataclasses import dataclass

import numpy as np

LEAF_SIZE = 2          # triangles per leaf, at most (below 8: see intersect.Accel)
BINS = 16              # centroid bins per axis for the surface area heuristic


@dataclass
class BVH:
    """lo, hi: (N, 3) float32 node bounds; first, count: (N,) uint32, a leaf's triangles
    are order[first:first + count] (count 0: an interior node); miss: (N,) uint32, the node
    after the subtree (N: none); order: the triangle ids in leaf order."""
    lo: np.ndarray
    hi: np.ndarray
    first: np.ndarray
    count: np.ndarray
    miss: np.ndarray
    order: np.ndarray

    def __len__(self):
        return len(self.first)


def _area(lo, hi):
    """Half the surface area of boxes (..., 3) (0 for empty boxes, where lo > hi)."""
    e = np.maximum(hi - lo, 0)
    return e[..., 0] * e[..., 1] + e[..., 1] * e[..., 2] + e[..., 2] * e[..., 0]


def _best_split(centroids, tri_lo, tri_hi):
    """(axis, threshold) of the binned split of least SAH cost that leaves triangles on
    both sides (left: centroid bin <= threshold), or None if every centroid is the same."""
    cmin, cmax = centroids.min(axis=0), centroids.max(axis=0)
    best = None
    for axis in range(3):
        extent = cmax[axis] - cmin[axis]
        if extent <= 0:
            continue
        b = np.minimum(((centroids[:, axis] - cmin[axis]) / extent * BINS).astype(np.int64),
                       BINS - 1)
        count = np.bincount(b, minlength=BINS)
        lo = np.full((BINS, 3), np.inf)
        hi = np.full((BINS, 3), -np.inf)
        np.minimum.at(lo, b, tri_lo)
        np.maximum.at(hi, b, tri_hi)
        # Bounds and counts of bins [0, k] (left) and [k + 1, BINS) (right), k < BINS - 1.
        left_lo, left_hi = np.minimum.accumulate(lo)[:-1], np.maximum.accumulate(hi)[:-1]
        right_lo = np.minimum.accumulate(lo[::-1])[::-1][1:]
        right_hi = np.maximum.accumulate(hi[::-1])[::-1][1:]
        n_left = np.cumsum(count)[:-1]
        n_right = len(b) - n_left
        cost = _area(left_lo, left_hi) * n_left + _area(right_lo, right_hi) * n_right
        cost[(n_left == 0) | (n_right == 0)] = np.inf
        k = int(np.argmin(cost))
        if np.isfinite(cost[k]) and (best is None or cost[k] < best[0]):
            best = (cost[k], axis, k, b)
    return None if best is None else best[1:]


def _tree(triangles):
    """The hierarchy as built: per node (in creation order) its bounds, its triangle range
    in `order`, and for interior nodes its children (the one on the low side of the split
    first) and split axis (-1 for leaves). Returns (nodes dict of arrays, order)."""
    triangles = np.asarray(triangles, dtype=np.float32).astype(np.float64)
    if triangles.ndim != 3 or triangles.shape[1:] != (3, 3) or len(triangles) == 0:
        raise ValueError('bvh.build: expects an array of triangles of shape (T, 3, 3), T >= 1')
    tri_lo, tri_hi = triangles.min(axis=1), triangles.max(axis=1)
    centroids = (tri_lo + tri_hi) / 2
    order = np.arange(len(triangles))
    nodes = {k: [] for k in ('lo', 'hi', 'start', 'end', 'low', 'high', 'axis')}

    def make(start, end):
        """Builds the subtree of order[start:end]; returns its node."""
        node = len(nodes['lo'])
        ids = order[start:end]
        values = dict(lo=tri_lo[ids].min(axis=0), hi=tri_hi[ids].max(axis=0), start=start,
                      end=end, low=-1, high=-1, axis=-1)
        for key, v in values.items():
            nodes[key].append(v)
        if end - start <= LEAF_SIZE:
            return node
        split = _best_split(centroids[ids], tri_lo[ids], tri_hi[ids])
        if split is None:                            # every centroid alike: halve the range
            mid, axis = (start + end) // 2, 0
        else:
            axis, k, bins = split
            left = bins <= k
            order[start:end] = np.concatenate([ids[left], ids[~left]])
            mid = start + int(left.sum())
        nodes['axis'][node] = axis
        nodes['low'][node] = make(start, mid)
        nodes['high'][node] = make(mid, end)
        return node

    make(0, len(triangles))
    return {k: np.array(v) for k, v in nodes.items()}, order


def _layout(nodes, order, octant):
    """The depth-first layout (a BVH) in which each interior node's first child is the one
    that rays of direction octant `octant` (bit k set: negative along axis k) meet first:
    the low side of its split where the direction along the split axis is positive."""
    sequence, miss = [], {}

    def visit(node):
        sequence.append(node)
        if nodes['axis'][node] >= 0:
            first, second = nodes['low'][node], nodes['high'][node]
            if octant >> nodes['axis'][node] & 1:
                first, second = second, first
            visit(first)
            visit(second)
        miss[node] = len(sequence)

    visit(0)
    leaf = nodes['axis'][sequence] < 0
    start = nodes['start'][sequence]
    return BVH(nodes['lo'][sequence].astype(np.float32), nodes['hi'][sequence].astype(np.float32),
               np.where(leaf, start, 0).astype(np.uint32),
               np.where(leaf, nodes['end'][sequence] - start, 0).astype(np.uint32),
               np.array([miss[k] for k in sequence], np.uint32), order)


def build(triangles, octant=0):
    """The BVH of triangles (T, 3, 3) (T >= 1), laid out for rays of direction octant
    `octant` (see _layout), whose corners the kernels read as float32: the bounds are those
    of the float32 corners, exact in float32."""
    return _layout(*_tree(triangles), octant)


def build_octants(triangles):
    """The BVH of triangles laid out for each of the 8 direction octants (one hierarchy:
    the same nodes, leaves and triangle order, in 8 orders)."""
    nodes, order = _tree(triangles)
    return [_layout(nodes, order, octant) for octant in range(8)]
