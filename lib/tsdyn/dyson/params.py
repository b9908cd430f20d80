"""Parameters of an ensemble of tanh teacher-student networks trained by mini-batch SGD."""

import numbers
from dataclasses import dataclass

from .. import _validate

# Layer widths n0 -> n1 -> n2 -> n3 of Park, Lucini & Aarts (2025), sec. 3.1.
PAPER_LAYERS = (3, 32, 16, 1)


@dataclass(frozen=True)
class Params:
    """Teacher, student and SGD hyper-parameters (Park, Lucini & Aarts 2025, sec. 3.1).

    Network n0 -> n1 -> n2 -> n3 without biases, tanh on both hidden layers and a
    linear output. Teacher weights W̄^(l) ~ N(0, 1/n_{l-1}) (eq. 3.1); the student
    copies W^(1) = W̄^(1) and W^(3) = W̄^(3) from its teacher and trains only
    W^(2) (shape (n2, n1)), initialised W^(2)_ij ~ N(0, sigma_w^2 / n1) (eq. 2.11).
    Inputs x ~ N(0, I_{n0}); labels are the teacher's outputs (no noise). The loss
    is the MSE (2.6), l = (y - y_hat)^2 / 2, and SGD (2.28) updates
    W <- W - eps * (mean gradient over a mini-batch of ``batch`` samples drawn
    from the ``n_train`` training samples). Temperature T = eps / batch (2.30),
    disorder 1 / sigma_w.
    """

    eps: float  # learning rate epsilon of eq. (2.28)
    batch: int = 4  # mini-batch size |B| (the paper's value)
    sigma_w: float = 1.0  # initial scale: W^(2)_ij ~ N(0, sigma_w^2 / n1), eq. (2.11)
    layers: tuple = PAPER_LAYERS  # widths (n0, n1, n2, n3); only n3 = 1 (scalar output)
    n_train: int = 4000  # training-set size |D|
    n_test: int = 100  # test-set size |D_test| on which the observables are measured
    w_max: float = 1e6  # divergence bound on the Frobenius norm |W^(2)|_F (see train_ensemble)

    def __post_init__(self):
        _validate.real("eps", self.eps, low=0.0, low_open=True, doc="learning rate")
        _validate.integer("batch", self.batch, low=1, doc="mini-batch size |B|")
        _validate.real("sigma_w", self.sigma_w, low=0.0, low_open=True,
                       doc="initial weight scale of W^(2)")
        _validate.integer("n_train", self.n_train, low=1, doc="training-set size |D|")
        if self.batch > self.n_train:
            raise ValueError(f"batch (mini-batch size |B|) must be <= n_train (training-set size "
                             f"|D| = {self.n_train}); got {self.batch}")
        _validate.integer("n_test", self.n_test, low=1, doc="test-set size")
        _validate.real("w_max", self.w_max, low=0.0, low_open=True, doc="divergence bound on |W^(2)|")
        layers = self.layers
        if (not isinstance(layers, (tuple, list)) or len(layers) != 4
                or not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 1
                           for n in layers)):
            raise ValueError(f"layers must be four positive integers (n0, n1, n2, n3); got {layers!r}")
        n0, n1, n2, n3 = layers
        if n3 != 1:
            raise ValueError(f"layers: the output width n3 must be 1 (scalar regression); got {n3}")
        if not 2 <= n2 <= n1:
            raise ValueError(f"layers: n2 must be in [2, n1 = {n1}] so that X = W W^T (n2 x n2) is "
                             f"full rank with at least one level spacing; got n2 = {n2}")
        object.__setattr__(self, "layers", tuple(int(n) for n in layers))

    @classmethod
    def from_temperature(cls, T, inv_sigma_w, batch=4, **kw):
        """Parameters at temperature T = eps / batch and disorder 1 / sigma_w."""
        # T, 1/sigma_w and batch enter eps and sigma_w before the constructor sees them: checked here
        # so that a bad value is reported under its own name (batch = 0 would otherwise surface as
        # "eps must be > 0"); every other field is checked once, in __post_init__.
        _validate.real("T", T, low=0.0, low_open=True, doc="temperature eps/|B|")
        _validate.real("inv_sigma_w", inv_sigma_w, low=0.0, low_open=True, doc="disorder 1/sigma_w")
        _validate.integer("batch", batch, low=1, doc="mini-batch size |B|")
        return cls(eps=float(T) * batch, batch=batch, sigma_w=1.0 / float(inv_sigma_w), **kw)

    @property
    def T(self):
        """Temperature T = eps / |B| (eq. 2.30)."""
        return self.eps / self.batch

    @property
    def inv_sigma_w(self):
        """Disorder axis of the phase diagram, 1 / sigma_w."""
        return 1.0 / self.sigma_w

    @property
    def n0(self):
        return self.layers[0]

    @property
    def n1(self):
        return self.layers[1]

    @property
    def n2(self):
        return self.layers[2]

    @property
    def r(self):
        """Aspect ratio r = n2 / n1 of W^(2) (eq. 4.2)."""
        return self.n2 / self.n1

    def attrs(self):
        """The parameters as flat, netCDF-safe attributes (plus T and 1/sigma_w)."""
        return _validate.flat_attrs(self, T=self.T, inv_sigma_w=self.inv_sigma_w)
