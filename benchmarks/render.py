"""Renderer benchmark: the Cornell box (samples/scenes/cornell) rendered by pbc's sample
renderer (samples/renderer: a BVH traversed inside the kernel) and, when `mitsuba==3.9.1`
is installed, by Mitsuba 3 (Dr.Jit 1.5 with Embree), each in fresh processes, with the
ratio pbc / Mitsuba:

- ambient occlusion as scene.json defines it (512 x 512 pixels, one camera ray through each
  pixel centre, 64 cosine-weighted shadow rays of length 0.1 x the box diagonal per hit),
  in Mitsuba written against its Python API;
- path tracing, 512 x 512 pixels, 16 paths per pixel of at most 8 segments, Russian
  roulette from depth 5: renderer.path against Mitsuba's `path` integrator;
- one gradient step of Path Replay Backpropagation, 256 x 256 pixels, 4 paths per pixel of
  at most 4 segments: the image, then the gradient of its mean square w.r.t. the left
  wall's albedo, renderer.prb against Mitsuba's `prb` integrator (each: a primal render,
  then one that traces each path and replays it).

    python -m benchmarks render

"first": scene loading, acceleration structures and the process's one-time LLVM setup
(Mitsuba's: `set_variant` and scene loading) excluded, the first render (trace, compile,
run) with an empty kernel cache; "warm": the best of later renders. The best of
PBC_BENCH_ROUNDS (3) rounds that alternate between the systems. Prints one labelled
figure per line; asserts nothing.
"""

import json
import os
import sys
import time

from benchmarks import ROOT, best_of_rounds, cpu_model, llvm_setup, row
from benchmarks.compare import LLVM19

SCENE = os.path.join(ROOT, 'samples', 'scenes', 'cornell')
WARM_REPEAT = 3


def _pbc_ao(size, spp):
    sys.path.insert(0, os.path.join(ROOT, 'samples'))
    from renderer import ao, scene

    return _renders(ao.AmbientOcclusion(scene.load(SCENE)), size, spp)


def _renders(integrator, size, spp):
    """A function rendering with the integrator of pbc's sample renderer."""
    import pbc
    llvm_setup(pbc, pbc.llvm.Float)        # (as Mitsuba's set_variant: untimed)

    def render():
        image = integrator.render(size, size, spp)
        pbc.eval(image)
        return image.numpy()                 # (waits for the kernel)
    return render


def _mitsuba_ao(size, spp):
    import drjit as dr
    import mitsuba as mi
    import numpy as np
    mi.set_variant('llvm_ad_rgb')
    with open(os.path.join(SCENE, 'scene.json')) as f:
        desc = json.load(f)
    shapes = {'type': 'scene'}
    for m in desc['meshes']:
        shapes[m['name']] = {'type': 'obj', 'filename': os.path.join(SCENE, m['file']),
                             'face_normals': True}
    scene = mi.load_dict(shapes)
    cam = desc['camera']
    origin, target = np.array(cam['origin']), np.array(cam['target'])
    fwd = (target - origin) / np.linalg.norm(target - origin)
    right = np.cross(fwd, cam['up'])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    tan_half = float(np.tan(np.radians(cam['fov_deg']) / 2))
    length = desc['ao']['ray_length']

    def render():
        i = dr.arange(mi.UInt32, size * size)
        u = (mi.Float(i % size) + 0.5) / size
        v = (mi.Float(i // size) + 0.5) / size
        f, r, w = (mi.Vector3f(*map(float, a)) for a in (fwd, right, up))
        d = dr.normalize(f + r * ((2 * u - 1) * tan_half) + w * ((1 - 2 * v) * tan_half))
        o = mi.Point3f(*map(float, origin)) + d * (cam['near_clip'] / dr.dot(d, f))
        si = scene.ray_intersect(mi.Ray3f(o, d))
        frame = mi.Frame3f(dr.select(dr.dot(si.n, d) > 0, -si.n, si.n))

        def body(k, free, rng):
            s = mi.Point2f(rng.next_float32(), rng.next_float32())
            ray = si.spawn_ray(frame.to_world(mi.warp.square_to_cosine_hemisphere(s)))
            ray.maxt = length
            return k + 1, free + dr.select(scene.ray_test(ray), 0.0, 1.0), rng

        _, free, _ = dr.while_loop((mi.UInt32(0), mi.Float(0), mi.PCG32(size=size * size)),
                                   lambda k, free, rng: k < spp, body)
        image = dr.select(si.is_valid(), free / spp, 0.0)
        dr.eval(image)
        dr.sync_thread()
        return image.numpy()
    return render


def _pbc_path(size, spp):
    sys.path.insert(0, os.path.join(ROOT, 'samples'))
    from renderer import path, scene

    return _renders(path.PathTracer(scene.load(SCENE), max_depth=8, rr_depth=5), size, spp)


def _pbc_prb(size, spp):
    sys.path.insert(0, os.path.join(ROOT, 'samples'))
    from renderer import prb, scene

    import pbc

    tracer = prb.PathReplay(scene.load(SCENE), max_depth=4)
    left = tracer.bsdfs[[m.name for m in tracer.scene.meshes].index('left_wall')]
    pbc.enable_grad(left.albedo)
    llvm_setup(pbc, pbc.llvm.Float)

    def render():
        pbc.clear_grad(left.albedo)
        with pbc.suspend_grad():
            image = tracer.render(size, size, spp)
        # (other random numbers than the image's, as Mitsuba's render does by default:
        # the gradient of the expected image's mean square, without the noise's variance)
        tracer.render_backward(image * (2 / (3 * size * size)), size, size, spp, seed=1)
        grad = pbc.grad(left.albedo)
        pbc.eval(grad)
        return grad.numpy()
    return render


def _mitsuba_prb(size, spp):
    import drjit as dr
    import mitsuba as mi
    scene = _mitsuba_scene(size, spp, {'type': 'prb', 'max_depth': 4})
    params = mi.traverse(scene)
    key = 'left_wall.bsdf.reflectance.value'
    dr.enable_grad(params[key])
    params.update()

    def render():
        dr.clear_grad(params[key])
        image = mi.render(scene, params, spp=spp)
        dr.backward(dr.mean(dr.square(image), axis=None))
        grad = dr.grad(params[key])
        dr.eval(grad)
        dr.sync_thread()
        return grad.numpy()
    return render


def _mitsuba_path(size, spp):
    import drjit as dr
    import mitsuba as mi
    scene = _mitsuba_scene(size, spp, {'type': 'path', 'max_depth': 8, 'rr_depth': 5})

    def render():
        image = mi.render(scene, spp=spp)
        dr.eval(image)
        dr.sync_thread()
        return image.numpy()
    return render


def _mitsuba_scene(size, spp, integrator):
    """The Cornell box as a Mitsuba scene, with this integrator."""
    import mitsuba as mi
    mi.set_variant('llvm_ad_rgb')
    with open(os.path.join(SCENE, 'scene.json')) as f:
        desc = json.load(f)
    cam = desc['camera']
    film = {'type': 'hdrfilm', 'width': size, 'height': size, 'rfilter': {'type': 'box'},
            'pixel_format': 'rgb'}
    scene = {'type': 'scene', 'integrator': integrator,
             'sensor': {'type': 'perspective', 'fov': cam['fov_deg'], 'fov_axis': 'x',
                        'near_clip': cam['near_clip'], 'far_clip': cam['far_clip'],
                        'to_world': mi.ScalarTransform4f().look_at(
                            origin=cam['origin'], target=cam['target'], up=cam['up']),
                        'film': film,
                        'sampler': {'type': 'independent', 'sample_count': spp}}}
    radiance = {e['mesh']: e['radiance'] for e in desc['emitters']}
    for m in desc['meshes']:
        albedo = desc['materials'][m['material']]['albedo']
        shape = {'type': 'obj', 'filename': os.path.join(SCENE, m['file']),
                 'face_normals': True,
                 'bsdf': {'type': 'diffuse', 'reflectance': {'type': 'rgb', 'value': albedo}}}
        if m['name'] in radiance:
            shape['emitter'] = {'type': 'area',
                                'radiance': {'type': 'rgb', 'value': radiance[m['name']]}}
        scene[m['name']] = shape
    return mi.load_dict(scene)


TASKS = {('ao', 'pbc'): _pbc_ao, ('ao', 'mitsuba'): _mitsuba_ao,
         ('path', 'pbc'): _pbc_path, ('path', 'mitsuba'): _mitsuba_path,
         ('prb', 'pbc'): _pbc_prb, ('prb', 'mitsuba'): _mitsuba_prb}


def child(task, lib, size, spp):
    render = TASKS[task, lib](size, spp)
    t0 = time.perf_counter()
    image = render()
    first = time.perf_counter() - t0
    warm = []
    for _ in range(WARM_REPEAT):
        t0 = time.perf_counter()
        render()
        warm.append(time.perf_counter() - t0)
    return dict(first=first, warm=min(warm), mean=float(image.mean()))


def main():
    t0 = time.perf_counter()
    print(f'pbc renderer benchmarks on {cpu_model()}: {os.cpu_count()} CPUs, '
          f'load average {os.getloadavg()[0]:.2f}')
    os.environ.setdefault('DRJIT_LIBLLVM_PATH', LLVM19)
    for task, size, spp, label in (('ao', 512, 64, 'AO 512x512, 64 rays/pixel'),
                                   ('path', 512, 16, 'path 512x512, 16 spp, depth 8'),
                                   ('prb', 256, 4, 'PRB step 256x256, 4 spp, depth 4')):
        runs = best_of_rounds({name: ('render', (task, lib, str(size), str(spp)), None)
                               for lib, name in (('pbc', 'pbc'),
                                                 ('mitsuba', 'Mitsuba 3.9.1'))})
        for name, r in runs.items():
            if 'error' in r:
                row(f'{label} {name}', r['error'][:60])
                continue
            row(f'{label} {name} first / warm',
                f'{r["first"] * 1e3:.0f} / {r["warm"] * 1e3:.0f}', f'ms (mean {r["mean"]:.4f})')
        p, m = runs.get('pbc', {}), runs.get('Mitsuba 3.9.1', {})
        if 'warm' in p and 'warm' in m:
            row(f'{label} ratio pbc / Mitsuba first / warm',
                f'{p["first"] / m["first"]:.2f} / {p["warm"] / m["warm"]:.2f}')
    print(f'total {time.perf_counter() - t0:.1f} s')


if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:
        print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))))
    else:
        main()
