"""Small helpers the lesson scripts share: tee printed output into a file beside the script, and the claims
(published figures against this run) every lesson writes for the tour's audit page, made by the lesson's private
``_audit.py`` from what its scripts return (a learner's copy of a script, without that file, writes none)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from types import ModuleType

from physai import _env, _files
from physai.errors import InputError

# An installed package carries the lessons as physai/course/_lessons (the wheel's copy of experiments/); a clone has them
# in experiments/.
PACKAGED_LESSONS = Path(__file__).resolve().parent / "_lessons"
LESSONS_DIR = PACKAGED_LESSONS if PACKAGED_LESSONS.is_dir() else PACKAGED_LESSONS.parents[2] / "experiments"
OUT_ENV = _env.LESSON_OUT  # set: lessons write under OUT_ENV/<lesson folder> instead of beside their scripts
RESULTS_FILE = "results.json"
AUDIT_FILE = "_audit.py"  # a lesson's private file beside its scripts: ``CLAIMS``, script name -> its claims
FIGURES_KEY = "figures"  # results.json's entry of the figures' captions and alt texts, beside the scripts' entries
_UNSAVED = "physai.course.lesson.unsaved"  # a dataclass field's metadata key: save_results leaves the field out


def lesson_number(folder: str | Path) -> str:
    """A lesson folder's number, as ``physai lesson`` takes it: ``"09"`` for ``experiments/09-jacobians``."""
    return Path(folder).name.split("-")[0]


def out_dir(script: str | Path) -> Path:
    """The folder a lesson script writes its transcript, claims, results and figures to.

    Beside the script (``experiments/NN-name/``), or ``$PHYSAI_LESSON_OUT/NN-name/`` when that variable is set
    (the tour sets it, so lessons run from an installed package never write inside the install); a relative
    ``$PHYSAI_LESSON_OUT`` is taken from the working directory. An output folder that cannot be made is refused,
    naming the variable.
    """
    folder = Path(script).resolve().parent
    root = _env.lesson_out()
    if root is None:
        return folder
    out = root / folder.name
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{OUT_ENV}={str(root)!r}: cannot make {out} ({exc.strerror or exc})") from None
    return out


def full_run() -> bool:
    """Whether a lesson script runs its large sizes: ``--full`` on its command line, or ``PHYSAI_FULL=1`` (what
    ``physai tour --full`` sets; another value than 1 or 0 is ignored with a warning)."""
    return "--full" in sys.argv[1:] or _env.full()


def unsaved(**kwargs):
    """A step dataclass's field that :func:`save_results` leaves out of ``results.json`` (and ``repr``): a large
    record (per-tick arrays, a simulation's trace) that the script's printers and figures read and the page does not.
    ``kwargs`` go to :func:`dataclasses.field` (``default=...``)."""
    return field(repr=False, metadata={_UNSAVED: True}, **kwargs)


def _plain(x):
    """``x`` with dataclass instances (a step's result) turned into dicts of their fields (less the
    :func:`unsaved` ones), and NumPy scalars and arrays (at any depth) into JSON's numbers and lists."""
    if is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in fields(x) if not f.metadata.get(_UNSAVED)}
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "tolist"):
        return _plain(x.tolist())
    return x


@dataclass(frozen=True)
class Figure:
    """A figure a lesson script wrote: its file ``name`` in the lesson's output folder, the ``caption`` the page
    shows under it (a sentence: what it shows) and its ``alt`` text (what is drawn, for a reader who cannot see it).

    Pass it to :func:`save_results` (``figures=``), which records both in ``results.json`` for the page and the
    audit.
    """

    name: str
    caption: str
    alt: str

    def __post_init__(self):
        for label in ("caption", "alt"):
            text = getattr(self, label)
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"figure {self.name}: {label}: expected a non-empty text, got {text!r}")


def save_results(folder: str | Path, script: str, data, figures: Iterable[Figure] = ()):
    """Merge ``data`` into ``folder/results.json`` under the script's stem (``"experiment.py"`` -> ``"experiment"``),
    other scripts' entries kept; returns ``data``. The lesson page reads its numbers from here, at full precision.

    ``data`` is a dict, or one step's frozen dataclass. A dataclass (there or as a value) is stored as the dict of
    its fields (``{"sweep": sweep_step(n)}`` is read on the page as ``R.experiment.sweep.worst``), less those
    declared :func:`unsaved`. ``figures`` are the :class:`Figure` records of the figures the
    script wrote in ``folder``: they replace the script's earlier ones under the file's ``"figures"`` entry
    (``{name: {"script", "caption", "alt"}}``, see :func:`read_figures`); a figure not in ``folder`` is refused.
    """
    folder, stem = Path(folder), Path(script).stem
    if stem == FIGURES_KEY:
        raise InputError(f"script {script!r}: its stem is the results file's {FIGURES_KEY!r} entry; rename it")
    figures = list(figures)
    missing = [f.name for f in figures if not (folder / f.name).is_file()]
    if missing:
        raise InputError(f"figures: {', '.join(missing)} not written in {folder}")
    path = folder / RESULTS_FILE
    stored = (_files.read_json(path, dict) or {}) if path.exists() else {}  # a cut or foreign file is replaced
    stored[stem] = _plain(data)
    figures_kept = stored.pop(FIGURES_KEY, {})
    kept = {n: f for n, f in (figures_kept.items() if isinstance(figures_kept, dict) else ())
            if isinstance(f, dict) and f.get("script") != Path(script).name}
    recorded = kept | {f.name: {"script": Path(script).name, "caption": f.caption, "alt": f.alt} for f in figures}
    if recorded:  # a lesson without figures keeps a results file of its scripts' entries alone
        stored[FIGURES_KEY] = recorded
    _files.write_text(path, json.dumps(stored, indent=1, allow_nan=False))
    return data


def read_figures(folder: str | Path) -> dict[str, Figure]:
    """``{file name: Figure}`` of the figures the lesson folder's scripts recorded with :func:`save_results`."""
    return {name: Figure(name, f["caption"], f["alt"])
            for name, f in read_results(folder).get(FIGURES_KEY, {}).items()}


def save_figure(fig, path: str | Path, dpi: int = 110) -> Path:
    """Save the matplotlib figure ``fig`` as a PNG at ``path`` (``dpi`` dots per inch), written whole or not at all:
    a run killed mid-save leaves the previous figure, never half of one, beside the page that shows it -> ``path``."""
    with _files.replacing(path, binary=True) as fh:
        fig.savefig(fh, format="png", dpi=dpi)
    return Path(path)


def read_results(folder: str | Path) -> dict:
    """What the lesson folder's scripts saved with :func:`save_results` (``{}`` when nothing)."""
    path = Path(folder) / RESULTS_FILE
    return _written(path, dict, "results") if path.exists() else {}


def _written(path: Path, kind: type, what: str):
    """The JSON ``kind`` physai wrote at ``path``; an :class:`InputError` naming it where it is cut short or holds
    something else (the lesson's next run replaces it)."""
    value = _files.read_json(path, kind)
    if value is None or (kind is dict and not all(isinstance(v, dict) for v in value.values())) or (
            kind is list and not all(isinstance(v, dict) for v in value)):
        raise InputError(f"{path}: not the {what} of a lesson run (cut short, or edited): run the lesson again to "
                         "replace it")
    return value


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s: str) -> int:
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self) -> None:
        for st in self.streams:
            st.flush()


@contextlib.contextmanager
def transcript(path: str | Path):
    """Print as usual and also write everything printed to ``path`` (the lesson's ``*_output.txt``), which is
    replaced when the block ends (a run that fails still leaves its transcript; a killed one the previous)."""
    path = Path(path)
    with _files.replacing(path, keep_on_error=True) as fh:
        old = sys.stdout
        sys.stdout = _Tee(old, fh)
        try:
            yield path
        finally:
            sys.stdout.flush()
            sys.stdout = old


def fmt_row(values, width: int = 8, prec: int = 4) -> str:
    """Numbers right-aligned at fixed precision, as the lessons print them (``-0.0000`` shown as ``0.0000``)."""
    return " ".join(f"{(0.0 if abs(v) < 0.5 * 10**-prec else v):{width}.{prec}f}" for v in values)


# ---- claims: what the source material says, what this run measured, and the verdict ----------------

VERDICTS = ("agree", "disagree")
CLAIMS_FILE = "claims.json"


@dataclass(frozen=True)
class Claim:
    """One number (or statement) the lesson's source material prints, set against what this run measured.

    ``source`` is the value as the source material writes it (text, e.g. ``"0.5 m"``); ``measured`` is this
    run's value formatted the same way; ``verdict`` is ``"agree"`` or ``"disagree"``; ``why`` says what decides it
    (the tolerance, or the computation that shows the source wrong). ``script`` is the lesson script that
    measured it (``"build.py"``, ``"experiment.py"``, ...).
    """

    lesson: str
    claim: str
    source: str
    measured: str
    verdict: str
    why: str
    script: str = "experiment.py"

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise InputError(f"verdict: expected one of {VERDICTS}, got {self.verdict!r}")


def verdict(ok: bool) -> str:
    """``"agree"`` when ``ok`` else ``"disagree"``: the verdict comes from a comparison, never typed by hand."""
    return VERDICTS[0] if ok else VERDICTS[1]


def printed_tol(text: str) -> float:
    """Half a unit in the last printed digit of a number as the source writes it: ``"0.312"`` -> 5e-4,
    ``"7.9e-07"`` -> 5e-9, ``"147.4"`` -> 0.05 (the tolerance "agrees to the printed precision" means)."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def number_claim(lesson: str, claim: str, source: str, measured: float, *, script: str, unit: str = "",
                 fmt: str | None = None, tol: float | None = None, why: str | None = None) -> Claim:
    """A claim about one number: ``source`` as the source material prints it (``"0.312"``), ``measured`` this
    run's value.

    The verdict is ``agree`` when ``|measured - source| <= tol``; ``tol`` defaults to the source's printed precision
    (:func:`printed_tol`). ``measured`` is printed like the source (``fmt`` overrides); ``why`` defaults to the
    tolerance. ``unit`` is appended to both numbers.
    """
    tol = printed_tol(source) if tol is None else tol
    if fmt is None:
        digits = len(source.strip().lower().partition("e")[0].partition(".")[2])
        fmt = f".{digits}e" if "e" in source.lower() else f".{digits}f"
    suffix = f" {unit}" if unit else ""
    ok = abs(measured - float(source)) <= tol * (1 + 1e-9)  # 1e-9: the printed bound itself counts as within
    return Claim(lesson, claim, source + suffix, f"{measured:{fmt}}{suffix}", verdict(ok),
                 why or f"|measured - source| <= {tol:.1g}{suffix}", script)


def factor_claim(lesson: str, claim: str, source: str, measured: float, *, script: str, factor: float, why: str,
                 unit: str = "") -> Claim:
    """A claim about a round-off-sized number, whose digits depend on operation order and CPU: ``agree`` when
    ``measured`` is within ``factor`` of the source's value either way (printed in the source's ``%.1e`` style)."""
    source_value, suffix = float(source), f" {unit}" if unit else ""
    ok = measured > 0 and source_value > 0 and max(measured / source_value, source_value / measured) <= factor
    return Claim(lesson, claim, source + suffix, f"{measured:.1e}{suffix}", verdict(ok), why, script)


def write_claims(folder: str | Path, claims: list[Claim], script: str) -> Path:
    """Merge ``script``'s claims into ``folder/claims.json`` (other scripts' rows kept) for the tour's report."""
    path = Path(folder) / CLAIMS_FILE
    rows = (_files.read_json(path, list) or []) if path.exists() else []  # a cut or foreign file is replaced
    fields = set(Claim.__dataclass_fields__)  # a row in an older physai's columns is dropped: its script reruns
    rows = [r for r in rows if isinstance(r, dict) and r.get("script") != script and set(r) == fields] + [
        asdict(c) | {"script": script}
                                                                                   for c in claims]
    _files.write_text(path, json.dumps(rows, indent=1))
    return path


def publish_claims(folder: str | Path, claims: list[Claim], script: str) -> list[Claim]:
    """Merge the claims into ``folder/claims.json`` for the audit page and return them (what :func:`run_script` does
    with the claims of the lesson's ``_audit.py``; a script it does not name calls it last in its ``main``:
    ``return publish_claims(HERE, rows, "experiment.py")``). Nothing is printed: the script's
    transcript, which the lesson page shows, holds what the run measured, and the comparison with published figures
    lives in the audit only."""
    write_claims(folder, claims, script)
    return claims


def load_module(path: str | Path) -> ModuleType:
    """Import the file at ``path`` as a fresh module (not as ``__main__``: its ``main()`` does not run)."""
    name = f"physai_lesson_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses defined in the file look their module up here
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def audit_claims(script: str | Path, steps) -> list[Claim] | None:
    """The claims the lesson's private ``_audit.py`` (beside ``script``) makes on ``steps``, what the script's
    ``main`` returned: its ``CLAIMS[script name](steps)``; ``None`` where there is no such file (a learner's copy)
    or it names no such script."""
    script = Path(script).resolve()
    audit = script.with_name(AUDIT_FILE)
    make = load_module(audit).CLAIMS.get(script.name) if audit.is_file() else None
    return None if make is None else make(steps)


def publish_audit(folder: str | Path, script: str | Path, steps) -> list[Claim] | None:
    """The claims of the lesson's ``_audit.py`` on ``steps``, what ``script``'s ``main`` returned
    (:func:`audit_claims`), merged into ``folder/claims.json`` (:func:`publish_claims`) and returned; ``None``, and
    nothing written, where the audit makes none (a learner's copy)."""
    claims = audit_claims(script, steps)
    return None if claims is None else publish_claims(folder, claims, Path(script).name)


def run_script(main: Callable[..., object], script: str | Path, *args) -> None:
    """Run a lesson script's ``main(*args)``, everything printed also written to ``<script>_output.txt`` in the
    lesson's output folder (:func:`out_dir`); then the claims of the lesson's ``_audit.py`` on what ``main``
    returned, if any, merged into that folder's ``claims.json`` (:func:`publish_audit`)."""
    script = Path(script)
    with transcript(out_dir(script) / f"{script.stem}_output.txt"):
        publish_audit(out_dir(script), script, main(*args))


def read_claims(folder: str | Path) -> list[Claim]:
    """The claims a lesson folder's scripts wrote (``[]`` when none)."""
    path = Path(folder) / CLAIMS_FILE
    rows = _written(path, list, "claims") if path.exists() else []
    if any(set(r) != set(Claim.__dataclass_fields__) for r in rows):
        raise InputError(f"{path}: rows that are not claims (edited?): run the lesson again to replace it")
    return [Claim(**r) for r in rows]
