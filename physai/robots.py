"""Named robots and model files -> ready :class:`~physai.kinematics.Chain` objects.

Named robots resolve through the official ``mujoco_menagerie`` package, which downloads Menagerie
models on first use, or reads a local checkout when ``MENAGERIE_ROOT`` is set (offline machines).
Built-in descriptions (numbers copied from the model files, no download) exist for the kinematics
of ``so101`` and for the seeds' illustrative chains; tests pin each against its MuJoCo model.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from physai.errors import ModelNotFoundError, UnknownNameError
from physai.kinematics import BodySpec, Chain, JointSpec, chain_from_bodies, chain_from_mujoco


@dataclass(frozen=True)
class RobotInfo:
    """Where a named robot comes from and which site is its tool."""

    name: str
    description: str
    site: str | None = None
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


ROBOTS: dict[str, RobotInfo] = {
    "so101": RobotInfo(
        "so101",
        "The Robot Studio SO-101, 5 arm joints (gripper excluded), tool site gripperframe",
        site="gripperframe",
        menagerie=("robotstudio_so101", "so101"),
        builtin=_so101_builtin,
    ),
}


def register(info: RobotInfo) -> None:
    """Add a named robot (used by the modules that define the seeds' illustrative chains)."""
    ROBOTS[info.name] = info


def names() -> list[str]:
    """Names :func:`load` accepts."""
    return sorted(ROBOTS)


# A Menagerie checkout beside the project (this repository's offline development layout, ../shared).
_SIBLING_MENAGERIE = Path(__file__).resolve().parents[2] / "shared" / "menagerie"


def _menagerie_model(robot: str, entry: str):
    """Menagerie's model: ``MENAGERIE_ROOT`` or the package's download cache, else a checkout beside the project."""
    import mujoco_menagerie as mm

    try:
        return mm.get(robot).model(entry)
    except Exception as exc:  # the package raises several kinds; all mean "not available here"
        root = os.environ.get("MENAGERIE_ROOT")
        if not root and (_SIBLING_MENAGERIE / robot).is_dir():
            return mm.get(robot).model(entry, cache=mm.Cache(root=str(_SIBLING_MENAGERIE)))
        where = f"MENAGERIE_ROOT={root}" if root else "MENAGERIE_ROOT is not set and the download failed"
        raise ModelNotFoundError(
            f"Menagerie model {robot!r} (entry {entry!r}) could not be loaded ({where}): "
            f"{type(exc).__name__}: {exc}. Offline, set MENAGERIE_ROOT to a Menagerie checkout."
        ) from None


def mujoco_model(name_or_path: str | os.PathLike):
    """The compiled ``mujoco.MjModel`` of a named robot (through Menagerie) or of an MJCF/URDF file."""
    import mujoco

    if str(name_or_path) in ROBOTS:
        info = ROBOTS[str(name_or_path)]
        if info.menagerie is None:
            raise ModelNotFoundError(f"robot {info.name!r} is a built-in description with no MuJoCo model")
        return _menagerie_model(*info.menagerie)
    path = Path(name_or_path)
    if not path.exists():
        if path.suffix.lower() in (".xml", ".urdf", ".mjcf") or os.sep in str(name_or_path):
            raise ModelNotFoundError(f"model file {str(path)!r} does not exist")
        raise UnknownNameError("robot", str(name_or_path), names())
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except Exception as exc:  # mujoco raises ValueError with the compiler's message
        raise ModelNotFoundError(f"model file {str(path)!r} does not compile in MuJoCo: {exc}") from None


def load(
    name_or_path: str | os.PathLike,
    site: str | None = None,
    joints: Sequence[str] | None = None,
    source: str = "auto",
) -> Chain:
    """A ready :class:`Chain` for a named robot or any MJCF/URDF file MuJoCo compiles.

    ``site`` names the tool site (named robots have a default). ``joints`` defaults to the hinge and
    slide joints on the path from the root to the site's body (fingers below the tool are left out).
    ``source`` for named robots: ``"menagerie"`` (the genuine model; a clear error names
    ``MENAGERIE_ROOT`` when it cannot be found), ``"builtin"`` (no files), or ``"auto"`` (Menagerie
    when available, else the built-in description; ``chain.source`` says which was used).
    """
    if source not in ("auto", "menagerie", "builtin"):
        raise ValueError(f"source: expected 'auto', 'menagerie' or 'builtin', got {source!r}")
    key = str(name_or_path)
    if key in ROBOTS:
        info = ROBOTS[key]
        custom = site not in (None, info.site) or joints is not None
        if source == "builtin" or (info.menagerie is None):
            if info.builtin is None or custom:
                raise ModelNotFoundError(f"robot {key!r}: no built-in description for site={site!r}, joints={joints!r}")
            return info.builtin()
        try:
            m = _menagerie_model(*info.menagerie)
        except ModelNotFoundError:
            if source == "menagerie" or info.builtin is None or custom:
                raise
            return info.builtin()
        chain = chain_from_mujoco(m, site or info.site, joints, name=key)
        return _with_source(chain, f"Menagerie {info.menagerie[0]}/{info.menagerie[1]}.xml")
    m = mujoco_model(name_or_path)
    if site is None:
        sites = [m.site(i).name for i in range(m.nsite)]
        if len(sites) != 1:
            raise UnknownNameError("site", "None (pass site=...)", sites)
        site = sites[0]
    return _with_source(chain_from_mujoco(m, site, joints, name=Path(key).stem), str(name_or_path))


def _with_source(chain: Chain, source: str) -> Chain:
    from dataclasses import replace

    return replace(chain, source=source)


from physai import seed_robots as _seed_robots  # noqa: E402,F401  (registers the seeds' built-in chains)
