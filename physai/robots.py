"""Named robots and model files -> ready :class:`~physai.kinematics.Chain` objects.

``so101``, ``wxai`` and ``panda`` load from model files shipped inside the package (``physai/models``,
each with its license and a note of what differs from the original): no download, no environment
variable, the same numbers on every machine. ``source="menagerie"`` and any robot name of the
``mujoco_menagerie`` registry load the genuine Menagerie model (``MENAGERIE_ROOT`` or the package's
download cache). Built-in descriptions (numbers only, no files) exist for ``so101`` and the course's
worked-example chains; tests pin each against its MuJoCo model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from physai import _files, example_robots
from physai._validate import one_of
from physai.errors import InputError, ModelNotFoundError, UnknownNameError
from physai.kinematics import (
    BodySpec,
    Chain,
    JointSpec,
    chain_from_bodies,
    chain_from_mujoco,
)


@dataclass(frozen=True)
class RobotInfo:
    """Where a named robot comes from and which site is its tool."""

    name: str
    description: str
    site: str | None = None
    bundled: str | None = None  # model file under physai/models/
    menagerie: tuple[str, str] | None = None  # (Menagerie robot, entry point)
    builtin: Callable[[], Chain] | None = None


def _so101_builtin() -> Chain:
    """SO-101 arm kinematics, numbers as written in Menagerie's ``robotstudio_so101/so101.xml``."""
    z = (0.0, 0.0, 1.0)
    bodies = [
        BodySpec("base", (0, 0, 0), (1, 0, 0, 0)),
        BodySpec("shoulder", (0.0388353, 0, 0.0624), (0, 0, -1, 0),
                 (JointSpec("shoulder_pan", "hinge", z, range=(-1.91986, 1.91986)),)),
        BodySpec("upper_arm", (-0.0303992, -0.0182778, -0.0542), (1, -1, -1, -1),
                 (JointSpec("shoulder_lift", "hinge", z, range=(-1.7453293, 1.7453293)),)),
        BodySpec("lower_arm", (-0.11257, -0.028, 0), (1, 0, 0, 1),
                 (JointSpec("elbow_flex", "hinge", z, range=(-1.69, 1.69)),)),
        BodySpec("wrist", (-0.1349, 0.0052, 0), (1, 0, 0, -1),
                 (JointSpec("wrist_flex", "hinge", z, range=(-1.658063, 1.658063)),)),
        BodySpec("gripper", (5.55112e-17, -0.0611, 0.0181), (0.0172091, -0.0172091, 0.706897, 0.706897),
                 (JointSpec("wrist_roll", "hinge", z, range=(-2.7438473, 2.7438473)),)),
    ]
    return chain_from_bodies("so101", bodies, (0.012, -0.000218, -0.098127), (1, 0, 1, 0),
                             tool_name="gripperframe", source="built-in (so101.xml numbers)")


MODELS_DIR = Path(__file__).resolve().parent / "models"  # the bundled models, one folder per robot

ROBOTS: dict[str, RobotInfo] = {
    "so101": RobotInfo(
        "so101",
        "The Robot Studio SO-101, 5 arm joints (gripper excluded), tool site gripperframe",
        site="gripperframe",
        bundled="so101/so101.xml",
        menagerie=("robotstudio_so101", "so101"),
        builtin=_so101_builtin,
    ),
    "wxai": RobotInfo(
        "wxai",
        "Trossen WidowX AI follower arm, 6 arm joints (gripper slides excluded), tool site ee_site",
        site="ee_site",
        bundled="wxai/wxai_follower.xml",
    ),
    "panda": RobotInfo(
        "panda",
        "Franka Emika Panda, 7 joints, tool site tcp 0.1034 m beyond the hand (no meshes)",
        site="tcp",
        bundled="panda/panda.xml",
    ),
    # the course's worked-example chains: numbers only, no model file
    "planar2r": RobotInfo("planar2r", "2-link planar arm, L1 = 0.5 m, L2 = 0.3 m (worked example)",
                          site="tip", builtin=example_robots.planar2r),
    "planar3r": RobotInfo("planar3r", "3-link planar arm, L = 0.5, 0.3, 0.2 m (redundant for a 2-D position task, "
                          "lesson 12)", site="tip", builtin=example_robots.planar3r),
    "wxai_illustrative": RobotInfo("wxai_illustrative", "an illustrative WidowX-AI-like 6-DoF chain "
                                   "(AXES/OFFSETS/EE_OFFSET)", site="ee", builtin=example_robots.wxai_illustrative),
}

SOURCES = ("bundled", "menagerie", "builtin")
_MUJOCO_WARNINGS = threading.Lock()


def register(info: RobotInfo) -> None:
    """Add a named robot to the table :func:`load` reads (a chain of your own, by name)."""
    ROBOTS[info.name] = info


def names() -> list[str]:
    """Names :func:`load` accepts without a download (any Menagerie registry name works too), sorted.

    Examples
    --------
    >>> physai.names()
    ['panda', 'planar2r', 'planar3r', 'so101', 'wxai', 'wxai_illustrative']
    """
    return sorted(ROBOTS)


def _menagerie_names() -> list[str]:
    import mujoco_menagerie as mm

    return mm.names()


def _menagerie_xml(robot: str, entry: str | None) -> Path:
    """Path of Menagerie's XML: ``MENAGERIE_ROOT`` or the package's download cache (downloading on first use)."""
    import mujoco_menagerie as mm

    try:
        return Path(mm.get(robot).xml(entry))
    except Exception as exc:  # the package raises several kinds; all mean "not available here"
        root = os.environ.get("MENAGERIE_ROOT")
        where = f"MENAGERIE_ROOT={root}" if root else "MENAGERIE_ROOT is not set and the download failed"
        raise ModelNotFoundError(
            f"Menagerie model {robot!r} (entry {entry!r}) could not be loaded ({where}): "
            f"{type(exc).__name__}: {exc}. Offline, set MENAGERIE_ROOT to a Menagerie checkout."
        ) from None


def _resolve(name: str, source: str | None) -> tuple[Path | None, str]:
    """``(model file, source label)`` of a named robot; ``None`` for the file-less built-in description."""
    if name in ROBOTS:
        info = ROBOTS[name]
        source = source or ("bundled" if info.bundled else "builtin")
        if source == "bundled" and info.bundled:
            return MODELS_DIR / info.bundled, f"bundled physai/models/{info.bundled}"
        if source == "menagerie" and info.menagerie:
            return _menagerie_xml(*info.menagerie), f"Menagerie {info.menagerie[0]}/{info.menagerie[1]}.xml"
        if source == "builtin" and info.builtin:
            return None, "builtin"
        have = [s for s, ok in zip(SOURCES, (info.bundled, info.menagerie, info.builtin)) if ok]
        raise ModelNotFoundError(f"robot {name!r} has no {source!r} source; it has: {', '.join(have)}")
    if name in _menagerie_names():
        if source not in (None, "menagerie"):
            raise ModelNotFoundError(f"robot {name!r} comes from Menagerie only (source='menagerie'), got {source!r}")
        return _menagerie_xml(name, _default_entry(name)), f"Menagerie {name}"
    raise UnknownNameError("robot", name, names() + _menagerie_names())


def _default_entry(robot: str) -> str:
    import mujoco_menagerie as mm

    return mm.get(robot).default_model


def model_path(name: str, source: str | None = None) -> Path:
    """The MJCF file behind a named robot (for tools that read files, e.g. Pinocchio's MJCF parser).

    ``source`` as in :func:`load`. A built-in description (numbers only) has no file:
    :class:`~physai.errors.ModelNotFoundError`.

    Examples
    --------
    >>> path = physai.model_path("so101")
    >>> path.name, path.parent.name
    ('so101.xml', 'so101')
    >>> physai.model_path("planar2r")
    Traceback (most recent call last):
        ...
    physai.errors.ModelNotFoundError: robot 'planar2r' is a built-in description with no model file
    """
    if not isinstance(name, str) or not name:
        raise InputError(f"name: expected a robot name (see physai.robots.names()), got {type(name).__name__} {name!r}")
    path, _ = _resolve(name, _check_source(source))
    if path is None:
        raise ModelNotFoundError(f"robot {name!r} is a built-in description with no model file")
    return path


def _check_source(source: str | None) -> str | None:
    return None if source is None else one_of(source, "source", SOURCES)


def _check_model(name_or_path) -> None:
    if not isinstance(name_or_path, (str, os.PathLike)) or not str(name_or_path):
        raise InputError(f"name_or_path: expected a robot name or a model file path, "
                         f"got {type(name_or_path).__name__} {name_or_path!r}")


def _check_names(site, joints, tool) -> None:
    """``site``/``tool`` are one name each, ``joints`` a sequence of names (a lone string would be read letter by letter)."""
    for value, arg in ((site, "site"), (tool, "tool")):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{arg}: expected a site, body or link name, got {type(value).__name__} {value!r}")
    if joints is not None and (isinstance(joints, str) or not isinstance(joints, Sequence)
                               or not all(isinstance(j, str) for j in joints)):
        raise InputError(f"joints: expected a sequence of joint names, got {type(joints).__name__} {joints!r}")


def is_robot_name(name_or_path) -> bool:
    """Whether ``name_or_path`` names a robot (a key of :data:`ROBOTS`, or a bare word that is no file) rather than
    a model file's path: how :func:`load` and the collision world read their argument."""
    key = str(name_or_path)
    return isinstance(name_or_path, str) and (key in ROBOTS or (os.sep not in key and not Path(key).suffix
                                                                and not Path(key).exists()))


def mujoco_model(name_or_path: str | os.PathLike, source: str | None = None):
    """The compiled ``mujoco.MjModel`` of a named robot or of an MJCF/URDF file."""
    _check_model(name_or_path)
    if is_robot_name(name_or_path):
        path, _ = _resolve(str(name_or_path), _check_source(source))
        if path is None:
            raise ModelNotFoundError(f"robot {name_or_path!r} is a built-in description with no MuJoCo model")
        return _compile(path)
    path = Path(name_or_path)
    if not path.exists():
        raise ModelNotFoundError(f"model file {str(path)!r} does not exist")
    return _compile(path)


@contextlib.contextmanager
def mujoco_warnings(label: str):
    """Within this block MuJoCo's warnings become Python warnings (``label: MuJoCo warns: ...``) instead of a
    line on stdout and a ``MUJOCO_LOG.TXT`` appended in the caller's working directory.

    MuJoCo's handler is process-wide: it is swapped only for the block (one block at a time) and restored.
    The warnings are issued when the block ends normally; the block sees them as they arrive (the yielded
    list), so an error it raises can include them.
    """
    import mujoco

    heard: list[str] = []
    with _MUJOCO_WARNINGS:
        previous = mujoco.get_mju_user_warning()
        mujoco.set_mju_user_warning(heard.append)
        try:
            yield heard
        finally:
            mujoco.set_mju_user_warning(previous)
    for text in heard:
        warnings.warn(f"{label}: MuJoCo warns: {text.strip()}", stacklevel=4)


def _compile(path: Path):
    """Compile a model file, MuJoCo's warnings as Python warnings (:func:`mujoco_warnings`)."""
    import mujoco

    with mujoco_warnings(path.name) as heard:
        try:
            if path.suffix.lower() == ".urdf":
                return _urdf_spec(path).compile()
            return mujoco.MjModel.from_xml_path(str(path))
        except Exception as exc:  # mujoco raises ValueError with the compiler's message
            also = f" (MuJoCo also warned: {'; '.join(t.strip() for t in heard)})" if heard else ""
            raise ModelNotFoundError(f"model file {str(path)!r} does not compile in MuJoCo: {exc}{also}") from None


def _urdf_spec(path: Path):
    """A URDF as an ``MjSpec`` for kinematics: every link kept as a body, meshes optional, inertials optional.

    MuJoCo's URDF import fuses links hung on fixed joints into their parent (``fusestatic``); a tool link
    such as ``tool0`` must stay a frame of its own. A link without ``<inertial>`` gets MuJoCo's smallest
    mass and inertia (``boundmass``/``boundinertia``): irrelevant to FK, Jacobians and IK. Meshes that
    cannot be found are dropped with a warning, since kinematics never reads them.
    """
    import mujoco

    spec = mujoco.MjSpec.from_file(str(path))
    spec.compiler.fusestatic = False
    spec.compiler.boundmass, spec.compiler.boundinertia = 1e-9, 1e-12
    meshdir = path.parent / (spec.compiler.meshdir or "")
    missing = [mesh for mesh in spec.meshes if not (meshdir / mesh.file).is_file()]
    if missing:
        gone = {mesh.name for mesh in missing}
        for geom in [g for g in spec.geoms if g.meshname in gone]:
            spec.delete(geom)
        for mesh in missing:
            spec.delete(mesh)
        warnings.warn(f"{path.name}: {len(missing)} mesh file(s) not found (e.g. {missing[0].file!r}); "
                      "loaded without them (kinematics does not need meshes)", stacklevel=4)
    return spec


def load(
    name_or_path: str | os.PathLike,
    site: str | None = None,
    joints: Sequence[str] | None = None,
    source: str | None = None,
    *,
    tool: str | None = None,
    tool_offset=None,
) -> Chain:
    """A ready :class:`Chain` for a named robot or any MJCF/URDF file MuJoCo compiles.

    ``site`` names the tool site (named robots have a default; Menagerie robots default to
    ``attachment_site``). ``joints`` defaults to the joints on the path from the root to the site's body
    (fingers below the tool are left out); see :func:`~physai.kinematics.chain_from_mujoco`.
    ``source`` for named robots: ``"bundled"`` (the default for ``so101``, ``wxai``, ``panda``: model files
    shipped inside physai, same numbers on every machine, no download), ``"menagerie"`` (the genuine
    Menagerie model through ``mujoco_menagerie``: ``MENAGERIE_ROOT`` or its download cache) or
    ``"builtin"`` (``so101`` and the worked-example chains: numbers only, no files). ``chain.source`` says which.
    ``tool`` names the tool frame: a site, or a body of an MJCF or a link of a URDF (its own frame, also
    for a link MuJoCo would fuse away on a fixed joint); ``site`` is the same keyword's older name.
    ``tool_offset`` (``(4, 4)`` transform or ``(3,)`` xyz, m, in the tool frame) is composed on top.

    Examples
    --------
    >>> chain = physai.load("so101")
    >>> chain.n, chain.tool_name, chain.source
    (5, 'gripperframe', 'bundled ...so101.xml')

    The same arm from numbers alone gives the same tool pose:

    >>> q = [0.0, -0.6, 0.9, 0.4, 0.3]
    >>> builtin = physai.load("so101", source="builtin")
    >>> for c in (chain, builtin):
    ...     print(c.source, np.round(physai.tool_pose(c, q)[:3, 3], 3))
    bundled ...so101.xml [0.288 0.003 0.097]
    built-in (so101.xml numbers) [0.288 0.003 0.097]

    A tool 5 cm further along the tool frame's z axis:

    >>> longer = physai.load("panda", tool_offset=[0.0, 0.0, 0.05])
    >>> longer.n, longer.tool_name
    (7, 'tcp')
    """
    _check_model(name_or_path)
    _check_names(site, joints, tool)
    source = _check_source(source)
    if tool is not None and site is not None and tool != site:
        raise InputError(f"tool: give the tool frame once (tool={tool!r} and site={site!r})")
    site = tool if tool is not None else site
    if not is_robot_name(name_or_path):
        return _chain_of_model(mujoco_model(name_or_path), site, joints, Path(str(name_or_path)).stem,
                               str(name_or_path), tool_offset)
    key = str(name_or_path)
    path, label = _resolve(key, source)
    info = ROBOTS.get(key)
    if path is None:
        if site not in (None, info.site) or joints is not None or tool_offset is not None:
            raise ModelNotFoundError(f"robot {key!r}: the built-in description has only site {info.site!r} "
                                     f"and all its joints; got site={site!r}, joints={joints!r}")
        return info.builtin()
    if info and info.bundled and label.startswith("bundled") and site in (None, info.site) and joints is None \
            and tool_offset is None:
        chain = _bundled_chain(info)
        if chain is not None:
            return chain
    default_site = info.site if info else "attachment_site"
    return _chain_of_model(_compile(path), site or default_site, joints, key, label, tool_offset)


def _chain_of_model(m, site: str | None, joints, name: str, label: str, tool_offset=None) -> Chain:
    if site is None:
        sites = [m.site(i).name for i in range(m.nsite)]
        if not sites:  # URDF has no sites: MuJoCo's URDF import creates none
            raise InputError(f"tool: model {label!r} has no sites; name the tool body or URDF link: tool=...")
        if len(sites) != 1:
            raise UnknownNameError("site", "None (pass site=...)", sites)
        site = sites[0]
    return _with_source(chain_from_mujoco(m, site, joints, name=name, tool_offset=tool_offset), label)


def _with_source(chain: Chain, source: str) -> Chain:
    from dataclasses import replace

    return replace(chain, source=source)


# ---- the bundled robots' chains, stored beside their models -------------------------------------------------
# Compiling a model needs MuJoCo (a fifth of a second to import, more to compile); a bundled robot's default chain
# is stored as numbers in ``chain.json`` beside its model file, with the SHA-256 of the model it was computed from.
# load() uses it only while that hash still matches the file, so an edited model is compiled again, never stale.
_CHAIN_ARRAYS = ("T_prev_joint", "axis_joint", "q_ref", "T_last_tool", "lower", "upper")


def _stored_chain_path(info: RobotInfo) -> Path:
    return (MODELS_DIR / info.bundled).with_name("chain.json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compiled_chain_record(name: str) -> dict:
    """What ``chain.json`` holds for bundled robot ``name``: its default chain as MuJoCo compiles the model file
    now (every field of :class:`Chain`; floats round-trip exactly through JSON) and that file's SHA-256."""
    info = ROBOTS[name]
    path, label = _resolve(name, "bundled")
    chain = _chain_of_model(_compile(path), info.site, None, name, label)
    record = {f.name: getattr(chain, f.name) for f in dataclasses.fields(chain) if f.init}
    record.update({k: record[k].tolist() for k in _CHAIN_ARRAYS})
    return {"model_sha256": _sha256(path), "chain": record}


def write_stored_chains() -> list[Path]:
    """Rewrite ``chain.json`` of every bundled robot from its model file (after editing a bundled model)."""
    written = []
    for name, info in ROBOTS.items():
        if info.bundled:
            out = _stored_chain_path(info)
            record = compiled_chain_record(name)
            fields = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in record["chain"].items())
            _files.write_text(out, f'{{"model_sha256": {json.dumps(record["model_sha256"])},\n "chain": {{\n{fields}\n}}}}\n')
            written.append(out)
    return written


def _bundled_chain(info: RobotInfo) -> Chain | None:
    """The stored default chain of a bundled robot, or None where it is missing or its model file has changed."""
    stored = _stored_chain_path(info)
    if not stored.is_file():
        return None
    record = json.loads(stored.read_text())
    if record["model_sha256"] != _sha256(MODELS_DIR / info.bundled):
        return None
    fields = dict(record["chain"])
    for key in ("joint_names", "joint_types", "qpos_adr", "dof_adr"):
        fields[key] = tuple(fields[key])
    return Chain(**fields)
