"""The sample renderer (samples/renderer): its scene loader, its BVH, ray tracing inside the
kernels against a brute-force NumPy intersector, and ambient occlusion against a NumPy
implementation fed with the reference PCG32's random numbers."""

import pathlib
import sys

import numpy as np
import pytest
import suite_backend
from hypothesis import given, settings
from hypothesis import strategies as st
from suite_backend import Array3f
from test_pcg32 import references

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / 'samples'))
from renderer import ao, bvh, intersect, jit, scene  # noqa: E402

MODES = ('symbolic', 'evaluated')


@pytest.fixture(scope='module', autouse=True)
def renderer_backend():
    """The renderer builds its arrays on the suite's backend, the one of the tests' arrays
    (module-wide: set before the module-scoped accelerator and integrators are built)."""
    with jit.using(suite_backend.NAME):
        yield


@pytest.fixture(scope='module')
def cornell():
    return scene.load('cornell')


@pytest.fixture(scope='module')
def accel(cornell):
    return intersect.Accel(cornell.triangles)


# ---- backend -----------------------------------------------------------------------------

def test_jit_names_the_current_backends_types():
    import pbc.cuda
    import pbc.llvm
    assert jit.backend_name() == suite_backend.NAME and jit.Float is suite_backend.Float
    with jit.using('cuda') as module:
        assert module is pbc.cuda and jit.Array3f is pbc.cuda.Array3f
        assert jit.Ptr is pbc.cuda.Ptr and jit.backend_name() == 'cuda'
        with jit.using(None):                      # (the current one: unchanged)
            assert jit.PCG32 is pbc.cuda.PCG32
        with pytest.raises(KeyError), jit.using('llvm'):
            assert jit.UInt32 is pbc.llvm.UInt32
            raise KeyError('left by an exception')
        assert jit.UInt32 is pbc.cuda.UInt32       # (restored all the same)
    with pytest.raises(ValueError, match="unknown backend 'metal'"):
        jit.use('metal')
    assert jit.backend_name() == suite_backend.NAME
    with pytest.raises(AttributeError, match='NoSuchType'):
        assert jit.NoSuchType is None
    assert 'Array3f' in dir(jit)


# ---- scene -------------------------------------------------------------------------------

def test_scene_loads_every_mesh_and_field(cornell):
    assert [m.name for m in cornell.meshes] == ['floor', 'ceiling', 'back_wall', 'left_wall',
                                                'right_wall', 'tall_box', 'sphere', 'light']
    assert len(cornell.triangles) == 1304 and cornell.triangles.shape == (1304, 3, 3)
    assert [m.count for m in cornell.meshes] == [2, 2, 2, 2, 2, 12, 1280, 2]
    for k, m in enumerate(cornell.meshes):
        assert np.all(cornell.mesh_of[m.first:m.first + m.count] == k)
    assert np.allclose(cornell.albedo['red'], [0.63, 0.065, 0.05])
    assert np.allclose(cornell.emitters['light'], [17, 12, 4])
    # The light faces down (-y), the floor up: the winding gives the visible side.
    light, floor = cornell.meshes[7], cornell.meshes[0]
    assert np.allclose(cornell.normals[light.first], [0, -1, 0])
    assert np.allclose(cornell.normals[floor.first], [0, 1, 0])
    cam = cornell.camera
    assert (cam.width, cam.height) == (512, 512)
    # The pixel centre of the middle of the film looks straight at the target.
    assert np.allclose(cam.direction(np.array(0.5), np.array(0.5)), [0, 0, -1])


def test_obj_reader_fans_polygons_and_reads_relative_indices(tmp_path):
    path = tmp_path / 'quad.obj'
    path.write_text('# a quad\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1/1/1 2/2/2 3/3/3 4/4/4\n'
                    'f -4 -3 -2\n')
    v, f = scene.load_obj(path)
    assert v.shape == (4, 3) and f.tolist() == [[0, 1, 2], [0, 2, 3], [0, 1, 2]]
    path.write_text('v 0 0 0\nf 1 2 3\n')
    with pytest.raises(ValueError, match='vertex that does not exist'):
        scene.load_obj(path)


# ---- BVH ---------------------------------------------------------------------------------

def check_bvh(tree, triangles):
    """Every triangle in exactly one leaf, inside the bounds of every node above it; miss
    links point past the subtree (depth-first order)."""
    n = len(tree)
    assert sorted(tree.order.tolist()) == list(range(len(triangles)))
    tri = np.asarray(triangles, np.float32)[tree.order]
    seen = np.zeros(len(triangles), int)

    def walk(node):
        """Checks the subtree at node; returns (the node after it, its triangle range)."""
        assert tree.miss[node] <= n
        if tree.count[node]:
            a, b = int(tree.first[node]), int(tree.first[node] + tree.count[node])
            assert 1 <= b - a <= bvh.LEAF_SIZE
            seen[a:b] += 1
            nxt = node + 1
        else:
            mid, (a1, b1) = walk(node + 1)
            nxt, (a2, b2) = walk(mid)
            assert b1 == a2 or b2 == a1                  # (adjacent, in either order)
            a, b = min(a1, a2), max(b1, b2)
        assert np.all(tri[a:b].min(axis=(0, 1)) >= tree.lo[node])
        assert np.all(tri[a:b].max(axis=(0, 1)) <= tree.hi[node])
        assert tree.miss[node] == nxt
        return nxt, (a, b)

    assert walk(0)[0] == n
    assert np.all(seen == 1)


def test_bvh_of_the_scene(cornell):
    tree = bvh.build(cornell.triangles)
    check_bvh(tree, cornell.triangles)
    assert np.count_nonzero(tree.count) < len(cornell.triangles)   # leaves hold several
    # The layouts for the 8 direction octants: the same nodes in other depth-first orders,
    # the root's nearer child first (its boxes' lower corner along +x, +y, +z first for
    # octant 0: one of them starts where the root's box does).
    layouts = bvh.build_octants(cornell.triangles)
    for octant, t in enumerate(layouts):
        check_bvh(t, cornell.triangles)
        assert sorted(map(tuple, t.lo.tolist())) == sorted(map(tuple, tree.lo.tolist()))
        a, b = 1, t.miss[1]                           # the root's children, in order
        axes = [k for k in range(3) if t.lo[a, k] != t.lo[b, k] or t.hi[a, k] != t.hi[b, k]]
        near_first = [(t.lo[a, k] + t.hi[a, k] <= t.lo[b, k] + t.hi[b, k]) != bool(octant >> k & 1)
                      for k in axes]
        assert any(near_first)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**32 - 1), st.booleans())
def test_bvh_of_random_triangles(count, seed, stacked):
    rng = np.random.default_rng(seed)
    tri = rng.normal(size=(count, 3, 3))
    if stacked:                        # every centroid alike: the builder halves ranges
        tri = np.repeat(tri[:1], count, axis=0)
    check_bvh(bvh.build(tri), tri)


def test_bvh_rejects_what_is_not_triangles():
    with pytest.raises(ValueError, match='shape'):
        bvh.build(np.zeros((0, 3, 3)))
    with pytest.raises(ValueError, match='shape'):
        bvh.build(np.zeros((4, 3)))


# ---- ray tracing -------------------------------------------------------------------------

def random_rays(rng, count, inside=True):
    if inside:
        o = rng.uniform(-0.98, 0.98, (count, 3))
    else:                              # from outside the box, towards it
        o = rng.normal(size=(count, 3))
        o = 4 * o / np.linalg.norm(o, axis=1, keepdims=True)
    d = rng.normal(size=(count, 3)) - (0 if inside else o / 4)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return o.astype(np.float32), d.astype(np.float32)


def agree(t, prim, t_ref, prim_ref, triangles, o, d):
    """Hits and misses agree, and distances to within float32 rounding; the triangle hit is
    the reference's, or one that the reference finds as close (a tie: an edge or corner
    shared by several triangles, or the tall box's base on the floor)."""
    assert np.array_equal(np.isfinite(t), np.isfinite(t_ref))
    assert np.array_equal(prim == intersect.NO_HIT, prim_ref == intersect.NO_HIT)
    h = np.isfinite(t_ref)
    np.testing.assert_allclose(t[h], t_ref[h], rtol=1e-4, atol=1e-6)
    for i in np.flatnonzero(h & (prim != prim_ref)):
        t_own, _ = intersect.brute_force(triangles[prim[i]:prim[i] + 1], o[i:i + 1], d[i:i + 1])
        np.testing.assert_allclose(t_own, t_ref[i], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('inside', [True, False])
def test_ray_intersect_matches_brute_force(cornell, accel, mode, inside):
    o, d = random_rays(np.random.default_rng(1 + inside), 3000, inside)
    hit = accel.ray_intersect(Array3f(o.T), Array3f(d.T), mode=mode)
    t_ref, prim_ref = intersect.brute_force(cornell.triangles, o, d)
    agree(hit.t.numpy(), hit.prim.numpy(), t_ref, prim_ref, cornell.triangles, o, d)
    if inside:                         # the box is closed but for its front
        assert np.mean(np.isfinite(t_ref)) > 0.8
    # The points from the barycentrics lie on the triangles hit, where o + t d says.
    h = np.isfinite(t_ref)
    p = accel.position(hit).numpy().T
    np.testing.assert_allclose(p[h], (o + d * hit.t.numpy()[:, None])[h], atol=2e-5)
    n = cornell.normals[prim_ref[h]]
    plane = np.sum(n * cornell.triangles[prim_ref[h], 0], axis=1)
    np.testing.assert_allclose(np.sum(n * p[h], axis=1), plane, atol=2e-6)


@pytest.mark.parametrize('mode', MODES)
def test_ray_test_and_t_max(cornell, accel, mode):
    o, d = random_rays(np.random.default_rng(3), 3000)
    t_max = np.random.default_rng(4).uniform(0, 2, 3000).astype(np.float32)
    blocked = accel.ray_test(Array3f(o.T), Array3f(d.T), suite_backend.Float(t_max), mode=mode)
    t_ref, _ = intersect.brute_force(cornell.triangles, o, d)
    near = np.abs(t_ref - t_max) < 1e-4 * t_max        # (a tie: either answer is right)
    assert np.array_equal(blocked.numpy()[~near], (t_ref < t_max)[~near])
    hit = accel.ray_intersect(Array3f(o.T), Array3f(d.T), suite_backend.Float(t_max), mode=mode)
    t_ref, prim_ref = intersect.brute_force(cornell.triangles, o, d, t_max)
    t = hit.t.numpy()
    missed = prim_ref == intersect.NO_HIT
    assert np.array_equal(t[missed & ~near], t_max[missed & ~near])
    agree(np.where(missed, np.inf, t), hit.prim.numpy(), t_ref, prim_ref, cornell.triangles, o, d)


@pytest.mark.parametrize('mode', MODES)
def test_inactive_lanes_trace_nothing(cornell, accel, mode):
    # Lanes that are not active find no hit (t = t_max) and are not blocked; the others
    # find what they find without the mask. Also through Geometry, with an analytic sphere.
    from renderer.shapes import Geometry, Sphere
    o, d = random_rays(np.random.default_rng(7), 2000)
    active = np.random.default_rng(8).random(2000) < 0.6
    O, D, A = Array3f(o.T), Array3f(d.T), suite_backend.Bool(active)
    sphere = Geometry(scene_without(cornell, 'sphere'),
                      spheres=[Sphere(np.array([0.45, -0.65, 0.3]), 0.35)])
    for tracer in (accel, sphere):
        full = tracer.ray_intersect(O, D, mode=mode)
        hit = tracer.ray_intersect(O, D, 1.5, active=A, mode=mode)
        t, prim, t_full = hit.t.numpy(), hit.prim.numpy(), full.t.numpy()
        assert np.all(prim[~active] == intersect.NO_HIT) and np.all(t[~active] == 1.5)
        within = active & (t_full < 1.5)
        assert np.array_equal(prim[within], full.prim.numpy()[within])
        assert np.array_equal(t[within], t_full[within])
        blocked = tracer.ray_test(O, D, 1.5, active=A, mode=mode).numpy()
        unmasked = tracer.ray_test(O, D, 1.5, mode=mode).numpy()
        assert not blocked[~active].any()
        assert np.array_equal(blocked[active], unmasked[active])


def _rays_from_box_faces(tree, rng, count):
    """Rays starting on the faces of the hierarchy's boxes (float32 corners of the nodes'
    bounds, a face's centre and its corners), in random directions and in directions along
    the axes (whose other components are +0 or -0)."""
    node = rng.integers(0, len(tree), count)
    lo, hi = tree.lo[node], tree.hi[node]
    o = np.where(rng.integers(0, 2, (count, 3)).astype(bool), lo, hi)
    centre = rng.integers(0, 3, count)            # one coordinate at the face's centre
    o[np.arange(count), centre] = ((lo + hi) / 2)[np.arange(count), centre]
    d = rng.normal(size=(count, 3))
    axis = rng.random(count) < 0.5
    a = rng.integers(0, 3, count)
    d[axis] = np.copysign(0.0, rng.normal(size=(axis.sum(), 3)))
    d[np.flatnonzero(axis), a[axis]] = rng.choice([-1.0, 1.0], axis.sum())
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return o.astype(np.float32), d.astype(np.float32)


@pytest.mark.parametrize('offset', [0.0, 1000.0])
def test_rays_from_box_faces_hit_what_brute_force_hits(cornell, offset):
    # The boxes are stored on a 16-bit grid over the scene, and the slab test rounds: rays
    # that start exactly on a box's face, or run along one, still find every hit, also
    # where the scene lies far from the origin (whose coordinates round more coarsely).
    triangles = cornell.triangles + np.float32(offset)
    accel = intersect.Accel(triangles)
    o, d = _rays_from_box_faces(bvh.build(triangles), np.random.default_rng(7), 4000)
    hit = accel.ray_intersect(Array3f(o.T), Array3f(d.T))
    t_ref, prim_ref = intersect.brute_force(triangles, o, d)
    # (Where a ray starts on a triangle, float32 rounding decides whether it hits it at
    # distance 0: those rays are left out.)
    t = hit.t.numpy()
    keep = ~((t < 1e-6) | (t_ref < 1e-6))
    assert keep.mean() > 0.8
    # (many of these rays meet edges and corners, shared by several triangles)
    agree(t[keep], hit.prim.numpy()[keep], t_ref[keep], prim_ref[keep], triangles, o[keep],
          d[keep])
    t_max = np.where(np.isfinite(t_ref), t_ref * 1.001 + 1e-6, 1).astype(np.float32)
    blocked = accel.ray_test(Array3f(o.T), Array3f(d.T), suite_backend.Float(t_max)).numpy()
    assert np.array_equal(blocked[keep], np.isfinite(t_ref)[keep])


def test_rays_along_shared_edges_do_not_pass(accel):
    # Rays aimed exactly at the edges and corners where walls meet (and at the diagonal of
    # each wall, which its two triangles share) hit something: the test is watertight.
    targets = [(x, y, z) for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0)
               if (x, y, z) != (0, 0, 0)] + [(0.5, 0.5, -1), (-0.3, 0.3, -1)]
    o = np.zeros((len(targets), 3), np.float32)
    o[:, 2] = 0.5
    d = np.array(targets, np.float32) - o
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    hit = accel.ray_intersect(Array3f(o.T), Array3f(d.T))
    assert np.all(hit.valid.numpy())


# ---- ambient occlusion -------------------------------------------------------------------

def cosine_hemisphere(u1, u2):
    x, y = 2 * u1 - 1, 2 * u2 - 1
    first = np.abs(x) > np.abs(y)
    r = np.where(first, x, y)
    safe = np.where(r == 0, 1, r)
    phi = np.where(first, np.pi / 4 * y / safe, np.pi / 2 - np.pi / 4 * x / safe)
    lx, ly = r * np.cos(phi), r * np.sin(phi)
    return lx, ly, np.sqrt(np.maximum(1 - lx * lx - ly * ly, 0))


def world(n, lx, ly, lz):
    sign = np.copysign(1, n[:, 2])
    a = -1 / (sign + n[:, 2])
    b = n[:, 0] * n[:, 1] * a
    s = np.stack([1 + sign * n[:, 0] ** 2 * a, sign * b, -sign * n[:, 0]], axis=1)
    t = np.stack([b, sign + n[:, 1] ** 2 * a, -n[:, 1]], axis=1)
    return s * lx[:, None] + t * ly[:, None] + n * lz[:, None]


def numpy_ao(sc, w, h, spp):
    """The AO of scene.json's definition in NumPy (float64 geometry, brute-force rays),
    with the random numbers of the reference PCG32 streams that the renderer uses."""
    cam = sc.camera
    j, i = np.divmod(np.arange(w * h), w)
    d = cam.direction((i + 0.5) / w, (j + 0.5) / h)
    o = cam.origin + d * (cam.near_clip / (d @ cam.forward))[:, None]
    t, prim = intersect.brute_force(sc.triangles, o, d)
    hit = prim != intersect.NO_HIT
    n = sc.normals[np.where(hit, prim, 0)]
    n = np.where(np.sum(n * d, axis=1, keepdims=True) > 0, -n, n)
    p = o + d * np.where(hit, t, 0)[:, None]
    origin = p + n * ((1 + np.max(np.abs(p), axis=1)) * ao.RAY_EPSILON)[:, None]
    refs = references(w * h)
    free = np.zeros(w * h)
    for _ in range(spp):
        u1 = np.array([(r.next() >> 9) * 2.0**-23 for r in refs])
        u2 = np.array([(r.next() >> 9) * 2.0**-23 for r in refs])
        dirs = world(n, *cosine_hemisphere(u1, u2))
        ts, _ = intersect.brute_force(sc.triangles, origin[hit], dirs[hit])
        free[hit] += ts >= sc.ao['ray_length']
    return np.where(hit, free / spp, 0)


@pytest.mark.parametrize('mode', MODES)
def test_ambient_occlusion_matches_numpy(cornell, accel, mode):
    w, h, spp = 13, 11, 6      # (odd sizes: no pixel centre sees an edge of the box exactly)
    image = ao.AmbientOcclusion(cornell, accel).render(w, h, spp, mode=mode).numpy()
    ref = numpy_ao(cornell, w, h, spp)
    # The same random numbers and rays: equal but where a ray grazes an edge (float32
    # against float64), which changes a pixel by 1/spp.
    diff = np.abs(image - ref)
    assert np.all((diff < 1e-6) | (np.abs(diff - np.round(diff * spp) / spp) < 1e-6))
    assert np.sum(diff > 1e-6) <= 2
    assert 0.5 < image.mean() < 1


def test_ambient_occlusion_modes_agree(cornell, accel):
    integ = ao.AmbientOcclusion(cornell, accel)
    a, b = (integ.render(24, 16, 4, mode=m).numpy() for m in MODES)
    assert np.array_equal(a, b)


# ---- path tracing ------------------------------------------------------------------------

class Streams:
    """The reference PCG32 streams of the lanes, drawn only where a mask says (as a masked
    loop in the kernel advances only its active lanes' generators)."""

    def __init__(self, n):
        self.refs = references(n)

    def draw(self, mask):
        return np.array([(r.next() >> 9) * 2.0**-23 if m else 0.0
                         for r, m in zip(self.refs, mask)])


def numpy_path(sc, w, h, spp, max_depth=8, rr_depth=5):
    """renderer.path's algorithm in NumPy (float64, brute-force rays), with the same random
    numbers in the same order."""
    from renderer.path import SHADOW_EPSILON
    # The emitting triangles, chosen in proportion to their areas.
    ids = np.concatenate([np.arange(m.first, m.first + m.count) for m in sc.meshes
                          if m.name in sc.emitters])
    light_tri = sc.triangles[ids].astype(np.float32).astype(np.float64)
    light_area = 0.5 * np.linalg.norm(np.cross(light_tri[:, 1] - light_tri[:, 0],
                                               light_tri[:, 2] - light_tri[:, 0]), axis=1)
    total_area = light_area.sum()
    light_cdf = (np.cumsum(light_area) / total_area).astype(np.float32)
    light_cdf[-1] = 1
    light_le = np.array([sc.emitters[sc.meshes[sc.mesh_of[i]].name] for i in ids])
    albedo = np.array([sc.albedo[m.material] for m in sc.meshes])
    emitted = np.array([sc.emitters.get(m.name, np.zeros(3)) for m in sc.meshes])
    cam, normals, count = sc.camera, sc.normals, w * h
    j, i = np.divmod(np.arange(count), w)
    rng = Streams(count)
    every = np.ones(count, bool)

    def mis(a, b):
        return np.where(a * a + b * b > 0, a * a / np.maximum(a * a + b * b, 1e-300), 0)

    def spawn(p, n, d):
        eps = (1 + np.max(np.abs(p), axis=1)) * ao.RAY_EPSILON
        return p + n * (np.copysign(eps, np.sum(n * d, axis=1)))[:, None]

    def trace(o, d, t_max=np.inf):
        t, prim = intersect.brute_force(sc.triangles, o, d, t_max)
        return t, prim

    total = np.zeros((count, 3))
    for _ in range(spp):
        du, dv = rng.draw(every), rng.draw(every)
        d = cam.direction((i + du) / w, (j + dv) / h)
        o = cam.origin + d * (cam.near_clip / (d @ cam.forward))[:, None]
        radiance, beta = np.zeros((count, 3)), np.ones((count, 3))
        depth = np.zeros(count, int)
        prev_pdf, prev_delta = np.ones(count), np.ones(count, bool)
        t, prim = trace(o, d)
        active = prim != intersect.NO_HIT
        while active.any():
            a = active
            pr = np.where(a, prim, 0)
            p, n, mesh = o + d * np.where(a, t, 0)[:, None], normals[pr], sc.mesh_of[pr]
            wi = -d
            cos_i = np.sum(n * wi, axis=1)
            le = emitted[mesh]
            light_pdf = t * t / (np.abs(cos_i) * total_area)
            weight = np.where(prev_delta, 1, mis(prev_pdf, light_pdf))
            radiance += ((a & (cos_i > 0) & (le.max(axis=1) > 0)) * weight)[:, None] * beta * le
            more = depth + 1 < max_depth
            u_light = rng.draw(a)
            u1, u2 = rng.draw(a), rng.draw(a)
            k = np.searchsorted(light_cdf, u_light, side='right')
            tri = light_tri[k]
            s = np.sqrt(1 - u1)
            b1, b2 = 1 - s, u2 * s
            q = np.einsum('rk,rkc->rc', np.stack([1 - b1 - b2, b1, b2], axis=1), tri)
            nq, le_q = normals[ids[k]], light_le[k]
            dist = np.linalg.norm(q - p, axis=1)
            wl = (q - p) / dist[:, None]
            cos_l = -np.sum(nq * wl, axis=1)
            cos_o = np.sum(n * wl, axis=1)
            front = (cos_i > 0) & (cos_o > 0)
            f = np.where(front[:, None], albedo[mesh] * (cos_o / np.pi)[:, None], 0)
            bsdf_pdf = np.where(front, cos_o / np.pi, 0)
            lit = a & more & (cos_l > 0) & (f.max(axis=1) > 0)
            t_l, _ = trace(spawn(p, n, wl), wl, dist * (1 - SHADOW_EPSILON))
            pdf_l = dist * dist / np.where(cos_l > 0, cos_l * total_area, 1)
            contrib = (mis(pdf_l, bsdf_pdf) / pdf_l)[:, None] * beta * f * le_q
            radiance += np.where((lit & ~np.isfinite(t_l))[:, None], contrib, 0)
            v1, v2 = rng.draw(a), rng.draw(a)
            wo = world(n, *cosine_hemisphere(v1, v2))
            cos_o = np.sum(n * wo, axis=1)
            front = more & (cos_i > 0) & (cos_o > 0)
            beta = np.where(a[:, None], beta * np.where(front[:, None], albedo[mesh], 0), beta)
            prev_pdf = np.where(a, np.where(front, cos_o / np.pi, 0), prev_pdf)
            prev_delta = prev_delta & ~a
            u_rr = rng.draw(a)
            rr_prob = np.minimum(beta.max(axis=1), 0.95)
            roulette = depth + 1 >= rr_depth
            scale = np.where(a & roulette & (rr_prob > 0), 1 / np.where(rr_prob > 0, rr_prob, 1), 1)
            beta = beta * scale[:, None]
            survive = ~roulette | (u_rr < rr_prob)
            o_next = spawn(p, n, wo)
            t_n, prim_n = trace(o_next, wo)
            o = np.where(a[:, None], o_next, o)
            d = np.where(a[:, None], wo, d)
            t, prim = np.where(a, t_n, t), np.where(a, prim_n, prim)
            depth = depth + a
            active = a & more & survive & (beta.max(axis=1) > 0) & (prim != intersect.NO_HIT)
        total += radiance
    return total / spp


@pytest.fixture(scope='module')
def tracer(cornell, accel):
    from renderer import path
    return path.PathTracer(cornell, accel)


def test_path_tracer_matches_numpy(cornell, tracer):
    w, h, spp = 9, 7, 2
    image = tracer.render(w, h, spp).numpy().T
    ref = numpy_path(cornell, w, h, spp)
    close = np.all(np.isclose(image, ref, rtol=2e-3, atol=1e-5), axis=1)
    # (a path whose float32 and float64 versions part at a grazing ray differs wholly)
    assert np.sum(~close) <= 1, (image[~close], ref[~close])
    assert image.mean() > 0.05


def test_path_tracer_modes_agree(tracer):
    a, b = (tracer.render(8, 6, 2, mode=m).numpy() for m in MODES)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- shapes and textures -----------------------------------------------------------------

def sphere_reference(center, radius, o, d, t_max=np.inf):
    """Nearest t in [0, t_max) of rays (unit d) against a sphere, float64, INF if none."""
    f = o.astype(np.float64) - center
    b = -np.sum(f * d, axis=1)
    disc = radius**2 - np.sum((f + d * b[:, None]) ** 2, axis=1)
    root = np.sqrt(np.maximum(disc, 0))
    t0, t1 = b - root, b + root
    t = np.where(t0 >= 0, t0, t1)
    return np.where((disc >= 0) & (t >= 0) & (t < t_max), t, np.inf)


@pytest.mark.parametrize('inside', [True, False])
def test_sphere_intersection(inside):
    from renderer.shapes import Sphere
    center, radius = np.array([0.2, -0.1, 0.3]), 0.6
    sphere = Sphere(center, radius)
    rng = np.random.default_rng(7 + inside)
    o, d = random_rays(rng, 4000, inside)
    if inside:                         # from inside the sphere: every ray leaves it
        o = (center + rng.uniform(-0.3, 0.3, (4000, 3))).astype(np.float32)
    else:                              # from afar, towards points around the sphere
        o = (center + 3 * o / np.linalg.norm(o, axis=1, keepdims=True)).astype(np.float32)
        d = center + rng.uniform(-1, 1, (4000, 3)) - o
        d = (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)
    t = sphere.intersect(Array3f(o.T), Array3f(d.T), suite_backend.Float(np.inf)).numpy()
    ref = sphere_reference(center, radius, o, d)
    assert np.array_equal(np.isfinite(t), np.isfinite(ref))
    np.testing.assert_allclose(t[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-5,
                               atol=1e-5)
    assert np.mean(np.isfinite(ref)) > (0.99 if inside else 0.2)
    with pytest.raises(ValueError, match='radius'):
        Sphere(center, 0.0)


def scene_without(sc, name):
    """The scene without mesh `name`."""
    import dataclasses
    keep = [m for m in sc.meshes if m.name != name]
    tris, mesh_of, meshes = [], [], []
    for k, m in enumerate(keep):
        meshes.append(dataclasses.replace(m, first=sum(len(t) for t in tris)))
        tris.append(sc.triangles[m.first:m.first + m.count])
        mesh_of.append(np.full(m.count, k, np.uint32))
    return dataclasses.replace(sc, triangles=np.concatenate(tris),
                               mesh_of=np.concatenate(mesh_of), meshes=meshes)


def test_geometry_with_an_analytic_sphere(cornell):
    from renderer.shapes import Geometry, Sphere
    # The scene's tessellated sphere (icosphere, radius 0.35 around (0.45, -0.65, 0.3))
    # replaced by an analytic one.
    sc = scene_without(cornell, 'sphere')
    center = np.array([0.45, -0.65, 0.3])
    geo = Geometry(sc, spheres=[Sphere(center, 0.35)])
    assert len(geo) == len(sc.meshes) + 1
    o, d = random_rays(np.random.default_rng(11), 3000)
    O, D = Array3f(o.T), Array3f(d.T)
    hit = geo.ray_intersect(O, D)
    t_mesh, prim_mesh = intersect.brute_force(sc.triangles, o, d)
    t_sph = sphere_reference(center, 0.35, o, d)
    ref = np.minimum(t_mesh, t_sph)
    np.testing.assert_allclose(hit.t.numpy(), ref, rtol=1e-4, atol=1e-5)
    on_sphere = t_sph < t_mesh
    assert on_sphere.any()
    assert np.all(hit.prim.numpy()[on_sphere] == len(sc.triangles))
    shape = geo.shape_id(hit).numpy()
    assert np.all(shape[on_sphere] == len(sc.meshes))
    mesh_hit = np.isfinite(t_mesh) & ~on_sphere
    # (the tall box's bottom lies in the floor: coplanar triangles tie)
    assert np.mean(shape[mesh_hit] == sc.mesh_of[prim_mesh[mesh_hit]]) > 0.99
    si = geo.surface_point(hit, O, D)
    p, n, uv = (x.numpy().T for x in si)
    h = np.isfinite(ref)
    np.testing.assert_allclose(p[h], (o + d * ref[:, None])[h], atol=3e-5)
    np.testing.assert_allclose(n[on_sphere], (p[on_sphere] - center) / 0.35, atol=1e-4)
    assert np.all((uv[h] >= -1e-6) & (uv[h] <= 1 + 1e-6))
    # Shadow rays see the sphere too.
    blocked = geo.ray_test(O, D, suite_backend.Float(np.full(3000, 0.5, np.float32))).numpy()
    near = np.abs(ref - 0.5) < 1e-4
    assert np.array_equal(blocked[~near], (ref < 0.5)[~near])


def test_ambient_occlusion_of_the_analytic_sphere_scene(cornell):
    from renderer.shapes import Geometry, Sphere
    sc = scene_without(cornell, 'sphere')
    geo = Geometry(sc, spheres=[Sphere((0.45, -0.65, 0.3), 0.35)])
    a = ao.AmbientOcclusion(cornell).render(48, 48, 16).numpy()
    b = ao.AmbientOcclusion(sc, geometry=geo).render(48, 48, 16).numpy()
    # The same picture but for the facets of the tessellated sphere.
    assert abs(a.mean() - b.mean()) < 0.01
    assert np.mean(np.abs(a - b) < 0.15) > 0.95


def test_textured_diffuse_lookup():
    from renderer.materials import TexturedDiffuse
    from renderer.shapes import SurfacePoint
    rng = np.random.default_rng(5)
    tex = rng.uniform(0, 1, (5, 7, 3)).astype(np.float32)
    bsdf = TexturedDiffuse(tex)
    uv = rng.uniform(-1.5, 2.5, (500, 2)).astype(np.float32)
    zero = Array3f(np.zeros((3, 500), np.float32))
    si = SurfacePoint(zero, zero, suite_backend.Array2f(uv.T))
    got = bsdf.reflectance(si).numpy().T
    # Bilinear filtering of texel centres, repeating.
    x, y = uv[:, 0] * 7 - 0.5, uv[:, 1] * 5 - 0.5
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    ix0, iy0 = x0.astype(int) % 7, y0.astype(int) % 5
    ix1, iy1 = (ix0 + 1) % 7, (iy0 + 1) % 5
    ref = (tex[iy0, ix0] * (1 - fx) * (1 - fy) + tex[iy0, ix1] * fx * (1 - fy)
           + tex[iy1, ix0] * (1 - fx) * fy + tex[iy1, ix1] * fx * fy)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match='H, W, 3'):
        TexturedDiffuse(np.zeros((4, 4)))


def test_path_tracer_with_a_texture_and_a_sphere(cornell):
    from renderer import path
    from renderer.materials import Diffuse, TexturedDiffuse
    from renderer.shapes import Geometry, Sphere
    # A texture of one colour reflects as a Diffuse of that colour.
    albedo = cornell.albedo['red']
    plain = path.PathTracer(cornell)
    bsdfs = list(plain.bsdfs)
    left = [m.name for m in cornell.meshes].index('left_wall')
    bsdfs[left] = TexturedDiffuse(np.tile(albedo.astype(np.float32), (3, 4, 1)))
    textured = path.PathTracer(cornell, geometry=plain.geometry, bsdfs=bsdfs)
    a, b = (t.render(12, 10, 2).numpy() for t in (plain, textured))
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # An analytic sphere needs a material of its own.
    sc = scene_without(cornell, 'sphere')
    geo = Geometry(sc, spheres=[Sphere((0.45, -0.65, 0.3), 0.35)])
    with pytest.raises(ValueError, match='every shape'):
        path.PathTracer(sc, geometry=geo)
    blue = Diffuse(cornell.albedo['blue'])
    tracer = path.PathTracer(sc, geometry=geo, bsdfs=[Diffuse(sc.albedo[m.material])
                                                      for m in sc.meshes] + [blue])
    c = tracer.render(16, 16, 4).numpy()
    d = plain.render(16, 16, 4).numpy()
    assert abs(c.mean() - d.mean()) < 0.1 * d.mean()


def test_area_emitter_samples_by_area():
    from renderer.materials import AreaEmitter
    rng = np.random.default_rng(3)
    tri = rng.normal(size=(5, 3, 3))
    em = AreaEmitter(tri, (1, 2, 3))
    n = 20000
    u_tri = suite_backend.Float(rng.uniform(0, 1, n).astype(np.float32))
    u = suite_backend.Array2f(rng.uniform(0, 1, (2, n)).astype(np.float32))
    q, nq = (x.numpy().T for x in em.sample_position(u_tri, u))
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    # Which triangle each point lies on: the one whose plane it is in, and inside.
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    dist = np.abs(np.einsum('kc,rkc->rk', normal, q[:, None, :] - tri[None, :, 0]))
    k = np.argmin(dist, axis=1)
    assert np.all(dist[np.arange(n), k] < 1e-4)
    np.testing.assert_allclose(np.abs(np.sum(nq * normal[k], axis=1)), 1, atol=1e-5)
    share = np.bincount(k, minlength=5) / n
    np.testing.assert_allclose(share, area / area.sum(), atol=0.015)
    with pytest.raises(ValueError, match='positive area'):
        AreaEmitter(np.zeros((1, 3, 3)), (1, 1, 1))


def test_path_tracer_with_two_emitters(cornell, tracer):
    # The light split into two emitting meshes of one triangle each: the same picture.
    import dataclasses
    light = next(m for m in cornell.meshes if m.name == 'light')
    meshes = [m for m in cornell.meshes if m.name != 'light'] + [
        dataclasses.replace(light, name='light_a', count=1),
        dataclasses.replace(light, name='light_b', first=light.first + 1, count=1)]
    emitters = {'light_a': cornell.emitters['light'], 'light_b': cornell.emitters['light']}
    mesh_of = cornell.mesh_of.copy()
    mesh_of[light.first + 1] = len(meshes) - 1
    mesh_of[light.first] = len(meshes) - 2
    assert light.first + light.count == len(cornell.triangles)    # (the last mesh)
    split = dataclasses.replace(cornell, meshes=meshes, emitters=emitters, mesh_of=mesh_of)
    from renderer import path
    two = path.PathTracer(split, tracer.geometry.accel)
    assert len(two.emitters) == 2
    a, b = (t.render(10, 8, 2).numpy() for t in (tracer, two))
    np.testing.assert_allclose(a, b, rtol=2e-3, atol=1e-5)


def test_path_tracing_converges(tracer):
    # The error against a render of 2048 paths per pixel (other random numbers) falls as
    # 1 / sqrt(paths): 16x the paths, about a quarter of it (0.14-0.39 over six seeds).
    ref = tracer.render(8, 8, 2048, seed=1).numpy()
    err = [np.sqrt(np.mean((tracer.render(8, 8, spp, seed=2000 + spp).numpy() - ref) ** 2))
           for spp in (16, 256)]
    assert err[1] < 0.55 * err[0]
    assert err[1] < 0.1


def test_scene_loader_names_what_it_cannot_read(tmp_path):
    import json
    import shutil
    src = scene.SCENES / 'cornell'
    base = json.loads((src / 'scene.json').read_text())
    cases = [(lambda d: d['materials']['red'].update(type='conductor'), "type 'conductor'"),
             (lambda d: d['meshes'][0].update(material='gold'), 'unknown material'),
             (lambda d: d['emitters'][0].update(type='point'), "type 'point'"),
             (lambda d: d['camera'].update(fov_axis='y'), 'fov_axis')]
    for change, message in cases:
        shutil.rmtree(tmp_path / 's', ignore_errors=True)
        shutil.copytree(src, tmp_path / 's')
        desc = json.loads(json.dumps(base))
        change(desc)
        (tmp_path / 's' / 'scene.json').write_text(json.dumps(desc))
        with pytest.raises(ValueError, match=message):
            scene.load(tmp_path / 's')
    # A scene elsewhere loads by its path; one without emitters cannot be path traced.
    shutil.rmtree(tmp_path / 's')
    shutil.copytree(src, tmp_path / 's')
    desc = json.loads(json.dumps(base))
    desc['emitters'] = []
    (tmp_path / 's' / 'scene.json').write_text(json.dumps(desc))
    dark = scene.load(tmp_path / 's')
    assert len(dark.triangles) == 1304 and not dark.emitters
    from renderer import path
    with pytest.raises(ValueError, match='no emitter'):
        path.PathTracer(dark)
