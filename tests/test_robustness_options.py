"""Every numeric option of the public functions, fed NaN, inf, negatives, zero and wrong types (bool, str, None,
complex, 2.5 for a count): each call raises a PhysaiError whose message names the option.

Reference: the option's documented domain (a step is > 0, a damping >= 0, a count a whole number, a seed a
numpy Generator); hypothesis draws values outside it. A damping may also be an array
(one per batch entry), and where ``None`` documents the default it is not a bad value.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from physai import control, nullspace, robots, singularity, statics
from physai.errors import PhysaiError
from physai.ik import Solver, Task, solve_ik, solve_ik_batch
from physai.kinematics import jacobian, tool_pose
from physai.learned import dls_refine, init_model, sample_dataset, train
from physai.viewer import Viewer, follow_step


def _dls_refine(*args, **options):
    with pytest.warns(DeprecationWarning, match="dls_refine is deprecated"):
        return dls_refine(*args, **options)


NAN, INF = math.nan, math.inf
WRONG_TYPES = [True, False, "1.0", None, 1j, [1.0], np.array([1.0, 2.0])]
SPECIALS = {
    "positive": [NAN, INF, -INF, 0.0, -1.0, 0, *WRONG_TYPES],
    "positive_or_inf": [NAN, -INF, 0.0, -1.0, *WRONG_TYPES],  # inf means "no limit"
    "nonnegative": [NAN, INF, -INF, -1e-300, -1, *WRONG_TYPES],
    "real": [NAN, INF, -INF, *WRONG_TYPES],
    "count0": [2.5, NAN, INF, -1, 10**12, 3.0, *WRONG_TYPES],  # whole numbers >= 0 (10**12: gigabytes)
    "count1": [0, 2.5, NAN, -1, 10**12, 3.0, *WRONG_TYPES],  # whole numbers >= 1
    "seed": [-1, 2.5, 3.0, NAN, 2**64, True, "1", 1j, [1]],  # a whole number >= 0 (None: no seed recorded)
    "port": [-1, 65536, 10**12, 80.5, NAN, *WRONG_TYPES],
    "limits": [NAN, -1.0, -INF, "10", True, 1j, None],
    "generator": [0, 12345, None, "seed", np.random.RandomState(0), np.random.default_rng],
    # a damping is a number >= 0 or an array of them (one per batch entry)
    "damping": [NAN, INF, -INF, -1e-300, -1, True, False, "1.0", None, 1j, [-1.0], np.array([1.0, NAN])],
}
# where None documents "the default" (the method's iteration limit, default_rng(0)), it is a valid value
SPECIALS["count1_or_none"] = [v for v in SPECIALS["count1"] if v is not None]
SPECIALS["generator_or_none"] = [v for v in SPECIALS["generator"] if v is not None]
SPECIALS["limits"].remove(None)  # None is payload_limit's "use the model's actuator limits"
GENERATED = {
    "positive": st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
    "positive_or_inf": st.floats(max_value=0.0, allow_nan=False, allow_infinity=False),
    "nonnegative": st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False),
    "count0": st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)) | st.integers(max_value=-1),
    "count1": st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)) | st.integers(max_value=0),
    "count1_or_none": st.integers(max_value=0),
    "damping": st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=False),
    "seed": st.integers(max_value=-1),
    "port": st.integers(min_value=65536) | st.integers(max_value=-1),
    "limits": st.floats(max_value=-1e-300, allow_nan=False),
}


def bad(kind: str):
    return st.sampled_from(SPECIALS[kind]) | GENERATED.get(kind, st.nothing())


# ---- the arguments the calls share ----------------------------------------------------------------

SO101 = robots.load("so101")
WXAI, WXAI_MODEL = robots.load("wxai"), robots.mujoco_model("wxai")
Q = np.clip(SO101.q_ref, SO101.lower, SO101.upper)
J6 = jacobian(SO101, Q)
T0 = tool_pose(SO101, Q)
TWIST = np.array([0.01, 0.0, 0.0, 0.0, 0.0, 0.0])
RNG = np.random.default_rng(0)
DATA = sample_dataset(SO101, 32, np.random.default_rng(1))
MODEL = init_model(SO101, DATA.x, np.random.default_rng(2), hidden=(4,))
STEP = WXAI_MODEL.opt.timestep


def still(k, t, q, T):
    return np.zeros(6)


def ik(**option):
    solve_ik(SO101, T0[:3, 3], Q, task="position", **{"rng": np.random.default_rng(0), **option})


def ik_batch(**option):
    solve_ik_batch(SO101, T0[None, :3, 3], Q, task="position", **{"rng": np.random.default_rng(0), **option})


OWN = [  # (call taking the option as keyword, option, kind)
    (lambda **o: control.StepSettings(**o), "char_length", "positive"),
    (lambda **o: control.StepSettings(**o), "sigma_healthy", "nonnegative"),
    (lambda **o: control.StepSettings(**o), "lambda_max", "nonnegative"),
    (lambda **o: control.StepSettings(**o), "qdot_limit", "positive_or_inf"),
    (lambda **o: control.tick(J6, TWIST, **o), "dt", "positive"),
    (lambda **o: control.resolved_rate(SO101, Q, still, **{"dt": 0.01, "n_ticks": 2, **o}), "dt", "positive"),
    (lambda **o: control.resolved_rate(SO101, Q, still, **{"dt": 0.01, "n_ticks": 2, **o}), "n_ticks", "count1"),
    (lambda **o: control.line_reference(T0, [0.01, 0, 0], **o), "ramp", "nonnegative"),
    (lambda **o: control.tracking_twist(lambda t: T0, **{"dt": 0.01, **o}), "dt", "positive"),
    (lambda **o: control.tracking_twist(lambda t: T0, 0.01, **o), "feedback", "nonnegative"),
    (lambda **o: control.follow_line(SO101, Q, [0.01, 0, 0], **{"duration": 0.02, "dt": 0.01, **o}), "duration",
     "positive"),
    (lambda **o: control.follow_line(SO101, Q, [0.01, 0, 0], **{"duration": 0.02, "dt": 0.01, **o}), "dt", "positive"),
    (lambda **o: control.follow_line(SO101, Q, [0.01, 0, 0], 0.02, 0.01, **o), "feedback", "nonnegative"),
    (lambda **o: control.follow_line(SO101, Q, [0.01, 0, 0], 0.02, 0.01, **o), "substeps", "count1"),
    (lambda **o: control.estimate_wrench(J6, np.zeros(SO101.n), **o), "rcond", "nonnegative"),
    (lambda **o: control.closed_loop(WXAI_MODEL, WXAI, WXAI.q_ref, still, **{"dt": STEP, "duration": STEP, **o}),
     "dt", "positive"),
    (lambda **o: control.closed_loop(WXAI_MODEL, WXAI, WXAI.q_ref, still, **{"dt": STEP, "duration": STEP, **o}),
     "duration", "positive"),
    (lambda **o: control.closed_loop(WXAI_MODEL, WXAI, WXAI.q_ref, still, STEP, STEP, **o), "hold", "nonnegative"),
    (lambda **o: control.table_scene(robots.model_path("wxai"), [0.3, 0], [0.1, 0.1, 0.02], **o), "top_z", "real"),
    (lambda **o: statics.payload_limit(WXAI_MODEL, WXAI, WXAI.q_ref, **o), "limits", "limits"),
    (lambda **o: statics.max_tip_force(np.ones(2), np.ones(2), **o), "limits", "limits"),
    (lambda **o: follow_step(SO101, Q, T0[:3, 3], "dls", **o), "dt", "positive"),
    (lambda **o: follow_step(SO101, Q, T0[:3, 3], "dls", 0.03, **o), "gain", "nonnegative"),
    (lambda **o: follow_step(SO101, Q, T0[:3, 3], "dls", 0.03, **o), "max_speed", "positive"),
    (lambda **o: Viewer("so101", **o), "port", "port"),
    (lambda **o: Viewer("so101", **o), "rate_hz", "positive"),
    (lambda **o: Viewer("so101", **o), "mesh_cell", "positive"),
    (lambda **o: sample_dataset(SO101, **{"n_samples": 4, "rng": RNG, **o}), "n_samples", "count1"),
    (lambda **o: sample_dataset(SO101, **{"n_samples": 4, "rng": RNG, **o}), "rng", "generator"),
    (lambda **o: sample_dataset(SO101, 4, RNG, **o), "margin", "nonnegative"),
    (lambda **o: sample_dataset(SO101, 4, RNG, **o), "max_draws", "count1"),
    (lambda **o: sample_dataset(SO101, 4, RNG, **o), "seed", "seed"),
    (lambda **o: init_model(SO101, DATA.x, **{"rng": RNG, **o}), "rng", "generator"),
    (lambda **o: init_model(SO101, DATA.x, RNG, hidden=(o["hidden"],)), "hidden", "count1"),
    (lambda **o: _dls_refine(SO101, DATA.x[:2], DATA.q[:2], **{"iterations": 1, **o}), "iterations", "count0"),
    (lambda **o: _dls_refine(SO101, DATA.x[:2], DATA.q[:2], 1, **o), "damping", "nonnegative"),
    (lambda **o: _dls_refine(SO101, DATA.x[:2], DATA.q[:2], 1, **o), "tol", "nonnegative"),
    (lambda **o: train(MODEL, SO101, DATA, **{"steps": 100, **o}), "steps", "count1"),
    (lambda **o: train(MODEL, SO101, DATA, steps=100, **o), "batch_size", "count1"),
    (lambda **o: train(MODEL, SO101, DATA, steps=100, **o), "learning_rate", "positive"),
    (lambda **o: train(MODEL, SO101, DATA, steps=100, **o), "seed", "seed"),
    (lambda **o: train(MODEL, SO101, DATA, steps=100, **o), "log_every", "count1"),
]

V3 = np.array([0.01, 0.0, 0.0])
OTHERS = [  # the IK, null-space and singularity modules
    (Solver, "restarts", "count0"), (Solver, "iterations", "count1_or_none"), (Task, "tol_position", "positive"),
    (Task, "tol_orientation", "positive"), (Solver, "damping", "nonnegative"), (Solver, "step", "positive"),
    (Solver, "sigma_healthy", "nonnegative"), (Solver, "lambda_max", "nonnegative"),
    (Solver, "patience", "count1_or_none"), (ik, "rng", "generator_or_none"), (ik_batch, "rng", "generator_or_none"),
    (lambda **o: nullspace.pinv(J6[:3], **o), "lam", "damping"),
    (lambda **o: nullspace.pinv(J6[:3], **o), "rcond", "nonnegative"),
    (lambda **o: nullspace.projector(J6[:3], **o), "lam", "damping"),
    (lambda **o: nullspace.redundant_rate(J6[:3], V3, **o), "lam", "damping"),
    (lambda **o: nullspace.priority_rate(J6[:3], V3, J6[3:], V3, **o), "lam2", "damping"),
    (lambda **o: nullspace.manipulability(SO101, Q, "full", **o), "char_length", "positive"),
    (lambda **o: singularity.damped_solve(J6[:3], V3, **{"lam": 0.01, **o}), "lam", "damping"),
    (lambda **o: singularity.damped_solve(J6[:3], V3, 0.01, **o), "rcond", "nonnegative"),
    (lambda **o: singularity.damped_step(J6, V3, **{"dt": 0.01, **o}), "dt", "positive"),
    (lambda **o: singularity.damped_step(J6, V3, 0.01, **o), "sigma_healthy", "nonnegative"),
    (lambda **o: singularity.damped_step(J6, V3, 0.01, **o), "lambda_max", "nonnegative"),
    (lambda **o: singularity.damped_step(J6, V3, 0.01, **o), "qdot_limit", "positive_or_inf"),
    (lambda **o: singularity.damped_step(J6, TWIST, 0.01, block="full", **o), "char_length", "positive"),
    (lambda **o: singularity.health(J6, "full", **o), "char_length", "positive"),
    (lambda **o: singularity.scale_to_limit(np.ones(SO101.n), **o), "limit", "positive_or_inf"),
]
def _id(call, option) -> str:
    """``module.function-option``: the public function a case calls, read off the lambda's code."""
    if call.__name__ != "<lambda>":
        return f"{call.__name__}-{option}"
    names = [n for n in call.__code__.co_names if n not in ("np", "ones", "zeros", "array", "model_path", "x", "q")]
    return f"{'.'.join(names[:2]) if names[0] in ('control', 'statics', 'nullspace', 'singularity') else names[0]}-{option}"


CASES = [pytest.param(*c, id=_id(*c[:2])) for c in OWN]
CASES += [pytest.param(*c, id=_id(*c[:2])) for c in OTHERS]


@pytest.mark.parametrize("call, option, kind", CASES)
@settings(max_examples=30, deadline=None, derandomize=True)
@given(data=st.data())
def test_bad_option_raises_physai_error_naming_it(call, option, kind, data):
    value = data.draw(bad(kind), label=option)
    with pytest.raises(PhysaiError) as info:
        call(**{option: value})
    assert option in str(info.value), str(info.value)
