"""The one per-path driver of the engine and the compiler that binds it to a model.

A model (``numeric.models``) declares numba functions with fixed names and signatures (``work``,
``evaluate``, ``noise``, ``advance``, ``tangent_work``, ``tangent_step``); this module owns
everything around them: buffers, recording of energies and trajectories, the projection,
Benettin's QR renormalisation and the status/blow-up codes (written, never raised).  Four
drivers: :func:`simulate_path`, :func:`tangent_path`, :func:`coupled_path`, :func:`ladder_path`.
:func:`compiled` copies a driver's source with the model's functions bound as globals into a
generated module (numba's on-disk cache cannot key functions passed as arguments), loaded
through ``bridge.load_module``.  The model interface and the drivers at length:
docs/numerics.md, section "The driver and the model interface".
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import re
import sys
from contextlib import contextmanager
from functools import lru_cache

import numpy as np
from numba import njit

from . import attention as _attention
from .fields import STATUS_NONFINITE, STATUS_OK, engine_sources_digest, rng_state, sample_field
from .observables import config_deviation, energy0, energy_beta, max_token_deviation
from .sphere import dot, push


def _unbound(*args):  # replaced in each generated module by the model's function
    raise NotImplementedError("driver functions run only through driver.compiled(...)")


model_work = model_evaluate = model_noise = model_advance = _unbound
model_tangent_work = model_tangent_step = _unbound
ref_work = ref_evaluate = ref_advance = lvl_work = lvl_evaluate = lvl_advance = _unbound
attention_work = _attention.work


@njit(cache=True)
def record(X, p, slot, energy, betas, energies):
    """E_0 into energy[p, slot]; E_beta for each requested beta into energies[p, slot, :]."""
    energy[p, slot] = energy0(X)
    for b in range(betas.shape[0]):
        energies[p, slot, b] = energy_beta(X, betas[b])


@njit(cache=True)
def store(X, p, layer, store_every, traj):
    if store_every > 0 and layer % store_every == 0:
        traj[p, layer // store_every, :, :] = X


@njit(cache=True)
def orthonormalise(V, cum):
    """Modified Gram-Schmidt on the rows of V (in place, the Q of V^T = QR); cum[a] += log R_aa."""
    k = V.shape[0]
    for a in range(k):
        for b in range(a):
            r = dot(V[a], V[b])
            for c in range(V.shape[1]):
                V[a, c] -= r * V[b, c]
        nv = math.sqrt(dot(V[a], V[a]))
        if not (nv > 0.0) or not np.isfinite(nv):
            return STATUS_NONFINITE
        for c in range(V.shape[1]):
            V[a, c] /= nv
        cum[a] += math.log(nv)
    return STATUS_OK


# ------------------------------------------------------------------ the drivers
def simulate_path(p, X0, seeds, n_layers, h, consts, att, rtol, energy, betas, energies,
                  store_every, traj, final, status):
    """Path p of a model: X <- advance(X, E, sqrt(h) noise(E)), E = evaluate(X), n_layers times."""
    _, N, d = X0.shape
    sq = math.sqrt(h)
    st = rng_state(seeds[p])
    X = X0[p].copy()
    E = np.empty((N, d))
    W = np.empty((N, d))
    aw = attention_work(N, d, att)
    w = model_work(N, d, consts)
    record(X, p, 0, energy, betas, energies)
    store(X, p, 0, store_every, traj)
    for layer in range(n_layers):
        code = model_evaluate(X, E, h, att, aw)
        if code == STATUS_OK:
            code = model_noise(st, E, consts, w, W, rtol)
        if code == STATUS_OK:
            for i in range(N):
                for c in range(d):
                    W[i, c] *= sq
            code = model_advance(X, E, W, h, consts, att, aw, w)
        if code != STATUS_OK:
            status[p, 0] = code
            status[p, 1] = layer
            break
        record(X, p, layer + 1, energy, betas, energies)
        store(X, p, layer + 1, store_every, traj)
    final[p, :, :] = X


def tangent_path(p, x0s, v0s, seeds, n_layers, h, consts, att, rtol, logs, final, status):
    """Path p of the tangent flow: one token, k = v0s.shape[1] tangent vectors (Benettin)."""
    _, k, d = v0s.shape
    st = rng_state(seeds[p])
    x = x0s[p].copy()
    V = v0s[p].copy()
    tw = model_tangent_work(d, k, consts)
    cum = np.zeros(k)
    for a in range(k):
        logs[p, 0, a] = 0.0
    for layer in range(n_layers):
        code = model_tangent_step(st, x, V, h, consts, att, tw, rtol)
        if code == STATUS_OK:
            code = push(x, V)
        if code == STATUS_OK:
            code = orthonormalise(V, cum)
        if code != STATUS_OK:
            status[p, 0] = code
            status[p, 1] = layer
            break
        for a in range(k):
            logs[p, layer + 1, a] = cum[a]
    final[p, :] = x


def ladder_path(p, X0, seeds, n_fine, dt, factors, consts, att, rtol, final, max_dev,
                max_dev_config, status):
    """Levels r = 0..R-1 on one Brownian field (factor 1 = the reference, level 0).

    At every fine step the field increment over dt is drawn jointly at the evaluation points
    of all levels (R N points); level r accumulates it and, every factors[r] fine steps,
    advances with the accumulated increment W(t + h_r, x) - W(t, x) at its own points.
    final (P, R, N, d); max_dev / max_dev_config (P, R): max over level r's grid times of
    max_i |x_i^r - x_i^0| and of sqrt(sum_i |x_i^r - x_i^0|^2).
    """
    _, N, d = X0.shape
    table, k0 = consts.table, consts.k0
    R = factors.shape[0]
    M = R * N
    sq = math.sqrt(dt)
    st = rng_state(seeds[p])
    Xs = np.empty((R, N, d))
    Es = np.empty((R, N, d))
    Ws = np.zeros((R, N, d))
    for r in range(R):
        Xs[r] = X0[p]
    Eall = np.empty((M, d))
    dWall = np.empty((M, d))
    G = np.empty((M, M))
    Sw = np.empty((M, M))
    L = np.empty((M, M))
    Zd = np.empty((M, d))
    aw = attention_work(N, d, att)
    wr = ref_work(N, d, consts)
    wl = lvl_work(N, d, consts)
    code = STATUS_OK
    for r in range(R):
        if code == STATUS_OK:
            if r == 0:
                code = ref_evaluate(Xs[r], Es[r], factors[r] * dt, att, aw)
            else:
                code = lvl_evaluate(Xs[r], Es[r], factors[r] * dt, att, aw)
    for s in range(n_fine):
        if code != STATUS_OK:
            break
        for r in range(R):
            Eall[r * N:(r + 1) * N, :] = Es[r]
        code = sample_field(st, table, k0, Eall, G, Sw, L, Zd, dWall, rtol)
        if code != STATUS_OK:
            status[p, 1] = s
            break
        for r in range(R):
            for i in range(N):
                for c in range(d):
                    Ws[r, i, c] += sq * dWall[r * N + i, c]
        for r in range(R):
            f = factors[r]
            if (s + 1) % f != 0:
                continue
            hr = f * dt
            if r == 0:
                code = ref_advance(Xs[r], Es[r], Ws[r], hr, consts, att, aw, wr)
            else:
                code = lvl_advance(Xs[r], Es[r], Ws[r], hr, consts, att, aw, wl)
            if code != STATUS_OK:
                status[p, 1] = s
                break
            Ws[r] = 0.0
            if r == 0:
                code = ref_evaluate(Xs[r], Es[r], hr, att, aw)
            else:
                code = lvl_evaluate(Xs[r], Es[r], hr, att, aw)
            if code != STATUS_OK:
                status[p, 1] = s
                break
            dev = max_token_deviation(Xs[r], Xs[0])
            if dev > max_dev[p, r]:
                max_dev[p, r] = dev
            devc = config_deviation(Xs[r], Xs[0])
            if devc > max_dev_config[p, r]:
                max_dev_config[p, r] = devc
    if code != STATUS_OK:
        status[p, 0] = code
    final[p] = Xs


def coupled_path(p, X0, seeds, n_layers, h, consts, att, rtol, energy, final, max_dev, max_dev_config,
                 status):
    """Path p of R systems on one noise (``numeric.models.coupled``): X_r <- advance(X_r, E_r,
    sqrt(h) W_r), E_r = evaluate(X_r), the W_r drawn jointly by ``noise``.

    energy (P, R, L+1) E_0 of each system after every layer; final (P, R, N, d); max_dev /
    max_dev_config (P, R-1): max over layers of max_i |x_i^r - x_i^ref| and of
    sqrt(sum_i |x_i^r - x_i^ref|^2), the reference being the last system.
    """
    _, N, d = X0.shape
    R = final.shape[1]
    sq = math.sqrt(h)
    st = rng_state(seeds[p])
    Xs = np.empty((R, N, d))
    Es = np.empty((R, N, d))
    Ws = np.empty((R, N, d))
    for r in range(R):
        Xs[r] = X0[p]
        energy[p, r, 0] = energy0(Xs[r])
    aw = attention_work(N, d, att)
    w = model_work(N, d, consts)
    for layer in range(n_layers):
        code = STATUS_OK
        for r in range(R):
            if code == STATUS_OK:
                code = model_evaluate(Xs[r], Es[r], h, att, aw)
        if code == STATUS_OK:
            code = model_noise(st, Es, consts, w, Ws, rtol)
        if code == STATUS_OK:
            for r in range(R):
                for i in range(N):
                    for c in range(d):
                        Ws[r, i, c] *= sq
                if code == STATUS_OK:
                    code = model_advance(Xs[r], Es[r], Ws[r], h, consts, att, aw, w)
        if code != STATUS_OK:
            status[p, 0] = code
            status[p, 1] = layer
            break
        for r in range(R):
            energy[p, r, layer + 1] = energy0(Xs[r])
        for r in range(R - 1):
            dev = max_token_deviation(Xs[r], Xs[R - 1])
            if dev > max_dev[p, r]:
                max_dev[p, r] = dev
            devc = config_deviation(Xs[r], Xs[R - 1])
            if devc > max_dev_config[p, r]:
                max_dev_config[p, r] = devc
    final[p] = Xs


DRIVERS = {"simulate": simulate_path, "tangent": tangent_path, "ladder": ladder_path,
           "coupled": coupled_path}


# ------------------------------------------------------------------ binding a driver to models
def _source(fn, name=None) -> str:
    body = inspect.getsource(getattr(fn, "py_func", fn))
    body = body[body.index("def "):]
    if name is not None:
        body = re.sub(r"^def \w+\(", f"def {name}(", body, count=1)
    return "@njit(cache=True)\n" + body + "\n\n"


_ANNOUNCED = []


def _announce_compile() -> None:
    """One line on stderr, once per process, before the first kernel that was never compiled here."""
    if not _ANNOUNCED:
        _ANNOUNCED.append(True)
        print("sssn-verify: compiling numba kernels once, about a minute; cached afterwards "
              "(`sssn-verify warmup` does it ahead of time)", file=sys.stderr, flush=True)


def _hidden_source(hidden) -> tuple[list, str]:
    """(import lines, source) of ``hidden_phi(layer, u)`` / ``hidden_dphi(layer, u)``: hidden layer
    `layer`'s activation of the stack `hidden` (a tuple of Activations; one branch per layer, the
    identity past the end, which the models never reach)."""
    lines, body = [], ""
    for which in ("phi", "dphi"):
        branches = ""
        for layer, act in enumerate(hidden):
            fn = act.numba_pair[0 if which == "phi" else 1]
            lines.append(f"_h{layer}_{which} = sys.modules[{fn.py_func.__module__!r}].{which}")
            branches += f"    if layer == {layer}:\n        return _h{layer}_{which}(u)\n"
        body += (f"@njit(cache=True)\ndef hidden_{which}(layer, u):\n{branches}    return u\n\n\n")
    return lines, body


@lru_cache(maxsize=None)
def compiled(driver, model, activation=None, level=None, hidden=()):
    """The parallel kernel ``driver(n_paths, *args)`` of `driver` bound to `model`.

    `driver` names one of :data:`DRIVERS` or is a per-path function of another module (an
    experiment of ``numeric.experiments``), whose globals the generated module sees as well.

    `model` (and, for the ladder, the coarse `level` model) are ``numeric.models.Model``
    entries; `activation` supplies ``phi``/``dphi`` to the model functions listed in
    ``model.uses_activation`` (their source is copied into the generated module, where
    ``phi`` and ``dphi`` are globals).  `hidden` (a tuple of Activations, a deep block's hidden
    layers after the first) supplies ``hidden_phi(layer, u)``/``hidden_dphi(layer, u)`` to the
    same functions: one generated module per (activation, stack).  A name of
    ``uses_activation`` that starts with "_" is a helper of the model functions and is copied
    under its own name.
    """
    from .. import bridge, outputs
    fn = DRIVERS[driver] if isinstance(driver, str) else driver
    driver = driver if isinstance(driver, str) else fn.__name__ + "_all"
    args = list(inspect.signature(fn).parameters)[1:]
    lines = ["# generated by sssn_verify.numeric.driver; do not edit",
             "import sys", "from numba import njit",
             "from sssn_verify.numeric import driver as _driver"]
    models = [("model", model)] if level is None else [("ref", model), ("lvl", level)]
    lines.append("globals().update({k: v for k, v in vars(_driver).items() if not k.startswith('__')})")
    if fn.__module__ != __name__:
        lines.append(f"import {fn.__module__} as _home")
        lines.append("globals().update({k: v for k, v in vars(_home).items() if not k.startswith('__')})")
    body = ""
    for prefix, m in models:
        mod = importlib.import_module(m.module)
        lines.append(f"import {m.module} as _{prefix}")
        copied = set()
        if m.uses_activation:
            if activation is None:
                raise TypeError(f"model {m.name} needs an activation")
            phi, dphi = activation.numba_pair
            lines.append(f"globals().update({{k: v for k, v in vars(_{prefix}).items() "
                         "if not k.startswith('__')})")
            lines.append(f"phi = sys.modules[{phi.py_func.__module__!r}].phi")
            lines.append(f"dphi = sys.modules[{dphi.py_func.__module__!r}].dphi")
            hidden_lines, hidden_body = _hidden_source(hidden)
            lines.extend(hidden_lines)
            body += hidden_body
            for name in m.uses_activation:
                body += _source(getattr(mod, name), name if name.startswith("_") else f"{prefix}_{name}")
                copied.add(name)
        for name in ("work", "evaluate", "noise", "advance", "tangent_work", "tangent_step"):
            if name not in copied and hasattr(mod, name):
                lines.append(f"{prefix}_{name} = _{prefix}.{name}")
    text = ", ".join(args)
    source = ("\n".join(lines) + "\n\n\n" + body + _source(fn)
              + "@njit(cache=True, nogil=True)\n"
              f"def {driver}(start, stop, {text}):\n"
              "    for p in range(start, stop):\n"
              f"        {fn.__name__}(p, {text})\n")
    key = hashlib.sha256((source + engine_sources_digest()).encode()).hexdigest()[:16]
    path = outputs.cache_folder("kernels") / f"k_{driver}_{key}.py"
    if not path.exists():
        _announce_compile()
    gen = bridge.load_module(path, source, f"sssn_verify_kernel_{driver}_{key}")
    return PathKernel(getattr(gen, driver), path.with_suffix(".lock"))


class PathKernel:
    """``kernel(n_paths, *args)``: a generated range kernel ``fn(start, stop, *args)`` (numba,
    ``nogil``) run over contiguous path ranges on ``numba.get_num_threads()`` threads.

    Paths own their generator states and output rows, so the numbers do not depend on the
    split.  Threads over ranges instead of numba's ``parallel=True``/``prange``: the same work at
    run time, but the parfor lowering made each generated kernel cost 34-36 s of CPU to compile
    instead of 8-12 s (measured, gaussian and transformer simulate kernels, relu), and the test
    suite and a first ``verify`` compile dozens of them.  The first call of a process compiles (or
    loads from numba's cache) on one path under a lock file beside the kernel, so that processes
    sharing the cache (pytest-xdist or dask workers, two commands) never compile one kernel twice:
    the second waits and loads the first one's cache.
    """

    CHUNKS_PER_THREAD = 4          # ranges per thread: a slow thread does not hold the others up

    def __init__(self, fn, lock_path=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.lock_path = lock_path
        self.ready = False

    def __call__(self, n_paths, *args):
        import numba
        if not self.ready and n_paths > 0:
            with _file_lock(self.lock_path):
                self.fn(0, 1, *args)         # path 0 alone: compiled or loaded here, once
            self.ready = True
            self._ranges(1, n_paths, args, numba.get_num_threads())
            return
        self._ranges(0, n_paths, args, numba.get_num_threads())

    def _ranges(self, start, stop, args, threads):
        n_paths = stop - start
        threads = min(threads, n_paths)
        if threads <= 0:
            return
        if threads == 1:
            self.fn(start, stop, *args)
            return
        chunks = min(n_paths, threads * self.CHUNKS_PER_THREAD)
        edges = [start + n_paths * i // chunks for i in range(chunks + 1)]
        pool = _path_pool(threads)
        futures = [pool.submit(self.fn, a, b, *args) for a, b in zip(edges[:-1], edges[1:])]
        try:
            for f in futures:
                f.result()
        except BaseException:             # Ctrl-C or an error: start no further range
            for f in futures:
                f.cancel()
            raise


@contextmanager
def _file_lock(path):
    """An exclusive ``flock`` on `path` (created 0600 in the private kernel folder; released when
    the process dies); nothing when `path` is None."""
    if path is None:
        yield
        return
    import fcntl
    import os
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@lru_cache(maxsize=None)
def _path_pool(threads: int):
    from concurrent.futures import ThreadPoolExecutor
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sssn-paths")
