"""How a CollisionWorld is built, pinned to MuJoCo: obstacle pairs never dropped, the robot's own pairs classified
as MoveIt's Allowed Collision Matrix (against mj_geomDistance on the same postures), margins no posture keeps
refused, bad geoms refused, maxhullvert meshes judged on MuJoCo's hull, and a frozen world that refuses forgeries."""

import copy
import pickle

import mujoco
import numpy as np
import pytest
from conftest import mujoco_distances

import physai
from physai import collision as C
from physai import ik
from physai.collision import _build as build
from physai.errors import InputError, PhysaiError


TABLE = C.Obstacle("table", "box", (0.4, 0.4, 0.02), (0.0, 0.0, -0.02))


def every_candidate_distance(m, pairs, qpos_adr, q):
    """mj_geomDistance of each geom pair at each ``q`` (MuJoCo alone), capped at 1 m."""
    d = mujoco.MjData(m)
    out = np.empty((len(q), len(pairs)))
    for k, qk in enumerate(q):
        d.qpos[qpos_adr] = qk
        mujoco.mj_kinematics(m, d)
        out[k] = [mujoco.mj_geomDistance(m, d, a, b, 1.0, None) for a, b in pairs]
    return out


# a 3 cm box on the first joint's axis, inside the first moving link at every angle of that joint
BOX_IN_FIRST_LINK = {"panda": ((0.03, 0.03, 0.03), (0.0, 0.0, 0.2)),
                     "so101": ((0.015, 0.015, 0.015), (0.0388353, 0.0, 0.05))}


@pytest.mark.parametrize("robot", sorted(BOX_IN_FIRST_LINK))
def test_a_box_through_the_first_link_is_checked_and_ik_refuses_every_answer(robot):
    chain = physai.load(robot)
    world = C.collision_world(C.scene(robot, [C.Obstacle("box", "box", *BOX_IN_FIRST_LINK[robot])]), chain)
    m = world.model
    first = m.jnt_bodyid[world.joint_ids[0]]
    on_first = [i for i, (a, b) in enumerate(world.pairs.tolist())
                if m.geom(a).name == "box" and m.geom_bodyid[b] == first]
    assert on_first and not any("box" in p for p in world.dropped)
    assert all("box" not in names for names, _ in world.allowed)
    q = chain.random_q(np.random.default_rng(5), 4)
    # MuJoCo: the box overlaps the first link in every one of these postures, so no answer may be called clear
    assert all(mujoco_distances(world, qk)[on_first].min() < 0 for qk in q)
    task = "position" if robot == "so101" else "pose"
    targets = physai.tool_pose(chain, q)
    res = ik.solve_ik_batch(chain, targets[:, :3, 3] if task == "position" else targets, task=task, avoid=world,
                            solver=ik.Solver(restarts=3))
    assert not res.converged.any()
    assert all(r == "collision: no answer keeps the margin" for r in res.reason)


def test_a_margin_no_posture_keeps_is_refused_naming_margin():
    with pytest.raises(InputError, match=r"^margin: 0.5 m .*'table'"):
        C.collision_world(C.scene("so101", [TABLE]), physai.load("so101"), margin=0.5)
    # the WidowX AI's base and second link come within 1 cm of each other in nearly every posture
    with pytest.raises(InputError, match=r"^self_margin: 0.01 m .*'base_link#1' and 'link_2#1'"):
        C.collision_world("wxai", physai.load("wxai"), self_margin=0.01)


def test_obstacle_pairs_are_never_left_out_by_sampling():
    chain = physai.load("so101")
    world = C.collision_world(C.scene("so101", [TABLE]), chain, samples=50)
    m = world.model
    table = m.geom("table").id
    arm = world.arm_geoms[m.geom_contype[world.arm_geoms] != 0]
    assert sorted(int(b) for a, b in world.pairs if a == table) == sorted(arm.tolist())
    assert not world.pair_self[world.pairs[:, 0] == table].any()
    np.testing.assert_array_equal(world.pair_margin, np.where(world.pair_self, 0.0, 0.01))


def test_self_pairs_classified_like_moveit_against_mj_geomDistance():
    # The same postures (samples from default_rng(0)) measured by MuJoCo pair by pair: each class follows its rule.
    chain = physai.load("so101")
    samples = 300
    world = C.collision_world("so101", chain, samples=samples)
    q = chain.random_q(np.random.default_rng(0), samples)
    m = world.model
    ids = {build._label(m, g): g for g in range(m.ngeom)}
    by_class = {}
    for (a, b), why in world.allowed:
        by_class.setdefault(why, []).append((ids[a], ids[b]))
    assert {"adjacent", "always", "never"} <= set(by_class)
    weld = m.body_weldid
    for a, b in by_class["adjacent"]:  # MuJoCo's parent-child filter: one weld group holds the other's parent
        wa, wb = weld[m.geom_bodyid[a]], weld[m.geom_bodyid[b]]
        assert weld[m.body_parentid[wa]] == wb or weld[m.body_parentid[wb]] == wa
    D = every_candidate_distance(m, by_class["always"] + by_class["never"], world.qpos_adr, q)
    k = len(by_class["always"])
    assert np.all(np.mean(D[:, :k] < 0, axis=0) >= C.ALWAYS_TOUCHING)
    assert np.all(D[:, k:] >= C.NEVER_GAP - 1e-9)
    checked = every_candidate_distance(m, world.pairs.tolist(), world.qpos_adr, q)
    assert np.all(np.mean(checked < 0, axis=0) < C.ALWAYS_TOUCHING)  # no checked pair is in contact always
    assert np.all(world.pair_self)  # no obstacle in this scene: every pair is the robot's own


def test_wxai_wrist_pair_is_held_to_self_margin_and_most_postures_are_clear():
    # link_4 and link_6 are a few mm apart in most postures: held to self_margin = 0, not to the 1 cm obstacle margin
    chain = physai.load("wxai")
    table = C.Obstacle("table", "box", (0.6, 0.6, 0.02), (0.0, 0.0, -0.02))
    world = C.collision_world(C.scene("wxai", [table]), chain, margin=0.01)
    wrist = [i for i, (a, b) in enumerate(world.pair_names) if a.startswith("link_4") and b.startswith("link_6")]
    assert wrist and np.all(world.pair_margin[wrist] == 0.0)
    q = chain.random_q(np.random.default_rng(7), 100)
    D = np.array([mujoco_distances(world, qk) for qk in q])
    wrist_near = np.any((D[:, wrist] >= 0) & (D[:, wrist] < 0.01), axis=1)
    assert wrist_near.mean() > 0.3  # the wrist pair is often within 1 cm...
    clear = np.all(D >= world.pair_margin, axis=1)
    np.testing.assert_array_equal(world.clear(q), clear)
    assert clear.mean() > 0.5  # ...and most postures still keep every pair's margin


def test_self_margin_moves_the_robots_pairs_only(rng):
    chain = physai.load("so101")
    world = C.collision_world(C.scene("so101", [TABLE]), chain, self_margin=0.004)
    np.testing.assert_array_equal(world.pair_margin, np.where(world.pair_self, 0.004, 0.01))
    q = chain.random_q(rng, 60)
    D = np.array([mujoco_distances(world, qk, cap=1.0) for qk in q])
    np.testing.assert_array_equal(world.clear(q), np.all(D >= world.pair_margin, axis=1))
    loose = np.all(D >= np.where(world.pair_self, 0.0, 0.01), axis=1)
    assert np.all(world.clear(q) <= loose)


def test_the_fixed_base_resting_on_the_table_is_named_in_the_repr():
    table = C.Obstacle("table", "box", (0.6, 0.6, 0.02), (0.0, 0.0, -0.02))
    world = C.collision_world(C.scene("wxai", [table]), physai.load("wxai"), samples=50)
    assert world.mounted == (("base_link", "table"),)
    assert "base_link rests on table" in repr(world)
    m = world.model
    base = np.flatnonzero(m.geom_bodyid == m.body("base_link").id)
    assert not np.isin(world.pairs[world.pairs[:, 0] == m.geom("table").id, 1], base).any()


def test_an_empty_world_reports_no_clearance():
    chain = physai.load("so101")
    # every pair of the arm left out: nothing to check, so no clearance, never the cap
    world = C.collision_world("so101", chain, samples=20, drop=[(a, b) for a, b in
                                                                 C.collision_world("so101", chain,
                                                                                   samples=20).pair_names])
    assert len(world.pairs) == 0
    assert world.closest(chain.q_middle) == (None, None)


def test_closest_beyond_distmax_is_mujocos_distance_not_the_cap():
    chain = physai.load("so101")
    far = C.Obstacle("far", "sphere", (0.05,), (3.0, 0.0, 0.0))
    world = C.collision_world(C.scene("so101", [far]), chain, samples=20)
    dist, pair = world.closest(chain.q_middle, "obstacle")
    d = mujoco_distances(world, chain.q_middle, cap=10.0)[~world.pair_self]
    assert dist > world.distmax and dist == pytest.approx(d.min(), abs=1e-9) and pair[0] == "far"


TWO_LINKS = """<mujoco><worldbody><body name="post" pos="0.3 0 0"><geom name="bad" type="box" size="0.02 0.02 0.2"/>
  </body><body name="l1"><joint name="j1" axis="0 0 1"/><geom name="g1" type="capsule" size="0.02"
    fromto="0 0 0 0.2 0 0"/><body name="l2" pos="0.2 0 0"><joint name="j2" axis="0 0 1"/>
    <geom name="g2" type="capsule" size="0.02" fromto="0 0 0 0.2 0 0"/><site name="tip" pos="0.2 0 0"/>
  </body></body></worldbody></mujoco>"""


@pytest.mark.parametrize("array, index, value", [("geom_size", 0, np.inf), ("geom_pos", 1, np.nan),
                                                 ("body_pos", 0, np.nan)])
def test_nan_or_infinite_geoms_are_refused_naming_the_geom(array, index, value):
    m = mujoco.MjModel.from_xml_string(TWO_LINKS)
    chain = physai.chain_from_mujoco(m, "tip")
    C.collision_world(m, chain, samples=5)  # the scene as written is fine
    row = m.geom("bad").id if array.startswith("geom") else m.body("post").id
    getattr(m, array)[row, index] = value
    with pytest.raises(InputError, match="geom 'bad'"):
        C.collision_world(m, chain, samples=5)


def test_obstacles_with_nan_or_inf_are_refused_naming_them():
    with pytest.raises(InputError, match="obstacle 'box' pos"):
        C.scene("so101", [C.Obstacle("box", "box", (0.1, 0.1, 0.1), (np.nan, 0.0, 0.0))])
    with pytest.raises(InputError, match="obstacle 'box' size"):
        C.scene("so101", [C.Obstacle("box", "box", (np.inf, 0.1, 0.1), (0.0, 0.0, 0.0))])


MESH_ARM = """<mujoco><asset><mesh name="blob" maxhullvert="{maxhullvert}" vertex="{vertex}"/></asset>
  <worldbody><geom name="wall" type="box" size="0.02 0.3 0.3" pos="0.365 0 0"/>
    <body name="arm"><joint name="j" axis="0 0 1"/><geom name="rod" type="capsule" size="0.01"
      fromto="0 0 0 0.2 0 0" contype="0" conaffinity="0"/>
      <body name="tip" pos="0.3 0 0"><joint name="k" axis="0 1 0"/><geom name="blob" type="mesh" mesh="blob"/>
        <site name="tcp"/></body></body></worldbody></mujoco>"""


def test_maxhullvert_mesh_verdicts_agree_with_mj_geomDistance():
    # A blob of 60 points on a 5 cm sphere, collided by MuJoCo as the hull of 8 of them: every verdict the screen
    # and GJK reach alone (CLEAR or HIT) must be MuJoCo's.
    pts = np.random.default_rng(3).normal(size=(60, 3))
    pts = 0.05 * pts / np.linalg.norm(pts, axis=1, keepdims=True)
    m = mujoco.MjModel.from_xml_string(MESH_ARM.format(maxhullvert=8, vertex=" ".join(map(str, pts.ravel()))))
    chain = physai.chain_from_mujoco(m, "tcp")
    world = C.collision_world(m, chain, margin=0.01, samples=20)
    assert world.screen.hull_num[m.geom("blob").id] <= 8
    q = np.column_stack([np.linspace(-0.3, 0.3, 121), np.linspace(-3, 3, 121)])
    verdict, _, _ = world.verdicts(q, 0.01)
    d = np.array([mujoco_distances(world, qk, cap=1.0).min() for qk in q])
    decided = verdict != C.ASK
    assert decided.mean() > 0.9 and (verdict == C.HIT).any() and (verdict == C.CLEAR).any()
    np.testing.assert_array_equal(verdict[decided] == C.CLEAR, d[decided] >= 0.01)


# ---- a frozen world ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wx_world():
    return C.collision_world(C.scene("wxai", [C.Obstacle("table", "box", (0.6, 0.6, 0.02), (0, 0, -0.02))]),
                             physai.load("wxai"), samples=50)


def test_every_array_of_the_world_is_read_only(wx_world):
    arrays = {k: v for k, v in vars(wx_world).items() if isinstance(v, np.ndarray)}
    arrays.update({f"screen.{k}": v for k, v in vars(wx_world.screen).items() if isinstance(v, np.ndarray)})
    assert {"pairs", "pair_margin", "pair_self", "last_joint", "screen.hull"} <= set(arrays)
    for name, a in arrays.items():
        assert not a.flags.writeable, name
        with pytest.raises(ValueError):
            a.flags.writeable = True
    with pytest.raises(ValueError):
        wx_world.pairs[0] = [10**9, 10**9]


def build_fresh():
    return C.collision_world(C.scene("wxai", [C.Obstacle("table", "box", (0.6, 0.6, 0.02), (0, 0, -0.02))]),
                             physai.load("wxai"), samples=50)


@pytest.mark.parametrize("forge, name", [
    (lambda w: object.__setattr__(w, "pairs", np.full(w.pairs.shape, 10**9)), "pairs"),
    (lambda w: setattr(w.pairs, "shape", (1, -1)), "pairs"),
    (lambda w: object.__setattr__(w, "pair_margin", np.zeros(3)), "pair_margin"),
    (lambda w: object.__setattr__(w, "pair_margin", np.full(w.pair_margin.shape, -1.0)), "pair_margin"),
    (lambda w: object.__setattr__(w, "last_joint", w.last_joint + 100), "last_joint"),
    (lambda w: object.__setattr__(w.screen, "hull_adr", w.screen.hull_adr + 10**6), "screen.hull_adr"),
    (lambda w: object.__setattr__(w.screen, "hull_num", w.screen.hull_num * 1000), "screen.hull"),
    (lambda w: object.__setattr__(w, "qpos_adr", w.qpos_adr + 1000), "qpos_adr"),
    (lambda w: object.__setattr__(w, "chain", physai.load("so101")), "chain"),
])
def test_a_forged_world_is_refused_naming_the_field(forge, name):
    world = build_fresh()
    q = world.chain.q_middle
    forge(world)
    for call in (lambda: world.clear(q), lambda: world.distances(q), lambda: world.verdicts(q, 0.01),
                 lambda: world.verdicts(q, 0.01, engine="numpy"),
                 lambda: ik.solve_ik(world.chain, physai.tool_pose(world.chain, q), avoid=world)):
        with pytest.raises(PhysaiError, match=name):
            call()


def test_pickle_and_copy_rebuild_a_read_only_world(wx_world, rng):
    q = wx_world.chain.random_q(rng, 20)
    for twin in (pickle.loads(pickle.dumps(wx_world)), copy.deepcopy(wx_world)):
        assert not twin.pairs.flags.writeable and not twin.screen.hull.flags.writeable
        np.testing.assert_array_equal(twin.pairs, wx_world.pairs)
        np.testing.assert_array_equal(twin.distances(q), wx_world.distances(q))


# ---- the robot's own pairs, stored beside the bundled models and in the user's cache folder ----------------------


@pytest.mark.parametrize("name", ["so101", "wxai", "panda"])
def test_stored_self_pairs_are_up_to_date(name):
    import json

    stored = json.loads((physai.model_path(name).with_name(C.SELF_PAIRS_FILE)).read_text())
    assert stored == C.self_pairs_record(name), \
        f"physai/models/{name}/{C.SELF_PAIRS_FILE} is out of date: run physai.collision.write_stored_self_pairs()"


def spy_measured(monkeypatch):
    """Record how many of the robot's own pairs each measurement holds."""
    calls, measured = [], build._measured

    def spy(world, q):
        calls.append(int(world.pair_self.sum()))
        return measured(world, q)

    monkeypatch.setattr(build, "_measured", spy)
    return calls


def test_a_scene_with_obstacles_reads_the_stored_self_pairs_and_measures_only_the_obstacles(monkeypatch):
    calls = spy_measured(monkeypatch)
    world = C.collision_world(C.scene("so101", [TABLE]), physai.load("so101"))
    assert calls == [0] and world.pair_self.any()  # the robot's own pairs came from self_pairs.json


def test_other_settings_are_measured_once_then_read_from_the_user_cache(monkeypatch, tmp_path):
    from physai import _engine

    monkeypatch.setattr(_engine, "cache_dir", lambda: tmp_path)
    calls = spy_measured(monkeypatch)
    chain = physai.load("so101")
    first = C.collision_world(C.scene("so101", [TABLE]), chain, self_margin=0.003, samples=300)
    assert len(list((tmp_path / build._SELF_PAIRS_CACHE).glob("*.json"))) == 1 and calls[0] > 0
    again = C.collision_world(C.scene("so101", [TABLE]), chain, self_margin=0.003, samples=300)
    assert calls[1:] == [0]
    assert again.pair_names == first.pair_names and again.allowed == first.allowed
    other = C.collision_world(C.scene("so101", [TABLE]), chain, self_margin=0.003, samples=300,
                              rng=np.random.default_rng(1))  # other postures: measured again
    assert calls[2] > 0 and len(other.pair_names) > 0


# ---- a user cache edited on disk is measured again, never trusted (MuJoCo judges clear) ---------------------------


def cached_world(monkeypatch, tmp_path, robot="so101"):
    """``robot``'s world with settings no bundled file holds (so its own pairs come from the user cache)."""
    from physai import _engine

    monkeypatch.setattr(_engine, "cache_dir", lambda: tmp_path)
    return C.collision_world(robot, physai.load(robot), self_margin=0.002, samples=200)


def edit_cache(tmp_path, edit, rehash=True):
    """Rewrite the one cache file: ``edit(entry) -> new entry``; its content hash recomputed unless not ``rehash``."""
    import json

    (path,) = (tmp_path / build._SELF_PAIRS_CACHE).glob("*.json")
    record = json.loads(path.read_text())
    (key,) = [k for k in record if k != "sha256"]
    record[key] = edit(record[key])
    if rehash:
        record["sha256"] = build._digest(key, record[key])
    path.write_text(json.dumps(record))


def test_a_cache_marking_every_self_pair_always_in_contact_is_measured_again_and_mujocos_collisions_stay_seen(
        monkeypatch, tmp_path):
    honest = cached_world(monkeypatch, tmp_path, "panda")
    assert honest.pair_self.sum() > 0
    edit_cache(tmp_path, lambda e: {k: [1.0, 1.0, -0.01] for k in e})  # hash recomputed: only the check stands
    calls = spy_measured(monkeypatch)
    again = cached_world(monkeypatch, tmp_path, "panda")
    assert calls and calls[0] > 0  # measured again, not read
    assert again.pair_names == honest.pair_names and again.allowed == honest.allowed
    q = physai.load("panda").random_q(np.random.default_rng(11), 200)
    D = np.array([mujoco_distances(again, qk, cap=1.0) for qk in q])
    colliding = np.any(D < again.pair_margin, axis=1)
    assert colliding.any()  # postures MuJoCo finds inside a checked pair's margin exist...
    assert not again.clear(q[colliding]).any()  # ...and none is called clear


@pytest.mark.parametrize("entry", [
    lambda e: {k: [[1], [1], [0]] for k in e},  # the shape of three numbers, not three numbers
    lambda e: [0.5, 0.5],  # two numbers
    lambda e: "always",  # a string
    lambda e: {k: ["a", "b", "c"] for k in e},
    lambda e: {k: [0.5, 0.25, 0.1] for k in e},  # within less often than in contact
    lambda e: dict(list(e.items())[1:]),  # a pair left out
])
def test_a_malformed_cache_entry_is_measured_again_not_a_crash(monkeypatch, tmp_path, entry):
    honest = cached_world(monkeypatch, tmp_path)
    edit_cache(tmp_path, entry)
    calls = spy_measured(monkeypatch)
    again = cached_world(monkeypatch, tmp_path)
    assert calls[0] > 0 and again.pair_names == honest.pair_names and again.allowed == honest.allowed


def test_a_cache_entry_edited_without_its_hash_is_measured_again_and_a_cut_file_too(monkeypatch, tmp_path):
    honest = cached_world(monkeypatch, tmp_path)
    edit_cache(tmp_path, lambda e: {k: [v[0], v[1], v[2] + 1e-3] for k, v in e.items()}, rehash=False)
    calls = spy_measured(monkeypatch)
    assert cached_world(monkeypatch, tmp_path).allowed == honest.allowed and calls[0] > 0
    (path,) = (tmp_path / build._SELF_PAIRS_CACHE).glob("*.json")
    path.write_text(path.read_text()[:40])
    assert cached_world(monkeypatch, tmp_path).allowed == honest.allowed and calls[1] > 0
    assert cached_world(monkeypatch, tmp_path).allowed == honest.allowed and calls[2:] == [0]  # stored again, whole


def test_an_obstacle_with_a_zero_quaternion_or_a_repeated_name_is_refused_naming_it():
    with pytest.raises(InputError, match=r"obstacle 'shelf': quat \(0, 0, 0, 0\) has no length"):
        C.scene("so101", [C.Obstacle("shelf", "box", (0.1, 0.1, 0.1), (0.3, 0.0, 0.2), (0, 0, 0, 0))])
    with pytest.raises(InputError, match="obstacle 'table' is named twice"):
        C.scene("so101", [TABLE, C.Obstacle("table", "sphere", (0.05,), (0.3, 0.0, 0.2))])
    tilted = C.scene("so101", [C.Obstacle("shelf", "box", (0.1, 0.1, 0.1), (0.3, 0.0, 0.2), (2.0, 0, 0, 0))])
    np.testing.assert_allclose(tilted.geom("shelf").quat, [1, 0, 0, 0])  # MuJoCo normalises a nonzero length
