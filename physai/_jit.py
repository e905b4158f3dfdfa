"""numba's ``njit`` with its disk cache in physai's cache folder (private): what the kernel modules
(``physai._numba_*``) are decorated with. Below :mod:`physai._engine`, which loads those modules by name, so the
imports run one way: ``_engine`` -> ``_numba_*`` -> ``_jit``."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import tempfile
import threading
from pathlib import Path

from physai import _env

_NUMBA_CONFIG = threading.Lock()  # numba's cache folder is redirected while a kernel is decorated
_HERE = Path(__file__).resolve().parent


def kernel_sources_digest(folder: Path = _HERE) -> str:
    """The hash of every source numba compiles the kernels from (``_numba_*.py``, ``_ik_record.py``, this file) in
    ``folder``: the name of the JIT cache's folder. numba checks a cached function against its own file only, so a
    kernel that inlined a helper from another module would be loaded stale after that helper changed (and an
    ahead-of-time build would copy the stale code); a folder per set of sources leaves nothing to go stale."""
    h = hashlib.sha256()
    for path in [*sorted(folder.glob("_numba_*.py")), folder / "_ik_record.py", folder / "_jit.py"]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """Where run-time builds and numba's JIT cache are kept, as an absolute path: ``NUMBA_CACHE_DIR`` when set
    (beside numba's own cache), else the user's cache folder (``~/.cache/physai`` on Linux)."""
    root = _env.numba_cache_dir()
    if root is not None:
        return root
    import platformdirs

    return Path(platformdirs.user_cache_dir("physai", appauthor=False))


def _writable_cache() -> Path | None:
    """The cache folder, made if need be, or None if no file can be written there."""
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
    except OSError:
        return None
    return directory


def njit(*args, **options):
    """``numba.njit`` whose disk cache (``cache=True``) lives in :func:`cache_dir`, never beside the source (inside
    an installed package). A cache that cannot be written or read (no folder, a full disk, a file cut short) means
    compiling and keeping the code in memory, never an error; with ``NUMBA_DISABLE_JIT`` set the function is
    returned as it is, as numba does."""
    import numba

    if not options.get("cache"):
        return numba.njit(*args, **options)
    signatures = (args[0] if isinstance(args[0], list) else [args[0]]) if args else []

    def decorate(func):
        # Made without signatures, so that its cache is in place before anything compiles; then what numba's own
        # decorator does with signatures: compile each, and no other.
        dispatcher = numba.njit(**{**options, "cache": False})(func)
        if numba.config.DISABLE_JIT:
            return dispatcher
        dispatcher._cache = _disk_cache(func)
        if signatures:
            from numba.core import typeinfer

            with typeinfer.register_dispatcher(dispatcher):
                for signature in signatures:
                    dispatcher.compile(signature)
                dispatcher.disable_compile()
        return dispatcher

    return decorate


def _disk_cache(func):
    """numba's disk cache for ``func`` in :func:`cache_dir` (:func:`_forgiving_cache`), or none where no file can be
    written there."""
    import numba
    from numba.core.caching import NullCache

    with _NUMBA_CONFIG:  # numba reads its cache folder from its config when a cache is made
        directory = _writable_cache()
        if directory is None:
            return NullCache()
        saved, numba.config.CACHE_DIR = numba.config.CACHE_DIR, str(directory / f"jit-{_digest()}")
        try:
            return _forgiving_cache()(func)
        except (OSError, RuntimeError):  # numba found no folder it can write (RuntimeError: "no locator")
            return NullCache()
        finally:
            numba.config.CACHE_DIR = saved


@functools.cache
def _digest() -> str:
    return kernel_sources_digest()


@functools.cache
def _forgiving_cache() -> type:
    """numba's disk cache of compiled functions, in ``numba.config.CACHE_DIR`` only (numba would fall back to a
    folder beside the source), where a file that cannot be written or read means compiling, not an error."""
    from numba.core.caching import CompileResultCacheImpl, FunctionCache, UserProvidedCacheLocator

    class InCacheFolder(CompileResultCacheImpl):
        _locator_classes = [UserProvidedCacheLocator]

    class ForgivingCache(FunctionCache):
        _impl_class = InCacheFolder

        def load_overload(self, sig, target_context):
            try:
                return super().load_overload(sig, target_context)
            except OSError:
                return None

        def save_overload(self, sig, data):
            with contextlib.suppress(OSError):
                super().save_overload(sig, data)

    return ForgivingCache
