"""Interactive 3-D viewer: drag a target, watch the arm follow through physai's damped step.

``physai view --robot so101`` serves a viser page on 127.0.0.1 only. The arm is drawn from the MuJoCo
model's own geoms (meshes as MuJoCo compiled them, primitives as triangle meshes), in the groups
MuJoCo's viewer shows by default (0-2: visual geoms, collision geoms hidden). Each frame the arm takes
one resolved-rate step toward the target gizmo with :func:`physai.singularity.damped_step`, the
iteration numerical IK repeats, so you see the solver move rather than jump:

- ``"dls"``: adaptive damping and uniform velocity scaling (the lesson's safe step);
- ``"pinv"``: the same call with no damping and no velocity limit, i.e. the pseudoinverse, whose
  joint speeds blow up as ``sigma_min -> 0`` (drag the target out of reach and watch ``|qdot|``).

The panel shows the step's health: ``sigma_min``, ``kappa`` (position block), ``lambda``, the
velocity scale and the commanded joint speed.
"""

from __future__ import annotations

import contextlib
import html
import http
import re
import threading

import numpy as np

from physai import robots
from physai._extras import require
from physai._validate import count, finite_array, nonnegative, one_of, positive
from physai._world_check import checked_world
from physai.errors import InputError
from physai.kinematics import Chain, tool_pose_and_jacobian
from physai.singularity import StepHealth, damped_step

HOST = "127.0.0.1"
METHODS = ("dls", "pinv")
_PINV = {"lambda_max": 0.0, "qdot_limit": np.inf}  # damped_step with nothing damped or limited
VISIBLE_GROUPS = 3  # MuJoCo's viewer shows geom groups 0, 1, 2 by default


def follow_step(chain: Chain, q, target, method: str, dt: float, gain: float = 4.0, max_speed: float = 0.3,
                avoid=None):
    """One frame of following: ``q: (n,)`` rad, ``target: (3,)`` world m -> ``(q_next, StepHealth, qdot)``.

    The commanded tool velocity is ``gain * (target - p)`` capped at ``max_speed`` (m/s); the joint
    step comes from :func:`damped_step` on the position block and is clipped into the joint limits.
    ``avoid``: a :class:`physai.collision.CollisionWorld`; the step then passes
    :func:`physai.nullspace.avoidance_step` (the arm keeps the margin, the tool stops short if it must).
    """
    one_of(method, "method", METHODS)
    dt, gain, max_speed = positive(dt, "dt"), nonnegative(gain, "gain"), positive(max_speed, "max_speed")
    T, J = tool_pose_and_jacobian(chain, q)
    v = gain * (finite_array(target, "target", (3,)) - T[:3, 3])
    speed = np.linalg.norm(v)
    if speed > max_speed:
        v *= max_speed / speed
    dq, h = damped_step(J, v, dt, **(_PINV if method == "pinv" else {}))
    if checked_world(avoid, chain) is not None:
        from physai.nullspace import avoidance_step

        dq, _ = avoidance_step(avoid, q, J[:3], dq)
    return np.clip(q + dq, chain.lower, chain.upper), h, dq / dt


CLOSE_COLOR = (230, 40, 40)  # a geom of a pair within the margin


def close_geoms(world, q) -> set[int]:
    """The geoms of every pair of ``world`` closer than its margin at ``q: (n,)`` (the viewer paints them red)."""
    d = world.distances(q)
    return {int(g) for g in world.pairs[d < world.pair_margin].ravel()}


def _geom_mesh(m, g: int):
    """Triangle mesh ``(vertices (V,3), faces (F,3))`` of geom ``g`` in the geom's frame; None for planes etc."""
    import mujoco

    size, kind = m.geom_size[g], m.geom_type[g]
    if kind == mujoco.mjtGeom.mjGEOM_MESH:
        mid = m.geom_dataid[g]
        v0, nv, f0, nf = m.mesh_vertadr[mid], m.mesh_vertnum[mid], m.mesh_faceadr[mid], m.mesh_facenum[mid]
        return m.mesh_vert[v0:v0 + nv], m.mesh_face[f0:f0 + nf]
    import trimesh  # slow to import (seconds); only models with primitive geoms need it

    if kind == mujoco.mjtGeom.mjGEOM_BOX:
        mesh = trimesh.creation.box(extents=2 * size)
    elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif kind == mujoco.mjtGeom.mjGEOM_ELLIPSOID:
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        mesh.apply_scale(size)
    elif kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        mesh = trimesh.creation.cylinder(radius=size[0], height=2 * size[1])
    elif kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
        mesh = trimesh.creation.capsule(height=2 * size[1], radius=size[0])
    else:  # planes, height fields, SDFs: the grid stands in for the floor
        return None
    return np.asarray(mesh.vertices), np.asarray(mesh.faces)


def simplify(vertices: np.ndarray, faces: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering: merge the vertices in each ``cell``-sized cube (m) into their mean, drop faces
    that collapse. The SO-101's STL meshes have ~400k triangles, more than a software-rendered browser
    draws smoothly; at 2 mm they keep their silhouette with ~30k."""
    _, cluster = np.unique(np.floor(vertices / cell).astype(np.int64), axis=0, return_inverse=True)
    cluster = cluster.ravel()
    count = np.bincount(cluster)
    merged = np.zeros((len(count), 3))
    np.add.at(merged, cluster, vertices)
    f = cluster[faces]
    keep = (f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])
    return merged / count[:, None], f[keep]


def _geom_color(m, g: int) -> tuple[tuple[int, int, int], float]:
    rgba = m.mat_rgba[m.geom_matid[g]] if m.geom_matid[g] >= 0 else m.geom_rgba[g]
    return tuple(int(round(255 * c)) for c in rgba[:3]), float(rgba[3])



def model_text(name: str) -> str:
    """A name from a model file as inert text for viser's markdown panel, which renders raw HTML.

    HTML is escaped (a joint named ``<iframe srcdoc=...>`` must not run in the page) and markdown's
    control characters are backslash-escaped (``|`` would split a table cell, ``[x](...)`` make a link).
    """
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~])", r"\\\1", html.escape(str(name), quote=True))


LOCAL_HOSTS = (HOST, "localhost")  # the names under which a browser on this machine reaches the page
_SERVE_LOCK = threading.Lock()


def origin_allowed(origin: str | None, host: str | None) -> bool:
    """Whether a request with these ``Origin`` and ``Host`` headers comes from the viewer's own page.

    A browser sends ``Origin`` with every websocket handshake: it must be ``http://`` plus the ``Host``
    the page was loaded from, and that host must be this machine by name (127.0.0.1 or localhost, any
    port, so an SSH-forwarded port works). A foreign page open in the user's browser
    (``http://evil.example``, or another local port) is refused, and so is a DNS-rebinding page, whose
    ``Host`` is its own domain. No ``Origin`` at all means a non-browser client on this machine, which
    can reach the port anyway.
    """
    if origin is None:
        return True
    if host is None or origin != f"http://{host}":
        return False
    return host.rsplit(":", 1)[0] in LOCAL_HOSTS


def _same_origin(process_request):
    """Wrap viser's HTTP hook: any request (the websocket handshake above all) from a foreign origin gets 403."""

    def check(connection, request):
        if not origin_allowed(request.headers.get("Origin"), request.headers.get("Host")):
            return connection.respond(http.HTTPStatus.FORBIDDEN, "foreign origin refused\n")
        return process_request(connection, request) if process_request is not None else None

    return check


@contextlib.contextmanager
def _origin_checked_serve():
    """While viser starts its server, give its websocket handshake the same-origin check.

    viser offers no hook for the handshake, so its one call of ``websockets.asyncio.server.serve``
    is wrapped for the duration of the constructor (serialised by a lock, restored afterwards);
    only handlers of viser's websocket server get the check.
    """
    import websockets.asyncio.server as ws_server

    original = ws_server.serve

    class serve(original):
        def __init__(self, handler, *args, process_request=None, **kwargs):
            if "WebsockServer" in getattr(handler, "__qualname__", ""):
                process_request = _same_origin(process_request)
            super().__init__(handler, *args, process_request=process_request, **kwargs)

    with _SERVE_LOCK:
        ws_server.serve = serve
        try:
            yield
        finally:
            ws_server.serve = original


class Viewer:
    """A running viewer: viser server, scene, panel and the follow loop (a daemon thread).

    ``set_target``/``set_method`` do what dragging the gizmo and the method switch do; ``q`` and
    ``readout`` are the served state. ``close()`` stops the loop and the server. ``avoid``: a
    :class:`physai.collision.CollisionWorld` of the robot's chain; its scene is drawn instead of the bare robot, the
    geoms of pairs within the margin turn red, and every step keeps the margin (:func:`follow_step`).
    """

    def __init__(self, robot: str = "so101", *, site: str | None = None, port: int = 8080, rate_hz: float = 30.0,
                 mesh_cell: float = 0.002, avoid=None):
        import mujoco

        require("viewer", "physai's viewer")
        import viser

        # viser retries the next port forever when the asked one cannot be bound: refuse impossible ports first
        port = count(port, "port", minimum=0, maximum=65535)
        rate_hz, mesh_cell = positive(rate_hz, "rate_hz"), positive(mesh_cell, "mesh_cell")
        self.model = robots.mujoco_model(robot)
        self.chain = robots.load(robot, site=site)  # the chain of that same model file
        # With a collision world its scene is drawn (obstacles and the pairs' collision geoms) and kept clear
        self.world = checked_world(avoid, self.chain)
        self._qpos_adr = list(self.chain.qpos_adr)  # the chain's joints in the drawn model
        if self.world is not None:
            self.model, self._qpos_adr = self.world.model, list(self.world.qpos_adr)
        self._geoms: dict[int, object] = {}
        self._close: set[int] = set()
        self._data = mujoco.MjData(self.model)
        self._dt = 1.0 / rate_hz
        self._lock = threading.Lock()  # the state: q, target, method, readout
        self._draw_lock = threading.Lock()  # MjData and the scene, drawn from the loop and from GUI callbacks
        self._q = self.chain.q_ref.copy()
        self._target = tool_pose_and_jacobian(self.chain, self._q)[0][:3, 3].copy()
        self._method = "dls"
        self.readout: StepHealth | None = None
        self.qdot = np.zeros(self.chain.n)

        with _origin_checked_serve():
            self.server = viser.ViserServer(host=HOST, port=port, verbose=False)
        self.url = f"http://{HOST}:{self.server.get_port()}"
        self.server.gui.configure_theme(show_share_button=False)
        self.server.gui.main_panel.dock_right()  # beside the 3-D view, not over it
        self.server.scene.configure_default_lights(cast_shadow=False)  # shadows double the (software) render cost
        # No image-based lighting: its first frame costs tens of seconds in a software-rendered browser;
        # a hemisphere light lights every side instead.
        self.server.scene.configure_environment_map(hdri=None)
        self.server.scene.add_light_hemisphere("/light", intensity=2.0)
        self.server.initial_camera.position = (0.6, -0.5, 0.45)
        self.server.initial_camera.look_at = (0.15, 0.0, 0.12)
        self.server.scene.add_grid("/grid", width=1.0, height=1.0, cell_size=0.05)
        self._bodies = self._add_arm(mesh_cell)
        self._tool = self.server.scene.add_icosphere("/tool", radius=0.008, color=(40, 160, 60))
        self._gizmo = self.server.scene.add_transform_controls("/target", scale=0.12, disable_rotations=True,
                                                               position=tuple(self._target))
        self.server.scene.add_icosphere("/target/ball", radius=0.01, color=(220, 40, 40))
        self._gizmo.on_update(lambda _: self.set_target(self._gizmo.position))
        gui = self.server.gui
        gui.add_markdown(f"**{model_text(self.chain.name)}**, tool {model_text(self.chain.tool_name)}: drag the red "
                         "target. "
                         "*dls*: adaptive damping and a 6.28 rad/s limit; *pinv*: neither, so joint speeds "
                         "blow up near a singularity (drag the target out of reach).")
        self._method_gui = gui.add_dropdown("method", METHODS, initial_value=self._method)
        self._method_gui.on_update(lambda _: self.set_method(self._method_gui.value))
        gui.add_button("home").on_click(lambda _: self.home())
        self._panel = gui.add_markdown(self._panel_text())
        self._draw()

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="physai-viewer", daemon=True)
        self._thread.start()

    # ---- state ---------------------------------------------------------------------------------

    @property
    def q(self) -> np.ndarray:
        with self._lock:
            return self._q.copy()

    @property
    def target(self) -> np.ndarray:
        with self._lock:
            return self._target.copy()

    def set_target(self, position) -> None:
        """Move the target to ``position: (3,)`` (world, m); the gizmo in the page moves with it."""
        p = finite_array(position, "position", (3,))
        if p.shape != (3,):
            raise InputError(f"position: expected 3 numbers, got shape {p.shape}")
        with self._lock:
            self._target = p
        if not np.allclose(self._gizmo.position, p):
            self._gizmo.position = tuple(p)

    def set_method(self, method: str) -> None:
        one_of(method, "method", METHODS)
        with self._lock:
            self._method = method
        if self._method_gui.value != method:
            self._method_gui.value = method

    def home(self) -> None:
        """Back to the model's reference pose, target on the tool."""
        with self._lock:
            self._q = self.chain.q_ref.copy()
        self.set_target(tool_pose_and_jacobian(self.chain, self._q)[0][:3, 3])
        self._draw()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.server.stop()

    # ---- the loop ------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.wait(self._dt):
            with self._lock:
                q, target, method = self._q, self._target, self._method
            if np.linalg.norm(target - tool_pose_and_jacobian(self.chain, q)[0][:3, 3]) < 1e-4:
                continue  # arrived: stop stepping (and sending updates) until the target moves
            q_next, h, qdot = follow_step(self.chain, q, target, method, self._dt, avoid=self.world)
            with self._lock:
                self._q, self.readout, self.qdot = q_next, h, qdot
            self._draw()

    # ---- drawing -------------------------------------------------------------------------------

    def _add_arm(self, mesh_cell: float) -> dict[int, object]:
        """One scene frame per body that carries a visible geom, the geoms as meshes inside it
        (simplified to ``mesh_cell`` m; 0 keeps every triangle)."""
        m, frames = self.model, {}
        paired = set() if self.world is None else set(self.world.pairs.ravel().tolist())
        for g in range(m.ngeom):
            if (m.geom_group[g] >= VISIBLE_GROUPS or m.geom_rgba[g][3] == 0) and g not in paired:
                continue
            mesh = _geom_mesh(m, g)
            if mesh is None:
                continue
            b = int(m.geom_bodyid[g])
            if b not in frames:
                frames[b] = self.server.scene.add_frame(f"/arm/body{b}", show_axes=False)
            vertices, faces = simplify(*mesh, mesh_cell) if mesh_cell > 0 else mesh
            color, alpha = _geom_color(m, g)
            self._geoms[g] = self.server.scene.add_mesh_simple(
                f"/arm/body{b}/geom{g}", vertices, faces, color=color, opacity=None if alpha >= 1 else alpha,
                cast_shadow=False, receive_shadow=False, position=tuple(m.geom_pos[g]), wxyz=tuple(m.geom_quat[g]))
        return frames

    def _paint_close(self, q: np.ndarray) -> None:
        """Geoms of pairs within the margin turn red; those no longer close get their own colour back."""
        close = close_geoms(self.world, q)
        for g in close ^ self._close:
            if g in self._geoms:
                self._geoms[g].color = CLOSE_COLOR if g in close else _geom_color(self.model, g)[0]
        self._close = close

    def _draw(self) -> None:
        import mujoco

        with self._lock:
            q = self._q.copy()
        with self._draw_lock, self.server.atomic():
            d = self._data
            d.qpos[self._qpos_adr] = q
            mujoco.mj_kinematics(self.model, d)
            for b, frame in self._bodies.items():
                frame.position = tuple(d.xpos[b])
                frame.wxyz = tuple(d.xquat[b])
            self._tool.position = tuple(tool_pose_and_jacobian(self.chain, q)[0][:3, 3])
            if self.world is not None:
                self._paint_close(q)
            self._panel.content = self._panel_text()

    def _panel_text(self) -> str:
        with self._lock:
            q, h, qdot, method = self._q.copy(), self.readout, self.qdot.copy(), self._method
        lines = [f"method **{method}**", "", "| joint | q (rad) |", "|---|---:|"]
        lines += [f"| {model_text(name)} | {v:+.4f} |" for name, v in zip(self.chain.joint_names, q)]
        if h is not None:
            lines += ["", "| health (position block) | |", "|---|---:|",
                      f"| sigma_min (m/rad) | {h.sigma_min:.4f} |", f"| kappa | {h.kappa:.1f} |",
                      f"| lambda (m/rad) | {h.lam:.4f} |", f"| velocity scale | {h.vel_scale:.3f} |",
                      f"| max abs qdot (rad/s) | {np.abs(qdot).max():.2f} |"]
        return "\n".join(lines)
