"""Likelihood: the backend protocol, the numpy float64 reference backend, tree-level evaluation."""
from mbgpu.likelihood.evaluate import NodeSlots, PartitionLikelihood, total_log_likelihood, tree_operations
from mbgpu.likelihood.numpy_backend import NumpyBackend
from mbgpu.likelihood.protocol import NONE, InstanceSpec, LikelihoodBackend, make_ops

__all__ = ["NONE", "InstanceSpec", "LikelihoodBackend", "NodeSlots", "NumpyBackend",
           "PartitionLikelihood", "make_ops", "total_log_likelihood", "tree_operations"]
