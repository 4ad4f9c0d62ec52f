"""The models of the engine, each a declared unit; the registry everything else reads.

A model module (``finite_width``, ``gaussian``, ``sde``) declares in one place its numba
layer step (``work``, ``evaluate``, ``noise``, ``advance``: see :mod:`..driver`), its
tangent (Jacobian) step (``tangent_work``, ``tangent_step``), its parameters
(``prepare``: ModelParams and sizes -> the numeric constants the kernels read) and, as a
:class:`Model` named ``MODEL``, its name, labels and the model it converges to.

:data:`REGISTRY` (name -> module; cheap to import: the CLI reads its names without loading
numba) and :data:`MODELS` (name -> Model, loaded on first use) feed the engine's entry points
(``engine.simulate``, ``lyapunov_tangent``, ``two_point``, ``sde_refinement_ladder``), the
CLI's choices and the refinement ladders.  Adding a model: a new module here and one line in
:data:`REGISTRY` (plus its tests).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Prepared:
    """What a model's ``prepare`` returns: kernel constants, the mode label and extra info."""

    consts: tuple
    mode: str
    info: tuple = ()
    width: int | None = None


@dataclass(frozen=True)
class Model:
    """A declared model (see the package docstring).

    name: registry key (CLI choice); label: how errors and reports name it; unit: "layer" or
    "step"; converges_to: the model it converges to (as width -> infinity, or depth ->
    infinity), None for the limit itself; needs_width: takes an MLP width m; field: its noise
    is the Gaussian field of kernel K (consts = FieldConsts), so it can sit on a refinement
    ladder; uses_activation: the numba functions that call ``phi``/``dphi`` (compiled per
    activation); prepare(params, width, mode, n_rows, tangent) -> Prepared; cost(n, d, m):
    flops of one layer of one path (sizes the progress bar); driver: "simulate" (one system:
    ``engine.simulate``) or "coupled" (several systems on one noise: ``engine.simulate_coupled``);
    fields: the ``ModelParams.field`` values it simulates (``MODELS``' prepare refuses any other).
    """

    name: str
    module: str
    label: str
    unit: str
    converges_to: str | None
    needs_width: bool
    field: bool
    uses_activation: tuple
    prepare: Callable
    cost: Callable
    description: str = ""
    driver: str = "simulate"  # the driver of its runs: "simulate", or "coupled" (several systems)
    fields: tuple = ("mlp",)  # the ModelParams.field values it simulates (prepare refuses the others)

    def kernel(self, driver: str, params, level: "Model | None" = None):
        """The compiled parallel kernel of `driver` ("simulate", "tangent", "ladder")."""
        from ..driver import compiled
        if not self.uses_activation:
            return compiled(driver, self, None, level)
        return compiled(driver, self, params.activation, level, hidden_activations(params))


def hidden_activations(params) -> tuple:
    """The activations of a deep block's hidden layers after the first (() for one layer)."""
    return tuple(act for act, _, _ in params.hidden)


REGISTRY = {
    "transformer": "finite_width",
    "gaussian": "gaussian",
    "sde": "sde",
    "coupled": "coupled",
    "fixed_kernel": "fixed_kernel",
    "rqf": "rqf",
    "rqf_sde": "rqf_sde",
}


def _load() -> dict[str, Model]:
    import importlib
    from dataclasses import replace
    out = {}
    for name, module in REGISTRY.items():
        model = importlib.import_module(f"{__name__}.{module}").MODEL
        if model.name != name:
            raise RuntimeError(f"model module {module} declares {model.name!r}, registered as {name!r}")
        out[name] = replace(model, prepare=_field_checked(model))
    return out


def _field_checked(model: Model) -> Callable:
    """`model`'s prepare, refusing a ModelParams whose ``field`` the model does not simulate (a Gaussian
    transformer asked for field="rqf" would otherwise run the MLP field silently)."""
    def prepare(params, *args, **kwargs):
        field = getattr(params, "field", "mlp")
        if field not in model.fields:
            from ...errors import ParameterError
            raise ParameterError("field", field, f"is not simulated by the {model.label} (it simulates field "
                                 f"{', '.join(model.fields)}; field rqf: the models rqf and rqf_sde)")
        return model.prepare(params, *args, **kwargs)
    prepare.__doc__ = model.prepare.__doc__
    return prepare


def __getattr__(attr):
    if attr == "MODELS":
        models = _load()
        globals()["MODELS"] = models
        return models
    raise AttributeError(attr)


def ladder_reference(kind: str) -> Model:
    """The fine reference of a refinement ladder of `kind`: the limit the model converges to
    (the SDE for the Gaussian transformer), or the model itself when it is the limit."""
    models = __getattr__("MODELS") if "MODELS" not in globals() else globals()["MODELS"]
    model = models[kind]
    return models[model.converges_to] if model.converges_to else model
