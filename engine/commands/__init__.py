"""The MrBayes command language: a declarative table of commands and typed parameters."""
