"""The scene description of `samples/scenes/*/scene.json` (see the README beside the scenes),
read into NumPy arrays on the host: every mesh's triangles in one table, the materials, the
emitters and the camera with its exact ray formula."""

import json
import math
import pathlib
from dataclasses import dataclass, field

import numpy as np

SCENES = pathlib.Path(__file__).resolve().parent.parent / 'scenes'


def load_obj(path):
    """(vertices (V, 3) float64, faces (F, 3) int64, zero-based) of a Wavefront OBJ file of
    positions and faces. Faces of more than three vertices become fans; `v/vt/vn` index
    triples and negative (relative) indices are read as OBJ defines them."""
    vertices, faces = [], []
    for number, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith('#'):
            continue
        if parts[0] == 'v':
            vertices.append([float(c) for c in parts[1:4]])
        elif parts[0] == 'f':
            if len(parts) < 4:
                raise ValueError(f'{path}:{number}: a face needs at least three vertices')
            index = []
            for p in parts[1:]:
                i = int(p.split('/')[0])
                index.append(i - 1 if i > 0 else len(vertices) + i)
            faces += [[index[0], index[k], index[k + 1]] for k in range(1, len(index) - 1)]
    v, f = np.array(vertices, dtype=np.float64).reshape(-1, 3), np.array(faces, dtype=np.int64)
    if f.size and (f.min() < 0 or f.max() >= len(v)):
        raise ValueError(f'{path}: a face refers to a vertex that does not exist')
    return v, f.reshape(-1, 3)


@dataclass
class Camera:
    """A pinhole camera: `rays()` gives the ray through film positions (u, v) in [0, 1]^2
    by the formula of scene.json's `pixel_convention`."""
    origin: np.ndarray
    forward: np.ndarray
    right: np.ndarray
    up: np.ndarray
    tan_half: float          # tan(fov / 2), along x
    width: int
    height: int
    near_clip: float
    far_clip: float

    def direction(self, u, v):
        """Unit directions (NumPy, (..., 3)) through film positions u, v."""
        d = (self.forward + ((2 * u - 1) * self.tan_half)[..., None] * self.right
             + ((1 - 2 * v) * self.tan_half * self.height / self.width)[..., None] * self.up)
        return d / np.linalg.norm(d, axis=-1, keepdims=True)


@dataclass
class Mesh:
    name: str
    material: str
    first: int               # its triangles in Scene.triangles: [first, first + count)
    count: int


@dataclass
class Scene:
    """The triangles of all meshes ((T, 3, 3) float64: the corners of each, counter-clockwise
    seen from the visible side), the mesh of each triangle, the materials' albedos, the area
    emitters ({mesh name: radiance}) and the camera."""
    triangles: np.ndarray
    mesh_of: np.ndarray
    meshes: list
    albedo: dict
    emitters: dict
    camera: Camera
    bbox: tuple
    ao: dict = field(default_factory=dict)

    @property
    def normals(self):
        """Unit geometric normals, (T, 3): normalize((v1 - v0) x (v2 - v0))."""
        t = self.triangles
        n = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
        return n / np.linalg.norm(n, axis=-1, keepdims=True)


def load(name_or_path='cornell'):
    """The scene of a directory holding scene.json (a name: one of samples/scenes/)."""
    root = pathlib.Path(name_or_path)
    if not (root / 'scene.json').exists():
        root = SCENES / str(name_or_path)
    desc = json.loads((root / 'scene.json').read_text())
    albedo = {}
    for name, m in desc['materials'].items():
        if m['type'] != 'diffuse':
            raise ValueError(f'{root}: material {name!r} of type {m["type"]!r} is not supported')
        albedo[name] = np.array(m['albedo'], dtype=np.float64)
    tris, mesh_of, meshes = [], [], []
    for k, m in enumerate(desc['meshes']):
        if m['material'] not in albedo:
            raise ValueError(f'{root}: mesh {m["name"]!r} has an unknown material')
        v, f = load_obj(root / m['file'])
        meshes.append(Mesh(m['name'], m['material'], sum(len(t) for t in tris), len(f)))
        tris.append(v[f])
        mesh_of.append(np.full(len(f), k, dtype=np.uint32))
    emitters = {}
    for e in desc.get('emitters', []):
        if e['type'] != 'area':
            raise ValueError(f'{root}: emitter of type {e["type"]!r} is not supported')
        emitters[e['mesh']] = np.array(e['radiance'], dtype=np.float64)
    c = desc['camera']
    if c.get('fov_axis', 'x') != 'x':
        raise ValueError(f'{root}: only fov_axis "x" is supported')
    origin, target = np.array(c['origin'], float), np.array(c['target'], float)
    forward = (target - origin) / np.linalg.norm(target - origin)
    right = np.cross(forward, np.array(c['up'], float))
    right /= np.linalg.norm(right)
    camera = Camera(origin, forward, right, np.cross(right, forward),
                    math.tan(math.radians(c['fov_deg']) / 2), c['width'], c['height'],
                    c['near_clip'], c['far_clip'])
    box = desc['bbox']
    return Scene(np.concatenate(tris), np.concatenate(mesh_of), meshes, albedo, emitters,
                 camera, (np.array(box['min'], float), np.array(box['max'], float)),
                 desc.get('ao', {}))
