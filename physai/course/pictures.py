"""Pictures of a bundled arm at given joint angles, rendered offscreen by MuJoCo from its model, with what a lesson
speaks of drawn on it (frames, joint axes and names, arrows, an ellipsoid, obstacles, ghost poses).

Conventions: positions in metres in the world frame; joint angles in radians, in the chain's joint order; colours
RGBA in [0, 1]. A picture is a PNG written through :func:`physai.course.lesson.save_figure`.

MuJoCo renders through the OpenGL backend ``MUJOCO_GL`` names. When the user has not set it, the first picture tries
EGL, then OSMesa (both headless), and keeps the first that renders for the rest of the process. Where no backend
renders (or ``MUJOCO_GL=disable``), the same picture is drawn from the chain's own geometry with matplotlib 3-D
(links between the joint anchors, the joint axes, the overlays), and :attr:`Picture.backend` says so: a picture
never fails its lesson for want of OpenGL.

The bundled SO-101 and Panda carry no visual meshes, so their collision geometry is shown, coloured, with a capsule
along each link between successive joint anchors and a dark drum at each joint; the WidowX AI shows its own meshes.
The scene (floor, sky, lights, the added primitives) is built around the model in memory: the model file is not
touched, so its stored chain and hash stay valid.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from physai import _env, robots  # noqa: E402
from physai.kinematics import joint_frames  # noqa: E402
from physai.course.lesson import save_figure  # noqa: E402

GL_ENV = _env.MUJOCO_GL
HEADLESS = ("egl", "osmesa")  # tried in this order when the user has not chosen
_OFF = ("disable", "disabled", "off", "false", "0")  # MuJoCo's values for no OpenGL
_PYOPENGL_PLATFORM = "PYOPENGL_PLATFORM"
FALLBACK = "matplotlib"
PIXEL_DENSITY = 2  # image pixels per layout pixel: sharp on high-density screens and when opened full size
VIEW_COMMAND = "uv run physai view --robot {robot}"  # where a learner turns the arm around

# the arm's colours: SO-101 as printed (yellow plastic, black servos), the Panda's white links
_LINK_RGBA = {"so101": (1.0, 0.78, 0.15, 1.0), "panda": (0.92, 0.92, 0.9, 1.0)}
ARM_NAMES = {"so101": "SO-101", "wxai": "WidowX AI", "panda": "Franka Panda"}
_SERVO_RGBA = (0.12, 0.12, 0.12, 1.0)
_AXIS_RGBA = (0.1, 0.45, 0.95, 1.0)
_TRIAD = ((0.9, 0.15, 0.1, 1.0), (0.1, 0.7, 0.2, 1.0), (0.15, 0.3, 0.95, 1.0))  # x red, y green, z blue


@dataclass(frozen=True)
class Pose:
    """The arm at joint angles ``q`` (n,), rad; ``alpha`` < 1 draws it as a translucent ghost, ``rgba`` tints it."""

    q: np.ndarray
    alpha: float = 1.0
    rgba: tuple | None = None


@dataclass(frozen=True)
class Arrow:
    """An arrow from ``start`` to ``end`` (3,), m, world; ``label`` is written at its head."""

    start: np.ndarray
    end: np.ndarray
    rgba: tuple = (0.85, 0.1, 0.1, 1.0)
    label: str = ""


@dataclass(frozen=True)
class Frame:
    """A frame's axes (x red, y green, z blue) of ``length`` m at the pose ``T_world_frame`` (4, 4)."""

    T_world_frame: np.ndarray
    length: float = 0.06
    label: str = ""


@dataclass(frozen=True)
class Ellipsoid:
    """An ellipsoid at ``center`` (3,) whose semi-axes are the columns of ``axes`` (3, 3), m, world."""

    center: np.ndarray
    axes: np.ndarray
    rgba: tuple = (0.2, 0.6, 1.0, 0.45)
    label: str = ""


@dataclass(frozen=True)
class Box:
    """A box (an obstacle, a table) at ``center`` (3,) with half sizes ``half`` (3,), m, world axes."""

    center: np.ndarray
    half: np.ndarray
    rgba: tuple = (0.55, 0.35, 0.2, 0.6)
    label: str = ""


@dataclass(frozen=True)
class Polyline:
    """A path through ``points`` (k, 3), m, world (the tool's path)."""

    points: np.ndarray
    rgba: tuple = (0.85, 0.1, 0.6, 1.0)
    label: str = ""


@dataclass(frozen=True)
class View:
    """The camera: ``azimuth`` and ``elevation`` in degrees (MuJoCo's free camera), looking at ``lookat`` (3,) from
    ``distance`` m; either left None is framed on the first pose and the overlays."""

    azimuth: float = 135.0
    elevation: float = -20.0
    lookat: tuple | None = None
    distance: float | None = None


@dataclass(frozen=True)
class Picture:
    """A picture written to ``path``: ``backend`` is ``"mujoco-egl"``/``"mujoco-osmesa"``/... for a MuJoCo
    rendering, ``"matplotlib"`` for the drawing from the chain's geometry; ``why`` says why it fell back ("" when
    rendered); ``pixels`` maps each labelled point to its (column, row) in the image's pixels (``PIXEL_DENSITY`` per pixel of
    ``size``; rendered pictures only)."""

    path: Path
    robot: str
    backend: str
    why: str = ""
    pixels: dict = field(default_factory=dict, repr=False)

    @property
    def rendered(self) -> bool:
        return self.backend != FALLBACK

    def alt(self, pose: str, drawn: str) -> str:
        """The alt text: what kind of picture, which arm, in which ``pose``, and what is ``drawn`` on it."""
        kind = (f"MuJoCo rendering of the {ARM_NAMES.get(self.robot, self.robot)} from its bundled model"
                if self.rendered else f"Matplotlib 3-D drawing of the {ARM_NAMES.get(self.robot, self.robot)}'s chain "
                f"(links between joint anchors; no OpenGL backend rendered here: {self.why})")
        return f"{kind}, {pose}. Drawn on it: {drawn}."

    @property
    def drawn_by(self) -> str:
        """What the run prints about the picture: its file and the backend that drew it (and why, for the fallback)."""
        return f"{self.path.name} drawn by {self.backend}" + (f" ({self.why})" if self.why else "")

    def caption(self, text: str) -> str:
        """The caption: ``text`` (what the picture shows), then how it was made and where to turn the arm around."""
        how = ("Rendered by MuJoCo from the bundled model" if self.rendered
               else "Drawn from the chain's own geometry (no OpenGL backend rendered here)")
        return (f"{text} {how}; to turn the arm around and move it, run "
                f"`{VIEW_COMMAND.format(robot=self.robot)}`.")

    def record(self) -> dict:
        """What a lesson saves in its results: the file, the arm and the backend that drew it."""
        return {"file": self.path.name, "robot": self.robot, "backend": self.backend, "rendered": self.rendered,
                "why": self.why}


# ---- the OpenGL backend --------------------------------------------------------------------------------------

_chosen: dict = {}  # the backend this process settled on: {"gl": name} or {"gl": None, "why": reason}


def _try_backend(name: str) -> str:
    """Make ``name`` MuJoCo's GL backend and render one tiny frame; "" when it works, else the reason."""
    import mujoco
    from mujoco.rendering.classic import gl_context

    platform = os.environ.get(_PYOPENGL_PLATFORM)
    os.environ[GL_ENV] = name
    try:
        # mujoco picks its GL context class when imported; a lesson imports mujoco before it asks for a picture,
        # so the module that picks is read again with the variable now set
        importlib.reload(gl_context)
        probe = mujoco.MjSpec()  # one sphere: the least a context must draw
        probe.worldbody.add_geom(size=[0.1, 0, 0])
        m = probe.compile()
        with mujoco.Renderer(m, 8, 8) as r:
            r.update_scene(mujoco.MjData(m))
            r.render()
    except Exception as exc:  # noqa: BLE001 - any failure to get a GL context means: try the next, or draw
        if platform is None:  # mujoco's EGL module names PyOpenGL's platform; the next backend needs its own
            os.environ.pop(_PYOPENGL_PLATFORM, None)
        return f"{name}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    return ""


def gl_backend() -> str | None:
    """The OpenGL backend MuJoCo renders through in this process, chosen once: the user's ``MUJOCO_GL`` when set,
    else the first of EGL and OSMesa that renders; None when none does (see :func:`fallback_reason`)."""
    if "gl" not in _chosen:
        user = _env.mujoco_gl()
        if user in _OFF:
            _chosen.update(gl=None, why=f"{GL_ENV}={user}")
        else:
            reasons = []
            for name in [user] if user else HEADLESS:
                why = _try_backend(name)
                if not why:
                    _chosen.update(gl=name, why="")
                    break
                reasons.append(why)
            else:
                _chosen.update(gl=None, why="; ".join(reasons))
                if not user:
                    os.environ.pop(GL_ENV, None)
    return _chosen["gl"]


def fallback_reason() -> str:
    """Why no OpenGL backend renders ("" when one does)."""
    gl_backend()
    return _chosen["why"]


# ---- the scene -----------------------------------------------------------------------------------------------


def _has_visual_meshes(spec) -> bool:
    return sum(g.group == 2 and g.type == _mj().mjtGeom.mjGEOM_MESH for g in spec.geoms) >= 3


def _mj():
    import mujoco

    return mujoco


def scene_spec(robot: str, floor_z: float = 0.0):
    """The robot's model in a scene: floor (at height ``floor_z``, m), sky, lights, and on an arm with no visual
    meshes its collision geometry coloured, a capsule along each link and a drum at each joint.
    -> ``mujoco.MjSpec`` (compile it)."""
    mujoco = _mj()
    spec = mujoco.MjSpec.from_file(str(robots.model_path(robot)))
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]
    spec.visual.quality.shadowsize = 2048
    spec.add_texture(name="physai_sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
                     builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT, rgb1=[0.86, 0.9, 0.96], rgb2=[0.98, 0.98, 1.0],
                     width=64, height=64)
    spec.add_texture(name="physai_floor", type=mujoco.mjtTexture.mjTEXTURE_2D,
                     builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER, rgb1=[0.82, 0.82, 0.8], rgb2=[0.74, 0.74, 0.72],
                     width=64, height=64)
    mat = spec.add_material(name="physai_floor", texrepeat=[10, 10])
    mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "physai_floor"
    world = spec.worldbody
    world.add_geom(name="physai_floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[3, 3, 0.01], pos=[0, 0, floor_z],
                   material="physai_floor",
                   contype=0, conaffinity=0, group=0)
    world.add_light(pos=[0.8, -0.8, 2.0], dir=[-0.4, 0.4, -1.0], diffuse=[0.6, 0.6, 0.6], castshadow=True)
    world.add_light(pos=[-1.0, 0.6, 1.5], dir=[0.5, -0.3, -1.0], diffuse=[0.3, 0.3, 0.3], castshadow=False)
    if not _has_visual_meshes(spec):
        link = _LINK_RGBA.get(robot, (0.8, 0.8, 0.8, 1.0))
        for g in spec.geoms:
            if g.name != "physai_floor":
                g.rgba = link
                g.group = 1
        _add_link_primitives(robot, spec, link)
    return spec


def _add_link_primitives(robot: str, spec, link_rgba) -> None:
    """A capsule from each joint's body to the next joint's body (in the parent's frame) and a dark drum along each
    hinge, so an arm drawn from boxes and capsules reads as one piece."""
    mujoco = _mj()
    chain = robots.load(robot)
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    bodies = [model.jnt_bodyid[model.joint(name).id] for name in chain.joint_names]
    tool = model.site(chain.tool_name)
    ends = [(bodies[i], data.xpos[bodies[i + 1]]) for i in range(len(bodies) - 1)]
    ends.append((tool.bodyid[0], data.site_xpos[tool.id]))
    for body_id, end_world in ends:
        R, p = data.xmat[body_id].reshape(3, 3), data.xpos[body_id]
        end_local = R.T @ (end_world - p)
        if np.linalg.norm(end_local) > 1e-3:
            spec.body(model.body(body_id).name).add_geom(
                type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, *end_local], size=[_radius(robot), 0, 0],
                rgba=link_rgba, contype=0, conaffinity=0, group=1)
    for name, body_id in zip(chain.joint_names, bodies):
        j = model.joint(name)
        axis, anchor = np.asarray(j.axis), np.asarray(j.pos)
        half = 1.1 * _radius(robot)
        spec.body(model.body(body_id).name).add_geom(
            type=mujoco.mjtGeom.mjGEOM_CYLINDER, fromto=[*(anchor - half * axis), *(anchor + half * axis)],
            size=[1.25 * _radius(robot), 0, 0], rgba=_SERVO_RGBA, contype=0, conaffinity=0, group=1)


def _radius(robot: str) -> float:
    return {"so101": 0.014, "panda": 0.045}.get(robot, 0.02)


# ---- drawing -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Labelled:
    point: np.ndarray
    text: str
    rgba: tuple


def _labels(chain, q, overlays, joint_names: bool) -> list[_Labelled]:
    out = []
    if joint_names:
        T_world_joint, _ = joint_frames(chain, q)
        out += [_Labelled(T[:3, 3], name, _AXIS_RGBA) for T, name in zip(T_world_joint, chain.joint_names)]
    for o in overlays:
        if o.label:
            point = {Arrow: lambda a: a.end, Frame: lambda f: f.T_world_frame[:3, 3],
                     Ellipsoid: lambda e: e.center + e.axes[:, np.argmax(np.linalg.norm(e.axes, axis=0))],
                     Box: lambda b: b.center + b.half * [0, 0, 1], Polyline: lambda p: p.points[-1]}[type(o)](o)
            out.append(_Labelled(np.asarray(point, float), o.label, getattr(o, "rgba", (0, 0, 0, 1))))
    return out


def _focus(chain, poses, overlays) -> np.ndarray:
    """The points the camera is framed on: every pose's joint anchors and tool, and the overlays."""
    pts = []
    for pose in poses:
        T_world_joint, T_world_tool = joint_frames(chain, pose.q)
        pts += [T[:3, 3] for T in T_world_joint] + [T_world_tool[:3, 3]]
    for o in overlays:
        if isinstance(o, Arrow):
            pts += [o.start, o.end]
        elif isinstance(o, Frame):
            pts.append(o.T_world_frame[:3, 3])
        elif isinstance(o, Ellipsoid):
            pts += [o.center + s * a for a in o.axes.T for s in (-1, 1)]
        elif isinstance(o, Box):
            pts += [o.center - o.half, o.center + o.half]
        elif isinstance(o, Polyline):
            pts += list(o.points)
    return np.asarray(pts, float)


def picture(robot: str, poses, path, *, overlays=(), joint_names: bool = False, joint_axes: bool = False,
            view: View = View(), title: str = "", size: tuple[int, int] = (560, 420), floor_z: float = 0.0) -> Picture:
    """Draw the bundled ``robot`` in ``poses`` (a :class:`Pose` or several; the first is the one labelled) with
    ``overlays`` (:class:`Arrow`, :class:`Frame`, :class:`Ellipsoid`, :class:`Box`, :class:`Polyline`) and write
    the PNG ``path``. ``joint_names``/``joint_axes`` label each joint and draw its axis (blue) at the first pose.
    ``size`` is (width, height) in layout pixels (the PNG has ``PIXEL_DENSITY`` times as many); ``floor_z`` the floor's height (m; lower it to show what lies below a
    table drawn as a :class:`Box`). -> :class:`Picture` (which backend drew it, and the labelled points'
    pixels).

    Examples
    --------
    >>> import numpy as np, tempfile, pathlib
    >>> from physai.course.pictures import Pose, picture
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "so101.png"
    >>> pic = picture("so101", Pose(np.zeros(5)), out, size=(160, 120))
    >>> out.is_file(), pic.backend in ("mujoco-egl", "mujoco-osmesa", "mujoco-glfw", "matplotlib")
    (True, True)
    """
    poses = [poses] if isinstance(poses, Pose) else list(poses)
    chain = robots.load(robot)
    overlays = list(overlays)
    if joint_axes:
        T_world_joint, _ = joint_frames(chain, poses[0].q)
        reach = 2.5 * _radius(robot) + 0.02
        overlays += [Arrow(T[:3, 3] - reach * (T[:3, :3] @ a), T[:3, 3] + reach * (T[:3, :3] @ a), _AXIS_RGBA)
                     for T, a in zip(T_world_joint, chain.axis_joint)]
    labels = _labels(chain, poses[0].q, overlays, joint_names)
    gl = gl_backend()
    if gl is not None:
        try:
            return _render(robot, chain, poses, overlays, labels, view, title, size, Path(path), gl, floor_z)
        except Exception as exc:  # noqa: BLE001 - a picture never fails its lesson: draw it instead
            why = f"mujoco-{gl}: {type(exc).__name__}: {exc}"
    else:
        why = fallback_reason()
    _draw(robot, chain, poses, overlays, labels, view, title, size, Path(path))
    return Picture(Path(path), robot, FALLBACK, why)


def camera_pixels(scene, points, width: int, height: int) -> np.ndarray:
    """Where MuJoCo's rendered camera (the scene's cameras after ``update_scene``) puts world ``points`` (k, 3):
    (k, 2) (column, row) in pixels, (0, 0) the top-left corner of the image. The pinhole of ``mjr_render`` without
    stereo: the average of the scene's two eye cameras, its position, forward and up axes and its frustum at the
    near plane."""
    cam = _mj().mjv_averageCamera(scene.camera[0], scene.camera[1])
    pos, fwd, up = np.array(cam.pos), np.array(cam.forward), np.array(cam.up)
    right = np.cross(fwd, up)
    d = np.atleast_2d(points) - pos
    z = d @ fwd
    x, y = cam.frustum_near * (d @ right) / z, cam.frustum_near * (d @ up) / z
    half = cam.frustum_width or 0.5 * width / height * (cam.frustum_top - cam.frustum_bottom)
    col = (x - (cam.frustum_center - half)) / (2 * half) * width
    row = (cam.frustum_top - y) / (cam.frustum_top - cam.frustum_bottom) * height
    return np.stack([col, row], axis=-1)


def free_camera(points, view: View):
    """A ``mujoco.MjvCamera`` looking at the middle of ``points`` (k, 3) from far enough to hold them all."""
    mujoco = _mj()
    cam = mujoco.MjvCamera()
    lo, hi = points.min(axis=0), points.max(axis=0)
    cam.lookat[:] = view.lookat if view.lookat is not None else 0.5 * (lo + hi)
    # a sphere of radius r fits MuJoCo's default 45 degree field of view from about 2.6 r
    cam.distance = view.distance or 2.9 * max(float(np.linalg.norm(hi - lo)) / 2, 0.08)
    cam.azimuth, cam.elevation = view.azimuth, view.elevation
    return cam


def _posed(model, data, chain, q) -> None:
    mujoco = _mj()
    data.qpos[:] = model.qpos0
    data.qpos[list(chain.qpos_adr)] = q
    mujoco.mj_kinematics(model, data)


def _add_geom(scene, gtype, size, pos, mat, rgba) -> None:
    mujoco = _mj()
    if scene.ngeom >= scene.maxgeom:
        return
    mujoco.mjv_initGeom(scene.geoms[scene.ngeom], gtype, np.asarray(size, float), np.asarray(pos, float),
                        np.asarray(mat, float).ravel(), np.asarray(rgba, np.float32))
    scene.ngeom += 1


# MuJoCo 4 draws an arrow geom half as long as the size mjv_connector gives it (MuJoCo 3 drew it whole); the
# picture test checks the drawn tip against the camera's projection of the end point
_ARROW_LENGTH_SCALE = 2.0 if int(__import__("mujoco").__version__.split(".")[0]) >= 4 else 1.0


def _add_arrow(scene, start, end, rgba, width) -> None:
    mujoco = _mj()
    if scene.ngeom >= scene.maxgeom or np.linalg.norm(np.subtract(end, start)) < 1e-9:
        return
    g = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_ARROW, np.zeros(3), np.zeros(3), np.eye(3).ravel(),
                        np.asarray(rgba, np.float32))
    mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_ARROW, width, np.asarray(start, float), np.asarray(end, float))
    g.size[2] *= _ARROW_LENGTH_SCALE
    scene.ngeom += 1


def _add_overlays(scene, overlays, scale) -> None:
    mujoco = _mj()
    for o in overlays:
        if isinstance(o, Arrow):
            _add_arrow(scene, o.start, o.end, o.rgba, 0.035 * scale)
        elif isinstance(o, Frame):
            for k, rgba in enumerate(_TRIAD):
                p = o.T_world_frame[:3, 3]
                _add_arrow(scene, p, p + o.length * o.T_world_frame[:3, k], rgba, 0.035 * scale)
        elif isinstance(o, Ellipsoid):
            radii = np.linalg.norm(o.axes, axis=0)
            R = o.axes / np.where(radii > 0, radii, 1)
            if np.linalg.det(R) < 0:
                R[:, 2] *= -1
            _add_geom(scene, mujoco.mjtGeom.mjGEOM_ELLIPSOID, np.maximum(radii, 1e-4), o.center, R, o.rgba)
        elif isinstance(o, Box):
            _add_geom(scene, mujoco.mjtGeom.mjGEOM_BOX, o.half, o.center, np.eye(3), o.rgba)
        elif isinstance(o, Polyline):
            for a, b in zip(o.points[:-1], o.points[1:]):
                if scene.ngeom < scene.maxgeom and np.linalg.norm(b - a) > 1e-9:
                    g = scene.geoms[scene.ngeom]
                    mujoco.mjv_initGeom(g, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3),
                                        np.eye(3).ravel(), np.asarray(o.rgba, np.float32))
                    mujoco.mjv_connector(g, mujoco.mjtGeom.mjGEOM_CAPSULE, 0.008 * scale, a, b)
                    scene.ngeom += 1


def _render(robot, chain, poses, overlays, labels, view, title, size, path, gl, floor_z) -> Picture:
    mujoco = _mj()
    width, height = PIXEL_DENSITY * size[0], PIXEL_DENSITY * size[1]
    spec = scene_spec(robot, floor_z)
    rendered_groups = (0, 1, 2) if _has_visual_meshes(spec) else (0, 1)
    model = spec.compile()
    model.vis.global_.offwidth, model.vis.global_.offheight = max(width, 640), max(height, 480)
    data = mujoco.MjData(model)
    opt = mujoco.MjvOption()
    opt.geomgroup[:] = [int(g in rendered_groups) for g in range(len(opt.geomgroup))]
    points = _focus(chain, poses, overlays)
    cam = free_camera(points, view)
    scale = 0.25 * cam.distance  # overlay widths grow with the view
    with mujoco.Renderer(model, height, width, max_geom=4000) as r:
        _posed(model, data, chain, poses[0].q)
        r.update_scene(data, cam, opt)
        first = r.scene.ngeom
        _tint(model, r.scene, 0, first, poses[0])
        for pose in poses[1:]:
            _posed(model, data, chain, pose.q)
            start = r.scene.ngeom
            mujoco.mjv_addGeoms(model, data, opt, mujoco.MjvPerturb(), mujoco.mjtCatBit.mjCAT_DYNAMIC, r.scene)
            _tint(model, r.scene, start, r.scene.ngeom, pose)
        _add_overlays(r.scene, overlays, scale)
        image = _on_top(r, r.render(), [o for o in overlays if _opaque(o)], scale)
        pixels = camera_pixels(r.scene, np.array([lab.point for lab in labels]).reshape(-1, 3), width, height)
    fig = plt.figure(figsize=(size[0] / 100, size[1] / 100))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(image)
    ax.set_axis_off()
    for lab, (c, row) in zip(labels, pixels):
        ax.annotate(lab.text, (c, row), xytext=(6, 6), textcoords="offset points", fontsize=8,
                    color=_dark(lab.rgba), bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none",
                                                  "alpha": 0.75})
    if title:
        ax.text(0.01, 0.99, title, transform=ax.transAxes, va="top", fontsize=9,
                bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.6", "alpha": 0.85})
    save_figure(fig, path, dpi=100 * PIXEL_DENSITY)
    plt.close(fig)
    return Picture(path, robot, f"mujoco-{gl}", "",
                   {lab.text: tuple(map(float, px)) for lab, px in zip(labels, pixels)})


def _opaque(overlay) -> bool:
    return isinstance(overlay, (Arrow, Frame)) or overlay.rgba[3] >= 1


def _on_top(renderer, image, overlays, scale) -> np.ndarray:
    """``image`` with the opaque ``overlays`` drawn over everything, like labels on a diagram: a frame or an axis
    inside the arm's links stays in view. The overlays are rendered again alone, and MuJoCo's segmentation render
    of that scene says which pixels they cover."""
    scene = renderer.scene
    scene.ngeom = 0
    _add_overlays(scene, overlays, scale)
    if scene.ngeom == 0:
        return image
    for i in range(scene.ngeom):  # segmentation reports geoms by segid; -1 would read as background
        scene.geoms[i].segid, scene.geoms[i].objid, scene.geoms[i].objtype = i, i, 0
    alone = renderer.render()
    renderer.enable_segmentation_rendering()
    try:
        covered = renderer.render()[..., 1] >= 0
    finally:
        renderer.disable_segmentation_rendering()
    return np.where(covered[..., None], alone, image)


def _tint(model, scene, start, stop, pose: Pose) -> None:
    """Colour the arm's geoms ``scene.geoms[start:stop]`` as ``pose`` asks; the world's own (floor, table) keep theirs."""
    if pose.alpha >= 1 and pose.rgba is None:
        return
    for i in range(start, stop):
        g = scene.geoms[i]
        if g.objtype != _mj().mjtObj.mjOBJ_GEOM or model.geom_bodyid[g.objid] == 0:
            continue
        rgba = np.array(pose.rgba if pose.rgba is not None else g.rgba, np.float32)
        rgba[3] = pose.alpha
        g.rgba[:] = rgba


def _dark(rgba) -> tuple:
    return tuple(0.7 * np.asarray(rgba[:3], float))


def _draw(robot, chain, poses, overlays, labels, view, title, size, path) -> None:
    """The fallback: the chain's links (joint anchor to joint anchor to tool), joint axes and overlays in 3-D."""
    fig = plt.figure(figsize=(size[0] / 100, size[1] / 100))
    ax = fig.add_subplot(projection="3d")
    link = _LINK_RGBA.get(robot, (0.5, 0.5, 0.5, 1.0))
    for pose in poses:
        T_world_joint, T_world_tool = joint_frames(chain, pose.q)
        pts = np.array([np.zeros(3)] + [T[:3, 3] for T in T_world_joint] + [T_world_tool[:3, 3]])
        color = pose.rgba[:3] if pose.rgba is not None else _dark(link)
        ax.plot(*pts.T, "-o", color=color, alpha=pose.alpha, lw=4, ms=5, mec=_SERVO_RGBA[:3])
    for o in overlays:
        if isinstance(o, Arrow):
            ax.quiver(*o.start, *(np.subtract(o.end, o.start)), color=o.rgba[:3], lw=2)
        elif isinstance(o, Frame):
            for k, rgba in enumerate(_TRIAD):
                ax.quiver(*o.T_world_frame[:3, 3], *(o.length * o.T_world_frame[:3, k]), color=rgba[:3], lw=2)
        elif isinstance(o, Ellipsoid):
            u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 24), np.linspace(0, np.pi, 12))
            sphere = np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)])
            x, y, z = np.einsum("ij,jkl->ikl", o.axes, sphere) + o.center[:, None, None]
            ax.plot_wireframe(x, y, z, color=o.rgba[:3], lw=0.5)
        elif isinstance(o, Box):
            corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * o.half
            corners += o.center
            for a in range(8):
                for b in range(a + 1, 8):
                    if np.count_nonzero(corners[a] != corners[b]) == 1:
                        ax.plot(*np.array([corners[a], corners[b]]).T, color=o.rgba[:3], lw=1)
        elif isinstance(o, Polyline):
            ax.plot(*np.asarray(o.points).T, color=o.rgba[:3], lw=1.5)
    for lab in labels:
        ax.text(*lab.point, f" {lab.text}", fontsize=7, color=_dark(lab.rgba))
    pts = np.vstack([_focus(chain, poses, overlays), np.zeros(3)])
    middle = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    half = np.maximum(0.5 * np.ptp(pts, axis=0) + 0.02, 0.05)  # every axis at least 10 cm: no crowded ticks
    ax.set(xlim=(middle[0] - half[0], middle[0] + half[0]), ylim=(middle[1] - half[1], middle[1] + half[1]),
           zlim=(middle[2] - half[2], middle[2] + half[2]))
    ax.set_box_aspect(half)  # metres drawn alike on the three axes
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
    ax.view_init(elev=-view.elevation, azim=view.azimuth - 180)
    ax.set(xlabel="x (m)", ylabel="y (m)", zlabel="z (m)")
    if title:
        ax.set_title(title + "\n(drawn from the chain: no OpenGL renderer)", fontsize=9)
    save_figure(fig, path, dpi=100 * PIXEL_DENSITY)
    plt.close(fig)
