"""Parameters of a teacher-student pair of two-layer networks trained by SGD."""

from dataclasses import dataclass

import numpy as np

from .. import _validate, activations


@dataclass(frozen=True)
class Params:
    """Teacher, student and mini-batch SGD hyper-parameters (Goldt et al. 2020, sec. 1).

    Teacher phi*(x) = sum_m v*_m g(w*_m . x / sqrt N) with M hidden units, student
    phi(x) = sum_k v_k g(w_k . x / sqrt N) with K hidden units, inputs x ~ N(0, I_N),
    labels y = phi*(x) + sigma * zeta. Time is t = (SGD steps) / N; a run of length t
    uses batch * t * N samples.
    """

    N: int  # input dimension
    M: int  # teacher hidden units
    K: int  # student hidden units
    eta: float  # learning rate of the first layer (eq. 2)
    g: str = "erf"  # activation: "erf" (= erf(x/sqrt 2)), "linear" or "relu"
    eta_v: float | None = None  # learning rate of the second layer (eq. 3); None: eta
    sigma: float = 0.0  # standard deviation of the label noise
    batch: int = 1  # mini-batch size B (gradients averaged over the batch)
    weight_decay: float = 0.0  # kappa: w <- w - (eta kappa / N) w each step (v likewise)
    v_star: float = 1.0  # teacher second-layer weight (all M equal)
    v_init: float = 1.0  # student second-layer weights at t = 0 (fixed if not trained)
    train_second_layer: bool = False  # also train v with eq. (3)
    w_star_std: float = 1.0  # teacher first-layer weights ~ N(0, w_star_std^2): T ~ w_star_std^2 I
    w_init_std: float = 1.0  # student first-layer weights ~ N(0, w_init_std^2) at t = 0

    def __post_init__(self):
        _validate.integer("N", self.N, low=1, doc="input dimension")
        _validate.integer("M", self.M, low=1, doc="teacher hidden units")
        _validate.integer("K", self.K, low=1, doc="student hidden units")
        _validate.integer("batch", self.batch, low=1, doc="mini-batch size B")
        _validate.real("eta", self.eta, low=0.0, low_open=True, doc="learning rate")
        if self.eta_v is not None:
            _validate.real("eta_v", self.eta_v, low=0.0, low_open=True,
                           doc="second-layer learning rate")
        activations.code(self.g)
        _validate.real("sigma", self.sigma, low=0.0, doc="label noise")
        _validate.real("weight_decay", self.weight_decay, low=0.0, doc="weight decay")
        _validate.real("v_star", self.v_star, doc="teacher second-layer weight")
        _validate.real("v_init", self.v_init, doc="initial student second-layer weight")
        _validate.real("w_star_std", self.w_star_std, low=0.0, low_open=True,
                       doc="teacher weight scale")
        # ReLU units with zero weights have zero field variance: g'(0) is undefined and
        # the ODE's integrals are singular there.
        _validate.real("w_init_std", self.w_init_std, low=0.0, low_open=self.g == "relu",
                       doc="student initial weight scale" + (" (ReLU)" if self.g == "relu" else ""))
        if not isinstance(self.train_second_layer, bool):
            raise ValueError(
                f"train_second_layer must be True or False; got {self.train_second_layer!r}")

    @property
    def eta_second(self):
        """Learning rate of the second layer (``eta_v``, defaulting to ``eta``)."""
        return self.eta if self.eta_v is None else self.eta_v

    @property
    def act(self):
        """Integer code of the activation, for the kernels."""
        return activations.code(self.g)

    def v_star_vector(self):
        """Teacher second-layer weights, shape (M,)."""
        return np.full(self.M, float(self.v_star))

    def attrs(self):
        """The parameters as flat, netCDF-safe attributes."""
        return _validate.flat_attrs(self)


def check_params(params):
    """Raise a ``ValueError`` unless ``params`` is a :class:`Params`."""
    if not isinstance(params, Params):
        raise ValueError(f"params must be a committee.Params; got {type(params).__name__}")
