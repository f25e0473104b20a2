"""Training on the compiled CPU path: a train step (forward + backward + optimizer update in one
graph) built from an `nnvm.symbol` loss, optimizers, and a small loop."""

from nnvm.train.optimizers import SGD, Adam, Optimizer
from nnvm.train.step import TrainStep, fit, train_module

__all__ = ["SGD", "Adam", "Optimizer", "TrainStep", "fit", "train_module"]
