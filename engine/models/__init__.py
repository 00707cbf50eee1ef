"""Substitution models: specs, rate matrices, eigensystems, MrBayes-exact discrete gamma."""
from mbgpu.models.aamatrices import ALL_MODELS as AA_MODELS, load_aamodel
from mbgpu.models.discrete_gamma import discrete_gamma
from mbgpu.models.spec import ModelSpec
from mbgpu.models.substitution import (EigenSystem, SubstitutionModel, build_model,
                                        empirical_frequencies, rate_matrix)

__all__ = ["AA_MODELS", "EigenSystem", "ModelSpec", "SubstitutionModel", "build_model",
           "discrete_gamma", "empirical_frequencies", "load_aamodel", "rate_matrix"]
