"""Parameters of one-pass SGD with large batches on a multi-index target."""

from dataclasses import dataclass

from .. import _grids, _validate
from . import functions

LOSSES = ("square", "correlation")


def record_steps(steps, n_points, spacing):
    """The recording times of a run (simulation or theory): ``n_points`` steps in [0, steps],
    evenly spaced (``"linear"``) or geometric from 1 (``"log"``, with 0 first), rounded to
    whole steps, duplicates dropped (:func:`tsdyn._grids.integer_grid`)."""
    return _grids.integer_grid(steps, n_points, spacing)
ALGORITHMS = ("projected", "spherical")


@dataclass(frozen=True)
class Params:
    """Target, student and one-pass SGD hyper-parameters (Arnaboldi et al. 2024, "Setting").

    Inputs z ~ N(0, I_d); labels y = h*(W* z) + sqrt(noise) xi with W* (k, d) having
    orthonormal rows; student f(z) = (1/p) sum_j sigma(<w_j, z>) with unit-norm rows
    w_j (second layer fixed to a_j = 1). Each step draws a fresh batch of
    n_b = round(n0 d^mu) samples, uses it once and discards it, with learning rate
    gamma = gamma0 d^-delta. Time is counted in SGD steps t (t n_b samples).
    """

    d: int  # input dimension
    mu: float = 0.0  # batch-size exponent: n_b = n0 d^mu
    delta: float = 0.0  # learning-rate exponent: gamma = gamma0 d^-delta
    n0: float = 1.0  # batch-size prefactor
    gamma0: float = 0.1  # learning-rate prefactor
    target: str = "he2"  # h*: a name of functions.NAMES (or "prod"/"staircase" for k >= 2)
    activation: str = "square"  # student sigma (the paper's runs use sigma(x) = x^2)
    p: int = 1  # student hidden units
    k: int = 1  # target directions (rows of W*)
    loss: str = "square"  # "square": (y - f)^2 / 2, or "correlation": 1 - y f
    algorithm: str = "projected"  # "projected": step, renormalise; "spherical": tangent step, renormalise
    noise: float = 0.0  # label-noise variance Delta
    eta: float = 0.5  # weak-recovery threshold on ||W W*^T||_F, in (0, 1)
    m0: float | None = None  # initial overlap <w_j, w*_1>; None: uniform on the sphere, sign made >= 0

    def __post_init__(self):
        _validate.integer("d", self.d, low=2, doc="input dimension")
        _validate.integer("p", self.p, low=1, doc="student hidden units")
        _validate.integer("k", self.k, low=1, doc="target directions")
        if self.k > self.d:
            raise ValueError(f"k (target directions) must be <= d={self.d}; got {self.k}")
        _validate.real("mu", self.mu, low=0.0, high=4.0, doc="batch-size exponent")
        _validate.real("delta", self.delta, low=-4.0, high=4.0, doc="learning-rate exponent")
        _validate.real("n0", self.n0, low=0.0, low_open=True, doc="batch-size prefactor")
        _validate.real("gamma0", self.gamma0, low=0.0, low_open=True,
                       doc="learning-rate prefactor; gamma = gamma0 d^-delta must be > 0")
        if self.n0 * self.d ** self.mu < 0.5:
            raise ValueError(f"n_b (batch size n0*d**mu = {self.n0 * self.d ** self.mu:.3g}) must be "
                             f">= 1; got n0={self.n0}, d={self.d}, mu={self.mu}")
        if self.n_b > 2 ** 40:
            raise ValueError(f"n_b (batch size n0*d**mu) must be <= 2**40; got {self.n_b}")
        functions.target_code(self.target, self.k)
        functions.activation_code(self.activation)
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}; got {self.loss!r}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}; got {self.algorithm!r}")
        _validate.real("noise", self.noise, low=0.0, doc="label-noise variance Delta")
        _validate.real("eta", self.eta, low=0.0, high=1.0, low_open=True, high_open=True,
                       doc="weak-recovery threshold")
        if self.m0 is not None:
            _validate.real("m0", self.m0, low=-1.0, high=1.0, low_open=True, high_open=True,
                           doc="initial overlap")

    @property
    def n_b(self):
        """Batch size n_b = round(n0 d^mu) (at least 1)."""
        return max(1, int(round(self.n0 * self.d ** self.mu)))

    @property
    def gamma(self):
        """Learning rate gamma = gamma0 d^-delta."""
        return self.gamma0 * self.d ** (-self.delta)

    @property
    def activation_code(self):
        return functions.activation_code(self.activation)

    @property
    def target_code(self):
        return functions.target_code(self.target, self.k)

    @property
    def noise_ratio(self):
        """gamma^2 d / n_b, the size of the noise term of one step relative to gamma (eq. for dQ)."""
        return self.gamma ** 2 * self.d / self.n_b

    def attrs(self):
        """The parameters as flat, netCDF-safe attributes (with n_b and gamma)."""
        return _validate.flat_attrs(self, n_b=self.n_b, gamma=self.gamma)


HERMITE_NAMES = {1: "linear", 2: "he2", 3: "he3", 4: "he4"}  # He_ell / sqrt(ell!) by information exponent
RULE_VARIANTS = {"projected": ("square", "projected"), "correlation": ("correlation", "projected")}


def fixed_temperature_params(*, d, ell, temperature0, n_b, variant="projected", eta=0.5):
    """Params of one point of a linear-scaling-rule scan (chapter 6): He_ell target and student,
    batch ``n_b``, learning rate gamma = T n_b at the fixed temperature T = gamma / n_b =
    ``temperature0`` d^(-ell/2) (the chapter's best rate, delta = ell/2 - mu, has gamma0 / n0 =
    ``temperature0``), start m0 = d^-1/2; ``variant`` "projected" (square loss) or "correlation"."""
    _validate.integer("ell", ell, low=2, doc="information exponent, 2 to 4")
    if ell > 4:
        raise ValueError(f"ell (information exponent, 2 to 4) must be <= 4; got {ell}")
    _validate.integer("d", d, low=2, doc="input dimension")
    _validate.integer("n_b", n_b, low=1, doc="batch size")
    _validate.real("temperature0", temperature0, low=0.0, low_open=True,
                   doc="temperature gamma / n_b in units of d^(-ell/2)")
    if variant not in RULE_VARIANTS:
        raise ValueError(f"variant must be one of {tuple(RULE_VARIANTS)}; got {variant!r}")
    loss, algorithm = RULE_VARIANTS[variant]
    gamma = temperature0 * d ** (-ell / 2) * n_b
    return Params(d=d, mu=0.0, delta=0.0, n0=float(n_b), gamma0=gamma, target=HERMITE_NAMES[ell],
                  activation=HERMITE_NAMES[ell], loss=loss, algorithm=algorithm, eta=eta, m0=d ** -0.5)
